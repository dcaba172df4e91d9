//===- Passes.td - Sharding passes -----------------------------*- tablegen -*-===//
//
// From shardings on a few values to the per-device (SPMD) program: rules,
// presets, propagation, partitioning with collectives, bucketing.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SHARDING_PASSES_TD
#define LOOM_SHARDING_PASSES_TD

include "mlir/Pass/PassBase.td"

def LoomPrintShardingRules : Pass<"loom-print-sharding-rules"> {
  let summary = "Report every op's sharding factor rule as a remark";
  let description = [{
    For every op implementing `ShardingRuleOpInterface` that has operands or
    results, checks the rule
    against the op's types and emits it as a remark at the op, e.g.

    ```
    remark: sharding rule: ([i, j], [j, k]) -> ([i, k]) {i=8, j=16, k=32} reduction={j:sum}
    ```

    Fails if a rule is inconsistent with its op. Useful to see how an
    imported model can be split before planning it.
  }];
}

def LoomPropagateSharding : Pass<"loom-propagate-sharding", "mlir::ModuleOp"> {
  let summary = "Complete user shardings to every value through the ops' rules";
  let description = [{
    Starts from the shardings in the IR — function arguments and results
    (`loom.sharding`), op annotations, `loom.sharding_constraint` — and
    propagates them through every op's `ShardingRuleOpInterface` rule,
    forward and backward until nothing changes. User shardings win over
    propagated ones; an op's split (parallel) factors are decided before its
    reduction factors, so a contraction keeps its batch split and gathers a
    split weight (ZeRO-3) rather than the reverse; a contraction over split
    factors makes its result `partial`. Arguments without a sharding are
    replicated, results that update a parameter (`loom.param`) take that
    parameter's sharding, and values nothing decides are replicated.
    Every op gets its results' shardings as `loom.sharding`; where operands
    disagree, the op gets a remark naming both shardings.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Function to annotate (default: the module's only function)">,
  ];
}

def LoomCreateMesh : Pass<"loom-create-mesh", "mlir::ModuleOp"> {
  let summary = "Declare the device mesh a program is planned for";
  let description = [{
    Adds `loom.mesh @<name> [...]` from a specification `NAME=SIZE,...`
    (axes major to minor; devices numbered row-major), e.g.
    `--loom-create-mesh="mesh=dp=2,tp=2"`. A module that declares a mesh
    already is an error: its shardings name that mesh.
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "Axes as NAME=SIZE[,NAME=SIZE...]">,
    Option<"name", "name", "std::string", /*default=*/"\"mesh\"",
           "Symbol of the new mesh">,
  ];
  let dependentDialects = ["mlir::loom::LoomDialect"];
}

def LoomApplyShardFile : Pass<"loom-apply-shard-file", "mlir::ModuleOp"> {
  let summary = "Shard a training step's arguments as a file says";
  let description = [{
    Reads lines `NAME DIMS`, DIMS as in `#loom.sharding` (`[{"dp"}, {}` and a
    closing bracket), `#` starting a comment, and sets the
    sharding of the argument bound to parameter NAME, or of the input named
    NAME, over the module's mesh; optimizer state follows its weight
    (`state_of`) unless the file names it. Unknown names, sharding that
    does not parse or does not fit the tensor are errors naming the line.
    loom-propagate-sharding / loom-partition complete the rest.
  }];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "The sharding file">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Training step (default: the module's only function)">,
  ];
}

def LoomApplyStrategy : Pass<"loom-apply-strategy", "mlir::ModuleOp"> {
  let summary = "Annotate a training step with a parallelism preset";
  let description = [{
    Sets the sharding of every argument of a training step (built by
    loom-build-train-step) for a preset: `dp` (batch split over the
    data-parallel axis), `tp` (Megatron tensor parallelism: weight pairs
    found by following a column split through the graph to the weight whose
    input it reaches, which is split by rows), `dp-tp`, `zero1`/`zero2`
    (optimizer state split over dp as well) and `zero3` (weights too).
    Optimizer state follows its weight. loom-partition then produces the
    program.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Training step (default: the module's only function)">,
    Option<"strategy", "strategy", "std::string", /*default=*/"\"dp\"",
           "dp, tp, dp-tp, zero1, zero2, zero3 or replicated">,
    Option<"dpAxis", "dp-axis", "std::string", /*default=*/"\"dp\"",
           "Mesh axis of data parallelism">,
    Option<"tpAxis", "tp-axis", "std::string", /*default=*/"\"tp\"",
           "Mesh axis of tensor parallelism">,
  ];
}

def LoomSplitMicroBatches : Pass<"loom-split-micro-batches", "mlir::ModuleOp"> {
  let summary = "Make the loss function one micro-batch of its batch";
  let description = [{
    The model's batch is the global batch; `count` micro-batches split it.
    The loss function becomes the template of one micro-batch: its data
    inputs (and everything computed from them) get a batch of B / count,
    partitioned as loom-partition splits a batch over a data-parallel axis
    of `count` devices — the same local shapes, the same rescaled means —
    except that the micro-batches are consecutive, not concurrent: the sum
    over micro-batches that data parallelism gets from an all-reduce of the
    loss becomes the step's accumulation. The loss is returned as `count`
    times this micro-batch's share of it, so that the step's average over
    micro-batches (loom-build-train-step, the pipeline runtime) is the loss
    of the whole batch and the gradients are its gradients: equal to the
    step on the whole batch, whether the loss is a mean or a sum.

    The batch is the most common leading dimension of the data inputs (as
    the dp strategy finds it); inputs without it stay whole. Errors: a
    count that does not divide the batch (naming both); an op that needs
    values of the whole batch (a statistic over the batch, such as
    BatchNorm's in training, or a loss that is not linear in the per-sample
    terms) — micro-batches cannot compute it one at a time; a dropout whose
    input is not split along its first dimension; sharding annotations
    inside the function (arguments' are kept). A dropout on the batch's
    rows runs on the micro-batch's (`loom.micro_batch_rows`: the step
    offsets its mask to those rows of the whole batch's). The module gets
    `loom.batch_split = count`.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The loss function (default: the module's only function)">,
    Option<"count", "count", "int64_t", /*default=*/"1",
           "Micro-batches the batch is split into (0: the count "
           "loom.pipeline_plan has, loom-plan-pipeline's choice)">,
  ];
  let dependentDialects = ["mlir::loom::LoomDialect"];
}

def LoomPartition : Pass<"loom-partition", "mlir::ModuleOp"> {
  let summary = "Rewrite a sharded program into the per-device (SPMD) program";
  let description = [{
    Propagates shardings (as loom-propagate-sharding) and rewrites the
    function into the program every device runs: local shapes, and the
    collectives between shardings — `reduce_scatter` where a partial value
    becomes split (ZeRO gradients), `all_reduce` for the other partial axes,
    `all_to_all` where a split moves between dimensions, `all_gather` where
    axes go away, `all_slice` (no communication) where they appear. Ops
    whose semantics depend on global positions (dropout, max-pool indices,
    weighted or ignore-index class losses with split samples) see whole
    tensors. Means over split dimensions are rescaled so that the partial
    sums add up to the global mean. Dimensions that do not divide over
    their axes are an error naming the value. The function gets
    `loom.partitioned = @mesh`; its arguments and results keep their
    shardings (of the global values).
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Function to partition (default: the module's only function)">,
  ];
  let dependentDialects = ["mlir::loom::LoomDialect"];
}

def LoomCompressGradients : Pass<"loom-compress-gradients", "mlir::ModuleOp"> {
  let summary = "Reduce compressed weight gradients in 16 bits";
  let description = [{
    Gradient compression as Horovod's `Compression.fp16`: compress before
    the all-reduce, decompress after. `loom-build-train-step
    grad-compression=fp16|bf16` casts every weight gradient to the 16-bit
    type and back, marking the narrowing cast `loom.grad_compression`; the
    partitioner reduces the gradient where it is made, before that cast.
    This pass moves each marked cast before the sum `all_reduce` or
    `reduce_scatter` that reduces the gradient (through relayouts:
    transpose, reshape), so that the collective sends 16-bit values, and
    retypes what lies between. What the planner priced (the step's
    `loom.grad_compression`: weight gradients reduced in 2 bytes per
    element) is then what the program sends. A marked cast with no
    reduction above it (one device, or a gradient that is not partial) is
    left as it is: the values are still rounded, as Horovod rounds them.

    With `loom.grad_compression = "topk:RATIO"` on the step, each weight
    gradient passes through an optimization barrier so marked (and naming
    the weight, `loom.param`); the sum reduction in front of it becomes an
    exchange of each device's `ceil(RATIO * n)` largest entries (two
    all-gathers: positions and values) after adding the device's residual,
    which the step takes and returns as the parameter
    `<weight>.error_feedback` (every device's block stacked along dimension
    0). A reduce-scatter keeps its block of the exchanged sum (all_slice).
    Barriers with no reduction in front are removed.
  }];
  let dependentDialects = ["mlir::loom::LoomDialect",
                           "mlir::func::FuncDialect"];
}

def LoomBucketAllReduce : Pass<"loom-bucket-all-reduce", "mlir::ModuleOp"> {
  let summary = "Fuse all-reduces (gradients) into buckets";
  let description = [{
    In a partitioned program, moves every `loom.all_reduce` up to just after
    its operands are computed and fuses runs of compatible ones (same mesh,
    axes and reduction) into one variadic all_reduce of at most
    `bucket-bytes` bytes (PyTorch DDP's default is 25 MiB), placed at the
    last of them when no result is used earlier. Fewer, larger collectives
    pay the latency once per bucket instead of once per gradient.

    In a function marked `loom.partitioned`, a sum all_reduce of a value
    scaled by a rank-0 tensor (`mul`, `div`, or `neg`, used only there) is
    first moved before the scaling: there an unreduced scalar holds the same
    value on every device, so the two orders agree, and the optimizer's
    scaling of each gradient no longer separates the gradients.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "uint64_t", /*default=*/"25 << 20",
           "Largest bucket in bytes (a larger tensor gets its own)">,
    Option<"firstBucketBytes", "first-bucket-bytes", "uint64_t",
           /*default=*/"0",
           "The first bucket of each kind closes once it holds this many "
           "bytes (PyTorch DDP's 1 MiB: the backward pass's last layers are "
           "reduced while it goes on); 0: like the others">,
  ];
}

def LoomOverlapCollectives : Pass<"loom-overlap-collectives", "mlir::ModuleOp"> {
  let summary = "Start reductions and gathers early and wait where needed";
  let description = [{
    In a partitioned program, each `loom.all_reduce` and
    `loom.reduce_scatter` over a group of more than one device moves up to
    just after its operands are computed (a `loom.all_gather` stays: a
    ZeRO-3 weight gathered early would be whole for longer than planned),
    and each of the three becomes a started collective (`loom.async`)
    completed by a `loom.wait` placed just before the first op that reads
    its results or the next such collective, whichever comes first (one in
    flight), when compute lies between the start and the wait. The
    runtime runs started collectives on the rank's communication lane, in
    program order, while the program computes: a gradient bucket is reduced
    while the backward pass goes on, as in PyTorch DDP; a ZeRO weight's
    gather overlaps the other weights' updates. A collective whose result
    is read right away stays blocking. The numbers are unchanged: the same
    collectives on the same buffers, only their completion is deferred.
    A module whose planner priced the blocking schedule faster
    (`loom.overlap = false`, set by loom-auto-shard) is left as it is.
  }];
}

#endif // LOOM_SHARDING_PASSES_TD
