//===- LoomAttrs.h - Loom attributes ----------------------------*- C++ -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMATTRS_H
#define LOOM_DIALECT_LOOM_IR_LOOMATTRS_H

#include "loom/Dialect/Loom/IR/LoomEnums.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#define GET_ATTRDEF_CLASSES
#include "loom/Dialect/Loom/IR/LoomAttrs.h.inc"

#endif // LOOM_DIALECT_LOOM_IR_LOOMATTRS_H
