//===- Buffers.h - Where a buffer comes from --------------------*- C++ -*-===//
//
// Helpers the CPU code generation passes share about buffers (memrefs).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CPU_BUFFERS_H
#define LOOM_CODEGEN_CPU_BUFFERS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::loom {

/// The buffer `buffer` views: followed through view-like ops and
/// memref.extract_strided_metadata's base buffer back to the value they
/// start from (an allocation's result, a function argument, ...).
inline Value viewedBuffer(Value buffer) {
  while (Operation *def = buffer.getDefiningOp()) {
    if (auto metadata = dyn_cast<memref::ExtractStridedMetadataOp>(def))
      buffer = metadata.getSource();
    else if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      buffer = view.getViewSource();
    else
      break;
  }
  return buffer;
}

} // namespace mlir::loom

#endif // LOOM_CODEGEN_CPU_BUFFERS_H
