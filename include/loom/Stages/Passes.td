//===- Passes.td - Pipeline-stage passes ---------------------*- tablegen -*-===//
//
// Pipeline parallelism (MPMD): which op runs on which stage, the training
// step split into per-stage programs, and the schedule that orders them
// (docs/pipeline.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_STAGES_PASSES_TD
#define LOOM_STAGES_PASSES_TD

include "mlir/Pass/PassBase.td"

def LoomAssignStages : Pass<"loom-assign-stages", "mlir::ModuleOp"> {
  let summary = "Assign every forward op a pipeline stage (loom.stage)";
  let description = [{
    Gives each op of the model (or loss) function a `loom.stage`: from the
    user's `loom.stage` annotations (unannotated ops take the stage of the
    op before them), from `boundaries` (names of the ops, as the model
    names its nodes, that start stages 1, 2, ...), or else balanced: the
    cut into `stages` contiguous stages that minimises the largest stage's
    work (flops, and bytes for ops without flops), among the cuts where
    every value crosses at most one boundary. Ops that read only weights
    and constants (a weight's transpose) take their first user's stage;
    constants get none (each stage makes its own). Errors name the cause:
    more stages than places to cut, a boundary that is not an op, a value
    used across non-adjacent stages. With `stages` 1 and no boundaries it
    does nothing, unless loom-plan-pipeline chose stages
    (`loom.pipeline_plan`): then their count.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The model or loss function (default: the module's only one)">,
    Option<"stages", "stages", "unsigned", /*default=*/"1",
           "Pipeline stages (times virtual stages with interleaving; 1: "
           "those of loom.pipeline_plan, or none)">,
    ListOption<"boundaries", "boundaries", "std::string",
               "Names of the ops that start stages 1, 2, ...">,
  ];
}

def LoomSplitStages : Pass<"loom-split-stages", "mlir::ModuleOp"> {
  let summary = "Split a pipelined training step into per-stage programs";
  let description = [{
    Takes the training step of a pipelined model (ops tagged with
    `loom.stage` and `loom.phase`; one micro-batch's forward and backward
    with the loss scaled by 1/micro-batches, then the update), partitioned
    or not, and writes per stage four functions, `@stage<S>_forward`,
    `@stage<S>_backward_input`, `@stage<S>_backward_weight` and
    `@stage<S>_update` (`loom.program = {stage, kind}`). Their arguments
    and results say with `loom.pipe` what crosses a boundary: activations
    sent to the next stage (`send:N` / `recv:N`), their gradients sent back
    (`send_grad:N` / `recv_grad:N`), values a stage keeps per micro-batch
    from one of its programs to a later one (`stash:N`), and weight
    gradients (`grad:N`) that the runtime sums over micro-batches before
    the update. Input gradients (what the previous stage needs) are
    computed by `backward_input`, weight gradients by `backward_weight`
    (zero-bubble schedules run them apart). Weights, optimizer state and
    their update live on their stage only; the loss on the last.
    Constants and ops on weights alone are recomputed where needed.
    A value used across non-adjacent stages is an error naming it.
    @train_step is replaced; the module's `loom.pipeline` gets `stages`.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"train_step\"",
           "The training step">,
    Option<"virtualStages", "virtual-stages", "unsigned", /*default=*/"1",
           "Stages per pipeline rank (interleaved schedules)">,
  ];
}

def LoomSchedulePipeline : Pass<"loom-schedule-pipeline", "mlir::ModuleOp"> {
  let summary = "Order the stage programs of every pipeline rank";
  let description = [{
    Writes into the module's `loom.pipeline` the schedule's name and, per
    pipeline rank, its list of actions: `F(s,m)` forward of stage s on
    micro-batch m, `B(s,m)` its backward, `I(s,m)` / `W(s,m)` the input and
    weight halves of it, `SEND_F`/`RECV_F`/`SEND_B`/`RECV_B(s,m)` the
    boundary transfers, `U(s)` the update. Schedules: `gpipe` (all forward,
    then all backward), `1f1b` (at most `stages - rank` micro-batches in
    flight), `interleaved` (1F1B over virtual stages, Megatron-LM's order)
    and `zb-h1` (1F1B with weight gradients deferred into the bubbles, Qi et
    al. 2023). The schedule is simulated before it is written: one that
    cannot progress is an error naming each rank's blocked action. With
    `report` it prints the simulated timeline and bubble fraction.
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"\"\"",
           "gpipe, 1f1b, interleaved or zb-h1 (default: the schedule of "
           "the module's loom.pipeline_plan, else 1f1b)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Print the timeline and bubble fraction">,
    Option<"svg", "svg", "std::string", /*default=*/"\"\"",
           "Also draw the timeline into this SVG file">,
  ];
}

#endif // LOOM_STAGES_PASSES_TD
