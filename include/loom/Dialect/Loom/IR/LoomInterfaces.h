//===- LoomInterfaces.h - Loom op interfaces --------------------*- C++ -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMINTERFACES_H
#define LOOM_DIALECT_LOOM_IR_LOOMINTERFACES_H

#include "loom/Dialect/Loom/IR/Collectives.h"
#include "loom/Dialect/Loom/IR/LoomTraits.h"
#include "loom/Dialect/Loom/IR/ShardingRule.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "loom/Dialect/Loom/IR/LoomInterfaces.h.inc"

#endif // LOOM_DIALECT_LOOM_IR_LOOMINTERFACES_H
