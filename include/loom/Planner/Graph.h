//===- Graph.h - The planner's view of a training step ----------*- C++ -*-===//
//
// The forward ops of a step (what the loss depends on), its parameters and
// its inputs, as nodes joined by edges from producer results to consumer
// operands. Each distinct node gets candidate strategies (Candidates.h);
// the cost table (CostTable.h) prices them; the solver (Solver.h) picks one
// per distinct node.
//
// Repeated layers are found structurally (coarsen): ops of layer k > 0 get
// `rep` = the matching op of layer 0 and share its choice, so a 96-layer
// model costs one layer's ILP.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_GRAPH_H
#define LOOM_PLANNER_GRAPH_H

#include "loom/Planner/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace mlir::loom::planner {

/// One way to run a node. For ops: mesh axes per factor of the op's
/// sharding rule (ascending axes), what that makes of its operands and
/// results, and its cost; for parameters and inputs: how the tensor is
/// stored (`results[0]`).
struct Strategy {
  SmallVector<Mask, 4> factors;
  SmallVector<AxisSharding, 2> operands;
  /// As resolved (partial results reduced or scattered).
  SmallVector<AxisSharding, 1> results;
  /// Per operand: the axes its gradient is partial over (factors it lacks).
  SmallVector<Mask, 2> gradPartial;
  /// Forward+backward compute, forward compute alone, own collectives
  /// (resolving partial results, both directions) and those of the forward
  /// direction alone, memory held (saved activations, or the tensor itself).
  double compute = 0, fwd = 0, comm = 0, fwdComm = 0, memory = 0;
  /// The result dimension a partial result is scattered into (-1: it is
  /// all-reduced), and the axes it is partial over before that.
  int rsDim = -1;
  Mask partial = 0;

  /// The same from outside (operands, results, gradients).
  bool sameOutside(const Strategy &o) const {
    return operands == o.operands && results == o.results &&
           gradPartial == o.gradPartial;
  }
};

enum class NodeKind { Op, Param, Data };

struct Node {
  NodeKind kind = NodeKind::Op;
  Operation *op = nullptr;
  /// Parameters and inputs: the function argument and its type.
  int argIndex = -1;
  RankedTensorType type;
  bool trainable = false;
  /// A parameter without a gradient (a buffer: a mask, running stats): a
  /// Data node held all step rather than per micro-batch.
  bool buffer = false;
  std::vector<Strategy> strategies;
  /// Per operand: whether a gradient flows to it.
  SmallVector<bool, 2> gradOperand;
  /// Per result: whether the backward pass reads it (a consumer's gradient
  /// rule saves it, DifferentiableOpInterface::getSavedForBackward).
  SmallVector<bool, 1> saved;
  /// A weight the backward pass reads (a gradient rule's op, loom.vjp_of):
  /// gathered for its forward use, it is gathered again there (ZeRO-3).
  bool readBackward = false;
  /// The node whose choice this one shares (itself unless coarsened), its
  /// layer inside the repeated run (-1 outside), and whether the next layer
  /// reads it (its output is the layer's input kept under remat).
  int rep = -1;
  int layer = -1;
  bool crossLayerProducer = false;
  /// An op computed from constants alone (a scale's cast to 16 bits): not
  /// part of a layer (each pipeline stage computes its own copy).
  bool constant = false;
  /// The micro-batch whose copy of the forward pass the op belongs to (a
  /// step of loom.micro_batches; 0 otherwise). Copies share copy 0's
  /// choices and hold their activations one after the other.
  int microBatch = 0;
  /// The node that computes the same value: copy 0's op, where a copy's op
  /// reads only what copy 0's reads outside the copies (a weight's cast to
  /// 16 bits), which CSE keeps once; itself otherwise.
  int same = -1;
  std::string name;
};

/// Result `res` of node `u` feeds operand `operand` of node `v`.
struct Edge {
  int u, res, v, operand;
  RankedTensorType type;
  /// A gradient flows back along it.
  bool grad;
  /// The first use of `u` (where a parameter's gradient and optimizer state
  /// are counted).
  bool firstUse;

  double bytes() const;
  double elementBytes() const;
  bool half() const;
};

struct Graph {
  func::FuncOp fn;
  SmallVector<Node> nodes;
  SmallVector<Edge> edges;
  /// Optimizer state tensors per trainable parameter.
  int nStates = 2;
  /// Repeated layers (0: none) and ops per layer, in one micro-batch's
  /// copy of the forward pass.
  int layers = 0, period = 0;
  /// A step of loom.micro_batches run one after the other: the copies of
  /// the forward pass coarsen found (1: none).
  int microBatches = 1;
  /// Per argument: the weight argument it is optimizer state of, or -1.
  SmallVector<int> stateOwner;
  /// Whether a weight's gradients and optimizer state may be split over the
  /// axes its gradient is partial over (ZeRO-1/2: reduce-scatter, update a
  /// shard, all-gather). The planner always may; the dp, tp and dp-tp
  /// presets keep them whole (all-reduce).
  bool shardState = true;
  /// Where a preset fixes the split instead (zero1/2): per weight argument,
  /// the axes its optimizer state is split over beyond the weight's own,
  /// and the dimension.
  DenseMap<int, std::pair<Mask, int>> stateSplit;
  /// 16-bit trainable weights have an fp32 master copy and fp32 optimizer
  /// state, counted as optimizer memory. Off: Loom's steps hold what they
  /// declare (--precision makes the master weights f32 parameters and the
  /// 16-bit copies casts, which the planner prices as such); a 16-bit model
  /// trained as it is keeps 16-bit weights, gradients and state.
  bool masterWeights = false;
  /// Gradient compression (loom.grad_compression on the step): the bytes
  /// per element a trainable weight's gradient is reduced in (0: its own).
  double gradElementBytes = 0;
  /// Top-k compression ("topk:RATIO"): the fraction of each device's
  /// gradient entries it sends (0: none).
  double topKRatio = 0;
  /// Gradient all-reduces are fused into buckets of this many bytes
  /// (loom-bucket-all-reduce; 0: not bucketed), and the trainable weights'
  /// bytes in all: a gradient pays its share of a bucket's fixed costs.
  double bucketBytes = 25.0 * 1024 * 1024;
  /// loom-overlap-collectives runs on the partitioned program.
  bool overlap = true;
  /// loom-bucket-all-reduce's first bucket closes at this many bytes (0:
  /// like the others): kFirstBucketBytes when overlapped.
  double firstBucketBytes = 0;
  double gradientBytes = 0;
};

/// Forward ops, parameters and inputs of `fn`. `defaultStates`: optimizer
/// state tensors per parameter when `fn` is not a training step.
Graph buildGraph(func::FuncOp fn, int defaultStates);

/// Finds the longest run of ops that repeats with one period and reads
/// like layers (each layer its own ops, the previous layer's, or shared
/// values), and makes its layers share variables. A step of
/// loom.micro_batches holds a copy of the forward pass per micro-batch:
/// copies that read alike (their own copy's ops where copy 0 reads its
/// own, the same weights and inputs elsewhere) share copy 0's variables,
/// and the layers are found in copy 0.
void coarsen(Graph &g);

double bytesOf(Type type);
bool isHalf(Type type);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_GRAPH_H
