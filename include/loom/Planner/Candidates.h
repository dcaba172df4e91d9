//===- Candidates.h - The ways each node may be sharded ---------*- C++ -*-===//
//
// For an op: every assignment of mesh axes to the factors of its sharding
// rule that a tensor can express (a minor factor of a merged dimension is
// split only under a fully split major one), with the partial result of
// split reduction factors all-reduced or reduce-scattered into a dimension.
// For a parameter or input: every split of its dimensions, or the user's
// sharding. Ops the rule says need whole tensors get the unsplit strategy
// only. Each strategy is priced as it is built (compute by roofline, its
// own collectives through the resharding library).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_CANDIDATES_H
#define LOOM_PLANNER_CANDIDATES_H

#include "loom/Planner/Graph.h"

#include "loom/Dialect/Loom/IR/LoomAttrs.h"
#include "loom/Dialect/Loom/IR/ShardingRule.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::loom::planner {

/// The strategy of op node `node` with `factors` (axes per rule factor);
/// with partial results scattered into result dimension `rsDim` (-1:
/// all-reduced). Prices it with `costs` (and logs its collectives when the
/// costs log).
Strategy opStrategy(const Node &node, const ShardingRule &rule,
                    ArrayRef<Mask> factors, int rsDim, Costs &costs);

/// The strategy of a parameter or input node stored as `s`.
Strategy tensorStrategy(const Node &node, const AxisSharding &s,
                        const MeshShape &mesh);

/// Fills the candidates of every distinct node of `g` (nodes sharing a rep
/// get copies). Fixed argument shardings and sharding constraints narrow
/// them (their axes named as `costs.mesh`'s); a constraint nothing meets
/// fails with `error`.
LogicalResult enumerateCandidates(Graph &g, Costs &costs, std::string &error);

/// Clears the axes of every factor that is a minor part of a dimension whose
/// more major factors are not split completely: (5, 4{dp}) reshaped to (20)
/// is not a block of 20 on each device (FactorSharding::legalize is the
/// partitioner's form of the rule). Returns whether it cleared any.
bool clearInexpressibleSplits(const ShardingRule &rule,
                              MutableArrayRef<Mask> factors,
                              const MeshShape &mesh);

/// `s` with axes numbered by `axisIndex` (axes it lacks are dropped).
AxisSharding toAxisSharding(ShardingAttr s,
                            const llvm::StringMap<int> &axisIndex);

/// Axes `partial` appended to dimension `d` of `s` (ascending): a
/// reduce-scatter's result.
void appendAxes(AxisSharding &s, int64_t d, Mask partial);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_CANDIDATES_H
