//===- LoomOps.td - Loom operations ------------------------*- tablegen -*-===//
//
// One file per op family; this file only gathers them so that a single
// LoomOps.h.inc/.cpp.inc is generated.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMOPS_TD
#define LOOM_DIALECT_LOOM_IR_LOOMOPS_TD

include "loom/Dialect/Loom/IR/LoomCoreOps.td"
include "loom/Dialect/Loom/IR/LoomMeshOps.td"
include "loom/Dialect/Loom/IR/LoomElementwiseOps.td"
include "loom/Dialect/Loom/IR/LoomStructuredOps.td"
include "loom/Dialect/Loom/IR/LoomShapeOps.td"
include "loom/Dialect/Loom/IR/LoomNNOps.td"
include "loom/Dialect/Loom/IR/LoomCollectiveOps.td"

#endif // LOOM_DIALECT_LOOM_IR_LOOMOPS_TD
