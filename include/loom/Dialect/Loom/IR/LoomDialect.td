//===- LoomDialect.td - Loom dialect definition ------------*- tablegen -*-===//
//
// The `loom` dialect: a tensor-level training-graph IR with device meshes and
// per-value shardings.
//
// ODS is split as in IREE's Stream dialect, in this order:
//   LoomDialect.td    the dialect itself
//   LoomBase.td       type constraints and op base classes
//   LoomAttrs.td      enums, mesh axes, shardings, external data
//   LoomInterfaces.td ShardingRuleOpInterface
//   LoomOps.td        ops, including one file per op family
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMDIALECT_TD
#define LOOM_DIALECT_LOOM_IR_LOOMDIALECT_TD

include "mlir/IR/OpBase.td"

def Loom_Dialect : Dialect {
  let name = "loom";
  let cppNamespace = "::mlir::loom";
  let summary = "A tensor-level training-graph IR with device meshes and shardings";
  let description =
        "The `loom` dialect expresses deep-learning training programs (forward,\n"
      # "loss, backward and optimizer update) on builtin ranked tensors with static\n"
      # "shapes, together with the device mesh they run on and the sharding of\n"
      # "every value over that mesh.\n"
      # "\n"
      # "* Ops work on `tensor<...>` values of element type `f16`, `bf16`, `f32`,\n"
      # "  `f64`, `i1`, signless `i8`...`i64` (signed arithmetic) or unsigned\n"
      # "  `ui8`...`ui64`; every op infers or verifies its result type with\n"
      # "  ONNX/numpy rules.\n"
      # "* `loom.mesh` declares a named device mesh with named axes.\n"
      # "* `#loom.sharding<@mesh, [{\"dp\"}, {}]>` says how a tensor value is split\n"
      # "  over the mesh axes, per dimension, and over which axes it holds partial\n"
      # "  results. It is attached as `loom.sharding` to function arguments and\n"
      # "  results, to ops (one per result), and through\n"
      # "  `loom.sharding_constraint`.\n"
      # "* Every op implements `ShardingRuleOpInterface`: an einsum-like factor\n"
      # "  rule that says which dimensions of operands and results correspond,\n"
      # "  which are reductions (and so give partial results when split), and\n"
      # "  which cannot be split.\n";
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    /// Discardable attribute naming the sharding of a value: a
    /// `#loom.sharding` on function arguments, function results and
    /// single-result ops, an array of them (one per result) on other ops.
    static constexpr ::llvm::StringLiteral kShardingAttrName = "loom.sharding";
    /// Function-argument attribute naming the `loom.parameter` an argument
    /// is bound to; on a function result, the parameter whose next value the
    /// result is (a training step's updated weights and optimizer state).
    static constexpr ::llvm::StringLiteral kParamAttrName = "loom.param";
    /// Function-argument attribute on integer data (labels, token ids): the
    /// values lie in `[0, bound)`. Used to draw synthetic data.
    static constexpr ::llvm::StringLiteral kIndexBoundAttrName = "loom.index_bound";
    /// Function attribute of a training step built with gradient
    /// accumulation: data arguments carry a leading dimension of this many
    /// micro-batches.
    static constexpr ::llvm::StringLiteral kMicroBatchesAttrName = "loom.micro_batches";
    /// Module attribute (an integer >= 2) set by loom-split-micro-batches:
    /// the loss function is one micro-batch of this many that split the
    /// model's batch, so a step's data is one entry of the model's batch
    /// (micro-batch m its rows [m B/M, (m+1) B/M)), not one entry per
    /// micro-batch.
    static constexpr ::llvm::StringLiteral kBatchSplitAttrName = "loom.batch_split";
    /// Module attribute beside loom.batch_split: the names of the data
    /// inputs the micro-batches do not split (no batch dimension, e.g. an
    /// attention mask given as data): every micro-batch reads their whole
    /// entry.
    static constexpr ::llvm::StringLiteral kBatchWholeInputsAttrName = "loom.batch_whole_inputs";
    /// On a dropout of a loss function that loom-split-micro-batches made
    /// one micro-batch of its batch (an integer >= 1: the elements of its
    /// input): the input is micro-batch m's rows of the whole batch's
    /// tensor, so the training step draws its mask from element
    /// m * this value of the whole tensor's mask on.
    static constexpr ::llvm::StringLiteral kMicroBatchRowsAttrName = "loom.micro_batch_rows";
    /// Function attribute naming the mesh of a per-device program
    /// (loom-partition): its types are local, its argument and result
    /// shardings say how the global values are split.
    static constexpr ::llvm::StringLiteral kPartitionedAttrName = "loom.partitioned";
    /// Collective attribute (unit): the collective starts where it stands
    /// and completes at the loom.wait that reads its results (set by
    /// loom-overlap-collectives).
    static constexpr ::llvm::StringLiteral kAsyncAttrName = "loom.async";
    /// loom.conv attribute (unit): the convolution is a weight gradient
    /// (set by its forward convolution's gradient rule); the CPU pipeline
    /// keeps it an im2col GEMM rather than oneDNN's forward convolution,
    /// which measured up to 2x slower on such shapes (a batch of input
    /// channels, the output gradient as the kernel).
    static constexpr ::llvm::StringLiteral kWeightGradientAttrName = "loom.weight_gradient";
    /// Collective attribute (unit): a weight gathered again for the backward
    /// pass (ZeRO-3 / FSDP's full sharding: the forward pass's gathered copy
    /// dies after its last forward reader). Set by loom-partition; it also
    /// keeps CSE from merging the gather with the forward pass's.
    static constexpr ::llvm::StringLiteral kRegatherAttrName = "loom.regather";
    /// Module attribute (bool) the planner sets: whether
    /// loom-overlap-collectives starts collectives early (absent: it does).
    static constexpr ::llvm::StringLiteral kOverlapAttrName = "loom.overlap";
    /// Function argument/result attribute: the value's name in the source
    /// model (ONNX graph input/output names), used to bind data by name.
    static constexpr ::llvm::StringLiteral kNameAttrName = "loom.name";
    /// Op attribute (a non-negative integer): the op belongs to this
    /// rematerialization segment of the forward pass. loom-rematerialize
    /// recomputes what the backward pass reads of a segment from the
    /// segment's inputs, just before the backward pass first needs it.
    static constexpr ::llvm::StringLiteral kRematAttrName = "loom.remat";
    /// Op attribute (unit): the op recomputes a forward op of segment
    /// `loom.remat` for the backward pass (set by loom-rematerialize).
    static constexpr ::llvm::StringLiteral kRecomputedAttrName = "loom.recomputed";
    /// Op attribute set by the planner: an array with, per factor of the
    /// op's sharding rule, the array of mesh axes (names, major first) the
    /// factor is split over. loom-partition splits the op exactly so and
    /// brings its results to their `loom.sharding` right after it, so that
    /// the collectives it emits are the ones the plan priced.
    static constexpr ::llvm::StringLiteral kFactorsAttrName = "loom.factors";
    /// Op attributes set by autodiff (non-negative integers): `loom.op_id`
    /// numbers a forward op that has a gradient rule; `loom.vjp_of` marks
    /// the ops its rule built with that number. loom-partition runs those
    /// ops on the operands as the forward op had them, as the planner
    /// prices a backward pass.
    static constexpr ::llvm::StringLiteral kOpIdAttrName = "loom.op_id";
    static constexpr ::llvm::StringLiteral kVjpOfAttrName = "loom.vjp_of";
    /// Op attribute (a non-negative integer): the pipeline stage (virtual
    /// stage with interleaving) the op runs on. Set on forward ops by
    /// loom-assign-stages or by the user; autodiff gives a gradient rule's
    /// ops its op's stage, the training step an update its weight's stage.
    static constexpr ::llvm::StringLiteral kStageAttrName = "loom.stage";
    /// On a training step: its weight gradients are reduced in this 16-bit
    /// type ("fp16" or "bf16"), or each device sends its largest entries
    /// ("topk:RATIO", error feedback); on a cast: the narrowing cast of a
    /// weight gradient that loom-compress-gradients moves before its
    /// reduction; on an optimization barrier: a weight gradient whose
    /// reduction it replaces with the top-k exchange.
    static constexpr ::llvm::StringLiteral kGradCompressionAttrName =
        "loom.grad_compression";
    /// The fraction of "topk:RATIO" (in (0, 1]), or none.
    static std::optional<double> topKRatio(::llvm::StringRef compression);
    /// Op attribute of a pipelined training step: "forward", "backward" or
    /// "update", the part of the step the op belongs to.
    static constexpr ::llvm::StringLiteral kPhaseAttrName = "loom.phase";
    /// Module attribute of a pipelined program (loom-split-stages): a
    /// dictionary with the stage count, virtual stages, micro-batches, the
    /// schedule's name and its per-rank action lists.
    static constexpr ::llvm::StringLiteral kPipelineAttrName = "loom.pipeline";
    /// Module attribute set by loom-plan-pipeline: the planner's pipeline
    /// decision for a model it split into stages itself, as a dictionary
    /// {mesh = "pp=..,..", stages = S, schedule = "1f1b", micro_batches = M,
    /// step_s = predicted seconds}. The stages are the loom.stage of the
    /// forward ops; loom-schedule-pipeline and loom-auto-shard take the
    /// schedule from it.
    static constexpr ::llvm::StringLiteral kPipelinePlanAttrName = "loom.pipeline_plan";
    /// Function attribute of a stage program: {stage = S, kind = K} with K
    /// one of forward, backward_input, backward_weight, update.
    static constexpr ::llvm::StringLiteral kProgramAttrName = "loom.program";
    /// Argument/result attribute of a stage program: what the value is to
    /// the pipeline's runtime. "recv:N" / "send:N": forward boundary value N
    /// from the previous / to the next stage; "recv_grad:N" / "send_grad:N":
    /// its gradient, from the next / to the previous stage; "stash:N": kept
    /// per micro-batch from one program of the stage to a later one;
    /// "grad": a weight's gradient (loom.param names it), summed over
    /// micro-batches before the update.
    static constexpr ::llvm::StringLiteral kPipeAttrName = "loom.pipe";

  private:
    void registerAttributes();
  public:
  }];
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMDIALECT_TD
