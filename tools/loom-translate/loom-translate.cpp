//===- loom-translate.cpp - Loom translation driver -----------------------===//
//
//   loom-translate --import-onnx model.onnx [--input-shape x=1x3x224x224]
//
//===----------------------------------------------------------------------===//

#include "loom/Target/ONNX/ImportONNX.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::loom::registerImportOnnxTranslation();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "Loom translation driver\n"));
}
