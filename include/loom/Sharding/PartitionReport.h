//===- PartitionReport.h - What a partitioned program does -----*- C++ -*-===//

#ifndef LOOM_SHARDING_PARTITIONREPORT_H
#define LOOM_SHARDING_PARTITIONREPORT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::loom {

/// Writes the plan of a partitioned function (loom.partitioned): the mesh,
/// every argument's global and per-device shape and sharding, and the
/// collectives of one call grouped by kind and axes, with their counts and
/// the bytes each device sends (ring algorithms: all_reduce 2(n-1)/n S,
/// all_gather (n-1)/n S_out, reduce_scatter and all_to_all (n-1)/n S_in).
void printPartitionReport(func::FuncOp fn, llvm::raw_ostream &os);

} // namespace mlir::loom

#endif // LOOM_SHARDING_PARTITIONREPORT_H
