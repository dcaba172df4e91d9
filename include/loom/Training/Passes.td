//===- Passes.td - Training passes -----------------------------*- tablegen -*-===//
//
// From a model function to a training step: which parameters train, the
// loss, reverse-mode gradients and the optimizer update, all as loom IR.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TRAINING_PASSES_TD
#define LOOM_TRAINING_PASSES_TD

include "mlir/Pass/PassBase.td"

def LoomAnnotateIndexBounds : Pass<"loom-annotate-index-bounds", "mlir::ModuleOp"> {
  let summary = "Give integer inputs used as indices their range";
  let description = [{
    Sets `loom.index_bound` on integer arguments used as gather indices
    (token ids: the gathered dimension's size) or as class labels of a
    cross-entropy / NLL loss (the number of classes), the smallest when
    several uses bound one argument, so that synthetic data and checks stay
    in range. Arguments that already have a bound keep it.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Function to annotate (default: the module's only function)">,
  ];
}

def LoomFreezeParameters : Pass<"loom-freeze-parameters", "mlir::ModuleOp"> {
  let summary = "Keep the named parameters out of training";
  let description = [{
    Clears `trainable` on the named `loom.parameter`s (fine-tuning part of a
    model): the training step neither differentiates nor updates them. A
    name that is not a parameter is an error.
  }];
  let options = [
    ListOption<"names", "names", "std::string", "Parameters to freeze">,
  ];
}

def LoomInferBuffers : Pass<"loom-infer-buffers", "mlir::ModuleOp"> {
  let summary = "Mark parameters that no gradient can reach as buffers";
  let description = [{
    ONNX does not say which initializers are weights and which are buffers
    (attention masks, position ids, lookup tables), so the importer makes
    every float initializer a trainable `loom.parameter`. This pass clears
    `trainable` on those that the function's results depend on only through
    ops that pass no gradient (comparisons, integer casts, indices) or not at
    all, and reports each with a remark. Parameters used by nothing are
    left alone (loom-build-train-step warns about them).
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Function to analyse (default: the module's only function)">,
  ];
}

def LoomAddLoss : Pass<"loom-add-loss", "mlir::ModuleOp"> {
  let summary = "Turn a model's output into a scalar training loss";
  let description = [{
    Replaces the results of the model function with one scalar loss computed
    from output `output` and a new `labels` argument (named `labels`, last):

    * `cross_entropy`: softmax cross-entropy with `i64` class labels (PyTorch
      `cross_entropy`, mean over samples). `class-axis` says which output
      dimension holds the classes (default: the last); the labels have the
      output's shape without it. `[batch, seq, vocab]` language-model logits
      are flattened to `[batch * seq, vocab]`.
    * `nll`: as `cross_entropy` for an output that already holds
      log-probabilities.
    * `mse`: mean squared error against float labels of the output's shape.

    The loss result is named `loss`; an integer labels argument carries
    `loom.index_bound` (the number of classes).
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Function to change (default: the module's only function)">,
    Option<"loss", "loss", "std::string", /*default=*/"\"cross_entropy\"",
           "cross_entropy, nll or mse">,
    Option<"output", "output", "unsigned", /*default=*/"0",
           "Which model output the loss is computed from">,
    Option<"classAxis", "class-axis", "int64_t", /*default=*/"-1",
           "Dimension of the output holding the classes (negative counts from the end)">,
  ];
  let dependentDialects = ["mlir::loom::LoomDialect"];
}

def LoomAutocast : Pass<"loom-autocast", "mlir::ModuleOp"> {
  let summary = "Mixed precision: compute in bf16/fp16, keep f32 master weights";
  let description = [{
    Rewrites an f32 model function to compute in `precision` (bf16 or fp16)
    with PyTorch 1.13 autocast's rules, before the training step is built:
    matrix products (dot_general, conv) run in the low type (accumulating in
    f32 when lowered), losses in f32, softmax and normalizations in f32 with
    their output rounded to the low type, and every other op in its
    operands' type (mixed operands promote to f32, except scalars and a bias
    added to a product). Parameters stay f32: they are the master weights,
    their gradients come back through the casts as f32, and the optimizer
    state is f32. The function's signature does not change. A model whose
    trainable parameters are not f32 is an error. `precision=fp32` does
    nothing.

    Example: `loom-opt m.mlir --loom-autocast=precision=bf16`.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Function to rewrite (default: the module's only function)">,
    Option<"precision", "precision", "std::string", /*default=*/"\"bf16\"",
           "bf16, fp16 or fp32">,
  ];
  let dependentDialects = ["mlir::loom::LoomDialect"];
}

def LoomAutodiff : Pass<"loom-autodiff", "mlir::ModuleOp"> {
  let summary = "Build a function's gradient function by reverse-mode AD";
  let description = [{
    For a function `@f` whose first result is a scalar float loss, adds
    `@f_grad` with the same arguments returning the loss followed by the
    gradient of the loss with respect to each selected argument: those bound
    to trainable `loom.parameter`s (`wrt=params`, the default) or every float
    argument (`wrt=all`). Gradients are built from each op's
    `DifferentiableOpInterface` rule and are ordinary loom ops; values that
    do not lead to the loss get no backward code. An argument the loss does
    not depend on gets a zero gradient and a warning; one it depends on only
    through ops without a gradient is an error naming the op.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Function to differentiate (default: the module's only function)">,
    Option<"wrt", "wrt", "std::string", /*default=*/"\"params\"",
           "params (trainable parameter arguments) or all (every float argument)">,
  ];
  let dependentDialects = ["mlir::loom::LoomDialect"];
}

def LoomBuildTrainStep : Pass<"loom-build-train-step", "mlir::ModuleOp"> {
  let summary = "Build a training step: forward, backward and optimizer update";
  let description = [{
    From a function whose first result is a scalar loss, builds
    `@train_step(params..., data..., optimizer state...) -> (loss,
    new params..., new optimizer state...)`: the forward pass, its gradient
    (as `loom-autodiff`), optional global-norm clipping and the optimizer
    update, all as loom ops so that later passes shard the optimizer like
    the model (ZeRO). Optimizer state and the step counter are new
    non-trainable `loom.parameter`s initialised to zero, named as PyTorch
    names them (`<param>.exp_avg`, `<param>.exp_avg_sq`,
    `<param>.momentum_buffer`, `optimizer.step`); every result carries
    `loom.param` naming the parameter it is the next value of.

    Optimizers follow PyTorch 1.13 exactly: `sgd` (momentum, dampening,
    Nesterov, L2 weight decay), `adam` (L2 weight decay added to the
    gradient) and `adamw` (decoupled decay), with bias correction. The
    learning rate is `lr` times a schedule of the step counter: `constant`,
    or `warmup-cosine` (linear warmup over `warmup-steps`, then cosine decay
    to 0 at `total-steps`, as Hugging Face's
    `get_cosine_schedule_with_warmup`). With `micro-batches=K` every data
    argument gains a leading dimension of size K; the step runs forward and
    backward on each micro-batch and averages losses and gradients
    (gradient accumulation). Parameters the loss does not depend on are
    left unchanged, as PyTorch skips parameters without gradients.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Function computing the loss (default: the module's only function)">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "sgd, adam, adamw, or none (the function already is the step: a "
           "traced PyTorch step whose results update its parameters)">,
    Option<"lr", "lr", "double", /*default=*/"-1.0",
           "Learning rate (default: 1e-3 for adam/adamw; required for sgd)">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0", "SGD momentum">,
    Option<"dampening", "dampening", "double", /*default=*/"0.0", "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false", "SGD Nesterov momentum">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1.0",
           "Weight decay (default: 0.01 for adamw, 0 otherwise)">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "Adam epsilon">,
    Option<"gradClip", "grad-clip", "double", /*default=*/"0.0",
           "Clip the global gradient norm to this value (0: off)">,
    Option<"microBatches", "micro-batches", "unsigned", /*default=*/"1",
           "Micro-batches per step (gradient accumulation; 0: the count "
           "loom.pipeline_plan has, loom-plan-pipeline's choice)">,
    Option<"lrSchedule", "lr-schedule", "std::string", /*default=*/"\"constant\"",
           "constant or warmup-cosine">,
    Option<"warmupSteps", "warmup-steps", "int64_t", /*default=*/"0",
           "Warmup steps of warmup-cosine">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"0",
           "Steps at which warmup-cosine reaches 0">,
    Option<"gradCompression", "grad-compression", "std::string",
           /*default=*/"\"none\"",
           "none, fp16 or bf16: every weight gradient is cast to it and back "
           "(Horovod's Compression.fp16), so that its reduction across "
           "devices sends 16-bit values; topk:RATIO: every weight gradient "
           "passes a marked barrier whose reduction loom-compress-gradients "
           "turns into each device's top-k exchange with error feedback">,
    Option<"lossScale", "loss-scale", "std::string", /*default=*/"\"none\"",
           "none, dynamic (PyTorch GradScaler's rules) or a constant scale">,
    Option<"lossScaleInit", "loss-scale-init", "double", /*default=*/"65536.0",
           "dynamic: the initial scale (GradScaler's init_scale)">,
    Option<"lossScaleGrowthInterval", "loss-scale-growth-interval", "int64_t",
           /*default=*/"2000",
           "dynamic: clean steps before the scale doubles (growth_interval)">,
    Option<"keepForward", "keep-forward", "bool", /*default=*/"false",
           "Keep the loss function next to @train_step">,
    Option<"numberGradientRules", "number-gradient-rules", "bool",
           /*default=*/"false",
           "Number forward ops (loom.op_id) and mark their gradient rules' ops "
           "(loom.vjp_of) and name gradients as their values' (loom.cotangent), "
           "so that a planned partitioning runs them on the forward op's "
           "shardings">,
  ];
  let dependentDialects = ["mlir::loom::LoomDialect"];
}

def LoomRematerialize : Pass<"loom-rematerialize", "mlir::ModuleOp"> {
  let summary = "Recompute marked forward segments in the backward pass";
  let description = [{
    Activation rematerialization (gradient checkpointing) as a program
    transformation. Forward ops carry `loom.remat = k`, their segment (the
    planner marks the repeated layers it rematerializes; `loom-mark-remat`
    marks layers on request; users may annotate ops). Ops the partitioner
    or a strategy inserted into a segment (collectives, reshapes) join it
    when all their operands come from it. For each segment, every value
    the backward pass reads is recomputed from the segment's inputs just
    before the backward pass first reads any of them; the forward values
    then die at the end of the forward pass. The segment's inputs pass
    through one `loom.optimization_barrier`, so that CSE cannot merge the
    recomputation back into the forward pass. Recomputed ops carry
    `loom.recomputed = k`.

    Works on training steps before or after partitioning (after: the
    recomputation repeats the forward collectives, as Megatron's activation
    recomputation does). Only ops in the function's body block take part.

    Example: `loom-opt step.mlir --loom-rematerialize`.
  }];
  let dependentDialects = ["mlir::loom::LoomDialect"];
}

#endif // LOOM_TRAINING_PASSES_TD
