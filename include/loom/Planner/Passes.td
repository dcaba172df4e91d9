//===- Passes.td - Planner passes --------------------------*- tablegen -*-===//

#ifndef LOOM_PLANNER_PASSES
#define LOOM_PLANNER_PASSES

include "mlir/Pass/PassBase.td"

def LoomAutoShard : Pass<"loom-auto-shard", "mlir::ModuleOp"> {
  let summary = "Choose shardings with the cost model and an ILP (CBC)";
  let description = [{
    Plans a training step (or a function whose first result is the loss) for
    a cluster: every forward op, parameter and input gets one sharding from
    its candidates (axis assignments to the factors of its sharding rule),
    minimizing the predicted step time (compute, collectives, resharding in
    both directions, optimizer update) under the per-device memory limit
    (parameters, gradients and optimizer state, saved activations).
    Repeated layers are found and planned once; rematerialization of none,
    half or all repeated layers is searched too. Without a mesh in the
    module every 2-D shape of the cluster's devices is tried and the
    fastest mesh is created; with one (or with shardings already present,
    which are hard constraints) that mesh is used. The result is written as
    `loom.sharding` on arguments and forward ops; loom-partition produces
    the program. Fails with the smallest memory any plan needs, and what
    dominates it, when nothing fits.

    ```
    loom-opt step.mlir --loom-auto-shard="cluster=h100-cluster:8x8 report=text"
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Function to plan (default: the module's only function)">,
    Option<"cluster", "cluster", "std::string", /*default=*/"\"cpu-local\"",
           "Cluster preset (h100-8x, h100-cluster:NxM, cpu-local[:N]) or JSON file">,
    Option<"fixedMesh", "fixed-mesh", "bool", /*default=*/"false",
           "Plan for the module's mesh instead of choosing a shape">,
    Option<"memoryLimitGiB", "memory-limit-gib", "double", /*default=*/"0",
           "Per-device memory limit in GiB (default: 90% of the device's)">,
    Option<"timeLimit", "time-limit", "double", /*default=*/"20",
           "Seconds per ILP before the best plan found is taken">,
    Option<"remat", "remat", "std::string", /*default=*/"\"search\"",
           "Rematerialization of repeated layers: search (none, half or "
           "all, priced), none, or layers (all). The plan marks the layers "
           "(loom.remat) for loom-rematerialize">,
    Option<"optimizerStates", "optimizer-states", "int", /*default=*/"2",
           "Optimizer state tensors per parameter when the function is not a training step">,
    Option<"report", "report", "std::string", /*default=*/"\"none\"",
           "Print the plan: none, text or json">,
    Option<"reportFile", "report-file", "std::string", /*default=*/"\"-\"",
           "Where the report goes (- for stdout)">,
    Option<"meshAxes", "mesh-axes", "int", /*default=*/"0",
           "Most axes of a chosen mesh: 2 or 3 (0: 3 when the cluster has "
           "3 or more link levels, else 2)">,
    Option<"compareMegatron", "compare-megatron", "bool", /*default=*/"false",
           "Also price every DP x TP Megatron-style plan">,
    Option<"bruteForce", "brute-force", "bool", /*default=*/"false",
           "Check the ILP against exhaustive search (small graphs)">,
    Option<"preset", "preset", "std::string", /*default=*/"\"\"",
           "Price and write this preset (dp, tp, dp-tp, zero1, zero2, zero3, "
           "replicated; as loom-apply-strategy) on the module's mesh instead "
           "of searching; remat then names the layers already marked">,
    Option<"dpAxis", "dp-axis", "std::string", /*default=*/"\"dp\"",
           "With preset: the data-parallel mesh axis">,
    Option<"tpAxis", "tp-axis", "std::string", /*default=*/"\"tp\"",
           "With preset: the tensor-parallel mesh axis">,
    Option<"overlap", "overlap", "bool", /*default=*/"true",
           "Collectives are started early and waited for late "
           "(loom-overlap-collectives), as priced">,
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25",
           "Gradient all-reduces are fused into buckets of this many MiB "
           "(loom-bucket-all-reduce; 0: not bucketed), as priced">,
    Option<"pipelineStages", "pipeline-stages", "int", /*default=*/"1",
           "Pipeline search: 1 none; 0 every stage count; N exactly N stages "
           "(the plan is reported, not written into the IR); -1 every stage "
           "count above 1">,
    Option<"microBatches", "micro-batches", "int", /*default=*/"1",
           "With a pipeline search: micro-batches per step (the model's batch "
           "is one; 0: the count loom.pipeline_plan has)">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"\"",
           "With a pipeline search: gpipe, 1f1b or zb-h1 (default: each)">,
    Option<"recordPlan", "record-plan", "bool", /*default=*/"false",
           "Write loom.pipeline_plan for a plan without a pipeline too "
           "(stages = 1; loom-plan-pipeline compares it with the pipelined "
           "plans)">,
  ];
}

def LoomMarkRemat : Pass<"loom-mark-remat", "mlir::ModuleOp"> {
  let summary = "Mark forward segments for rematerialization";
  let description = [{
    Finds the repeated layers of a training step (as the planner does) and
    marks each layer's forward ops with `loom.remat = <layer>`;
    loom-rematerialize then recomputes them in the backward pass, keeping
    only each layer's input. `mode=full` also marks the forward ops before
    the layers and after them as two more segments (a step without repeated
    layers becomes one segment). Marks set here replace marks already on
    the same ops.

    Example: `loom-opt step.mlir --loom-mark-remat=mode=layers --loom-rematerialize`.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Function to mark (default: the module's only function)">,
    Option<"mode", "mode", "std::string", /*default=*/"\"layers\"",
           "layers (the repeated layers) or full (every forward op)">,
  ];
  let dependentDialects = ["mlir::loom::LoomDialect"];
}

#endif // LOOM_PLANNER_PASSES
