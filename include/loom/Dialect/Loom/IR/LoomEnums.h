//===- LoomEnums.h - Loom enums ---------------------------------*- C++ -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMENUMS_H
#define LOOM_DIALECT_LOOM_IR_LOOMENUMS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Support/LLVM.h"

#include "loom/Dialect/Loom/IR/LoomEnums.h.inc"

#endif // LOOM_DIALECT_LOOM_IR_LOOMENUMS_H
