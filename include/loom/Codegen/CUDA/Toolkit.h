//===- Toolkit.h - The CUDA toolkit the tools compile with ------*- C++ -*-===//
//
// For tools only (library code reads no environment variables): which CUDA
// toolkit --loom-cuda-pipeline's gpu-module-to-binary uses.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CUDA_TOOLKIT_H
#define LOOM_CODEGEN_CUDA_TOOLKIT_H

#include "loom/Codegen/CUDA/Passes.h"

#include <cstdlib>
#include <string>

namespace mlir::loom {

/// $CUDA_ROOT, $CUDA_HOME or $CUDA_PATH, else the toolkit Loom was
/// configured with; exported as $CUDA_ROOT, where gpu-module-to-binary
/// looks for ptxas and libdevice.
inline std::string useCudaToolkit() {
  std::string toolkit = configuredCudaToolkit();
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *path = std::getenv(var); path && *path) {
      toolkit = path;
      break;
    }
  setenv("CUDA_ROOT", toolkit.c_str(), /*overwrite=*/1);
  return toolkit;
}

} // namespace mlir::loom

#endif // LOOM_CODEGEN_CUDA_TOOLKIT_H
