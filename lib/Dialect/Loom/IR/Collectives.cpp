//===- Collectives.cpp - Kinds of collective and what they send -----------===//

#include "loom/Dialect/Loom/IR/Collectives.h"

using namespace mlir::loom;

llvm::StringRef mlir::loom::collectiveName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::AllSlice:
    return "all_slice";
  case CollectiveKind::SendRecv:
    return "send_recv";
  }
  return "";
}

double mlir::loom::collectiveBytesSent(CollectiveKind kind, double bytes,
                                       int64_t n) {
  if (n <= 1 || bytes <= 0)
    return 0;
  double ring = double(n - 1) / n;
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2 * ring * bytes;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return ring * bytes;
  case CollectiveKind::SendRecv:
    return bytes;
  case CollectiveKind::AllSlice:
    return 0;
  }
  return 0;
}

double mlir::loom::collectiveSteps(CollectiveKind kind, int64_t n) {
  if (n <= 1)
    return 0;
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2.0 * (n - 1);
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return double(n - 1);
  case CollectiveKind::SendRecv:
    return 1;
  case CollectiveKind::AllSlice:
    return 0;
  }
  return 0;
}
