//===- CostTable.h - A whole step priced, per choice ------------*- C++ -*-===//
//
// What one choice per node costs for a whole training step (forward,
// backward, optimizer update): node costs (compute, own collectives, memory
// held, rematerialization), edge costs (resharding values forward and
// gradients backward, where a parameter's gradient and optimizer state live
// under ZeRO-style splits). `evaluate` sums them for one choice (reports,
// brute force, baselines); `buildCostTable` turns them into the solver's
// plain numbers. Both call the same nodeCost and edgeCost, so what the ILP
// minimizes is what the report says.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_COSTTABLE_H
#define LOOM_PLANNER_COSTTABLE_H

#include "loom/Planner/Graph.h"
#include "loom/Planner/Solver.h"

#include <set>
#include <tuple>
#include <vector>

namespace mlir::loom::planner {

struct MemoryBreakdown {
  double parameters = 0, gradients = 0, optimizer = 0, activations = 0,
         inputs = 0;
  /// New parameters and optimizer state written beside the old ones
  /// (DeviceSpec::newUpdateBuffers).
  double updates = 0;
  double total() const {
    return parameters + gradients + optimizer + activations + inputs +
           updates;
  }
};

struct Totals {
  double time = 0, compute = 0, comm = 0;
  /// `time` is the overlapped schedule's (started collectives), priced
  /// faster than compute + comm with every collective blocking.
  bool overlapped = false;
  MemoryBreakdown memory;
};

/// A node under a strategy, with `remat` of the repeated layers'
/// activations recomputed (0, 0.5, 1).
struct NodeCost {
  double compute = 0, comm = 0, memory = 0;
};
NodeCost nodeCost(const Node &node, const Strategy &s, double remat,
                  int layers, const MeshShape &mesh);

/// An edge between the strategies of its ends: for a parameter's first
/// use, the optimizer's update of the weight and the bytes of its gradient
/// and optimizer state. The resharding of values forward, of gradients of
/// values ops made backward and the reduction of a parameter's gradients
/// are priced apart (forwardReshard, backwardReshard, reduceWeightGradient),
/// once per value and layout.
struct EdgeCost {
  /// The optimizer's update of a weight (compute, priced at its first use).
  double update = 0, gradients = 0, optimizer = 0;
  /// The updated weight and optimizer state in new buffers
  /// (DeviceSpec::newUpdateBuffers), bytes.
  double updates = 0;
};
EdgeCost edgeCost(const Graph &g, const Edge &e, const Strategy &a,
                  const Strategy &b, Costs &costs);

/// Whether the edge brings a parameter's gradient back (a trainable
/// weight's use): the gradients of a weight's uses that come back in one
/// layout are summed where they are (the partitioner adds partial sums as
/// partial sums) and reduced once, so a weight read by every micro-batch
/// of a step is reduced once per step, not once per micro-batch.
bool weightGradient(const Graph &g, const Edge &e);
/// The reduction of a weight's gradient that comes back in the edge's
/// layout (gradientLayout) into how the weight is stored; a weight's
/// optimizer state may be split further (ZeRO, the axes the gradient is
/// partial over anyway): the program reduce-scatters the gradient into
/// the state's layout and all-gathers the updated weight, and this prices
/// (and logs) exactly those two steps. Top-k compression exchanges the
/// top-k instead of the sum reduction.
struct WeightReduction {
  /// All of it; of that, `gather`: ZeRO's gather of the updated weight
  /// (after the update), the rest reduces the gradient.
  double time = 0, gather = 0;
  /// Whether the reduction is one of loom-bucket-all-reduce's buckets.
  bool bucketed = false;
};
WeightReduction reduceWeightGradient(const Graph &g, const Edge &e,
                                     const Strategy &a, const Strategy &b,
                                     Costs &costs);
/// The forward resharding of the edge's value to what its user reads.
double forwardReshard(const Edge &e, const Strategy &a, const Strategy &b,
                      Costs &costs);
/// Whether the forward resharding on the edge is performed again when the
/// layer of its value's op is rematerialized: loom-rematerialize recomputes
/// a layer's ops from the partitioned program, and a resharding of a value
/// the layer made (wherever its user is) belongs to that layer; one of a
/// parameter or of the layer's input belongs to no recomputed layer.
bool recomputedReshard(const Graph &g, const Edge &e);
/// Whether the forward resharding on the edge is performed again for the
/// backward pass: a weight the backward pass reads is gathered again there
/// (loom-partition's loom.regather; ZeRO-3 frees the forward's copy).
bool regatheredReshard(const Graph &g, const Edge &e);
/// Whether the edge carries a gradient that is summed with the value's
/// other gradients before it is resharded: the value is an op's result
/// (autodiff names each of its gradients a loom.cotangent), and the
/// partitioner adds the gradients that come back in one layout (partial
/// sums included) where they are and brings each layout to the value's
/// once. A parameter's gradients are reduced alike (weightGradient).
bool summedGradient(const Graph &g, const Edge &e);
/// The layout the edge's gradient comes back in: the operand's, partial
/// over the axes the user's operand lacks.
AxisSharding gradientLayout(const Edge &e, const Strategy &b);
/// That gradient brought to the layout of the value (its producer's result).
double backwardReshard(const Edge &e, const Strategy &a, const Strategy &b,
                       Costs &costs);
/// A layout as a comparable key (split axes per dimension, partial axes).
std::vector<int> layoutKey(const AxisSharding &s);

/// The reshardings of values under one choice, each value to each layout
/// once (as the partitioned program performs them): `price` is the edge's
/// forwardReshard the first time its value goes to that layout, plus its
/// backwardReshard the first time a gradient of its value comes back in
/// that layout (summedGradient edges), else 0. With `remat` of the
/// repeated layers recomputed, the forward resharding of a value a layer's
/// op made is performed again by that share of the layers.
class ValueReshards {
public:
  explicit ValueReshards(double remat = 0) : remat(remat) {}
  double price(const Graph &g, const Edge &e, const Strategy &a,
               const Strategy &b, Costs &costs) {
    double fwd = 0, bwd = 0;
    priceParts(g, e, a, b, costs, fwd, bwd);
    return fwd + bwd;
  }
  /// The same, as the forward pass's part and the backward pass's (the
  /// gradient's, and a rematerialized layer's forward again).
  void priceParts(const Graph &g, const Edge &e, const Strategy &a,
                  const Strategy &b, Costs &costs, double &fwd, double &bwd);
  /// reduceWeightGradient the first time a weight's gradient comes back
  /// in the edge's layout (weightGradient edges), else nothing.
  WeightReduction reduction(const Graph &g, const Edge &e, const Strategy &a,
                            const Strategy &b, Costs &costs);

private:
  double remat;
  std::set<std::tuple<int, int, std::vector<int>>> forward, backward,
      reduced;
};

/// The axes the optimizer state of weight node `u` (stored as `storage`,
/// its gradient partial over `gradPartial`) is split over beyond the
/// weight's own: the preset's (Graph::stateSplit), none when the graph
/// keeps state whole, else zeroExtra. Sets `dimOut` to the dimension.
Mask stateExtra(const Graph &g, const Node &u, const AxisSharding &storage,
                Mask gradPartial, const MeshShape &mesh, int *dimOut = nullptr);

/// The state split of a parameter stored as `storage` whose gradient is
/// partial over `gradPartial`: further split over those axes where a
/// dimension allows it (ZeRO-1/2 at no extra communication). Returns the
/// extra axes and sets `dimOut` to the dimension.
Mask zeroExtra(const AxisSharding &storage, Mask gradPartial,
               RankedTensorType type, const MeshShape &mesh,
               int *dimOut = nullptr);

/// The whole step under one choice per node.
Totals evaluate(const Graph &g, ArrayRef<int> choice, double remat,
                Costs &costs);

/// The solver's numbers: one variable per distinct node, edges of repeated
/// layers priced once and weighted by their count.
struct CostTable {
  SolverRequest request;
  /// Per node: the variable of its rep.
  SmallVector<int> variableOf;
  /// Per variable: its node.
  SmallVector<int> nodeOf;

  /// A choice per node from the solver's choice per variable.
  SmallVector<int> choiceOf(ArrayRef<int> variableChoice) const;
  /// The solver's start from a choice per node.
  std::vector<int> startOf(ArrayRef<int> nodeChoice) const;
};
CostTable buildCostTable(const Graph &g, Costs &costs, double remat);

/// The fastest choice that fits `limit` by exhaustive search over the
/// distinct nodes (-1 when there are more than `maxCombinations`), and
/// how many combinations there are.
double bruteForce(const Graph &g, double remat, double limit, Costs &costs,
                  double maxCombinations, double &combinations);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_COSTTABLE_H
