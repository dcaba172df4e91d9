//===- Passes.h - Training passes -------------------------------*- C++ -*-===//

#ifndef LOOM_TRAINING_PASSES_H
#define LOOM_TRAINING_PASSES_H

#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::loom {

#define GEN_PASS_DECL
#include "loom/Training/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "loom/Training/Passes.h.inc"

/// Options of `--loom-training-pipeline` (and of loomc's flags of the same
/// names): the loss, which parameters train, the optimizer.
struct TrainingPipelineOptions
    : public PassPipelineOptions<TrainingPipelineOptions> {
  Option<std::string> loss{
      *this, "loss",
      llvm::cl::desc("cross_entropy, nll, mse, or none (the model's first "
                     "result already is the loss)"),
      llvm::cl::init("cross_entropy")};
  Option<int64_t> classAxis{
      *this, "class-axis",
      llvm::cl::desc("Output dimension holding the classes (default: last)"),
      llvm::cl::init(-1)};
  ListOption<std::string> frozen{
      *this, "frozen",
      llvm::cl::desc("Parameters (by name) not to train")};
  Option<bool> inferBuffers{
      *this, "infer-buffers",
      llvm::cl::desc("Parameters no gradient reaches become buffers"),
      llvm::cl::init(true)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd, adam or adamw"),
                                llvm::cl::init("adamw")};
  Option<double> lr{*this, "lr",
                    llvm::cl::desc("Learning rate (default 1e-3 for Adam/AdamW)"),
                    llvm::cl::init(-1.0)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(0.0)};
  Option<double> dampening{*this, "dampening", llvm::cl::desc("SGD dampening"),
                           llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov",
                        llvm::cl::desc("SGD Nesterov momentum"),
                        llvm::cl::init(false)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("Weight decay (default 0.01 for AdamW, 0 otherwise)"),
      llvm::cl::init(-1.0)};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("Adam beta1"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("Adam beta2"),
                       llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps", llvm::cl::desc("Adam epsilon"),
                     llvm::cl::init(1e-8)};
  Option<double> gradClip{
      *this, "grad-clip",
      llvm::cl::desc("Clip the global gradient norm to this (0: off)"),
      llvm::cl::init(0.0)};
  Option<unsigned> microBatches{
      *this, "micro-batches",
      llvm::cl::desc("Micro-batches per step: the step's copies of the loss "
                     "function (what split-micro-batches made one "
                     "micro-batch of, or accumulated data entries; 0: the "
                     "count of loom.pipeline_plan)"),
      llvm::cl::init(1)};
  Option<unsigned> splitMicroBatches{
      *this, "split-micro-batches",
      llvm::cl::desc("Make the loss function one of this many micro-batches "
                     "that split its batch (loom-split-micro-batches; 1: "
                     "not split; 0: the count of loom.pipeline_plan)"),
      llvm::cl::init(1)};
  Option<std::string> lrSchedule{*this, "lr-schedule",
                                 llvm::cl::desc("constant or warmup-cosine"),
                                 llvm::cl::init("constant")};
  Option<int64_t> warmupSteps{*this, "warmup-steps",
                              llvm::cl::desc("warmup-cosine: warmup steps"),
                              llvm::cl::init(0)};
  Option<int64_t> totalSteps{*this, "total-steps",
                             llvm::cl::desc("warmup-cosine: steps to decay over"),
                             llvm::cl::init(0)};
  Option<unsigned> stages{
      *this, "stages",
      llvm::cl::desc("Pipeline stages (times virtual stages): >1 assigns "
                     "every forward op a stage (loom-assign-stages)"),
      llvm::cl::init(1)};
  ListOption<std::string> stageBoundaries{
      *this, "stage-boundaries",
      llvm::cl::desc("Names of the ops that start pipeline stages 1, 2, ...")};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("bf16 or fp16: compute in it with f32 master weights "
                     "(loom-autocast); fp32 or empty: the model's own types"),
      llvm::cl::init("")};
  Option<std::string> gradCompression{
      *this, "grad-compression",
      llvm::cl::desc("none, fp16 or bf16: weight gradients are reduced in "
                     "16 bits (cast before the reduction, back after); "
                     "topk:RATIO: each device sends its largest entries, "
                     "with error feedback"),
      llvm::cl::init("none")};
  Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("none, dynamic or a constant (default: dynamic with "
                     "precision=fp16, else none)"),
      llvm::cl::init("")};
  Option<double> lossScaleInit{
      *this, "loss-scale-init",
      llvm::cl::desc("Initial dynamic loss scale"), llvm::cl::init(65536.0)};
  Option<int64_t> lossScaleGrowthInterval{
      *this, "loss-scale-growth-interval",
      llvm::cl::desc("Clean steps before the dynamic scale doubles"),
      llvm::cl::init(2000)};
  Option<bool> numberGradientRules{
      *this, "number-gradient-rules",
      llvm::cl::desc("Mark gradient rules' ops with their forward op "
                     "(loom.op_id, loom.vjp_of), for a planned partitioning"),
      llvm::cl::init(false)};
};

/// Model function -> @train_step: index bounds, frozen parameters, buffers
/// no gradient reaches, the loss, forward + backward + optimizer, cleanup.
void buildLoomTrainingPipeline(OpPassManager &pm,
                               const TrainingPipelineOptions &options);

} // namespace mlir::loom

#endif // LOOM_TRAINING_PASSES_H
