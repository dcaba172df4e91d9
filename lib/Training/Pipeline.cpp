//===- Pipeline.cpp - --loom-training-pipeline ----------------------------===//

#include "loom/Sharding/Passes.h"
#include "loom/Training/Passes.h"
#include "loom/Stages/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::loom;

void mlir::loom::buildLoomTrainingPipeline(
    OpPassManager &pm, const TrainingPipelineOptions &options) {
  pm.addPass(createLoomAnnotateIndexBounds());
  if (!options.frozen.empty()) {
    LoomFreezeParametersOptions freeze;
    freeze.names.assign(options.frozen.begin(), options.frozen.end());
    pm.addPass(createLoomFreezeParameters(freeze));
  }
  if (options.inferBuffers)
    pm.addPass(createLoomInferBuffers());
  if (options.loss != "none") {
    LoomAddLossOptions loss;
    loss.loss = options.loss;
    loss.classAxis = options.classAxis;
    pm.addPass(createLoomAddLoss(loss));
  }
  if (!options.precision.empty() && options.precision != "fp32") {
    LoomAutocastOptions autocast;
    autocast.precision = options.precision;
    pm.addPass(createLoomAutocast(autocast));
  }
  // 0: the count loom-plan-pipeline chose.
  if (options.splitMicroBatches != 1) {
    LoomSplitMicroBatchesOptions split;
    split.count = options.splitMicroBatches;
    pm.addPass(createLoomSplitMicroBatches(split));
  }
  // Also without stages asked for: those of loom-plan-pipeline.
  {
    LoomAssignStagesOptions assign;
    assign.stages = options.stages;
    assign.boundaries.assign(options.stageBoundaries.begin(),
                             options.stageBoundaries.end());
    pm.addPass(createLoomAssignStages(assign));
  }
  LoomBuildTrainStepOptions step;
  step.optimizer = options.optimizer;
  step.lr = options.lr;
  step.momentum = options.momentum;
  step.dampening = options.dampening;
  step.nesterov = options.nesterov;
  step.weightDecay = options.weightDecay;
  step.beta1 = options.beta1;
  step.beta2 = options.beta2;
  step.eps = options.eps;
  step.gradClip = options.gradClip;
  step.microBatches = options.microBatches;
  step.lrSchedule = options.lrSchedule;
  step.warmupSteps = options.warmupSteps;
  step.totalSteps = options.totalSteps;
  step.numberGradientRules = options.numberGradientRules;
  step.lossScale = !options.lossScale.empty() ? options.lossScale.getValue()
                   : options.precision == "fp16" ? "dynamic"
                                                 : "none";
  step.lossScaleInit = options.lossScaleInit;
  step.gradCompression = options.gradCompression;
  step.lossScaleGrowthInterval = options.lossScaleGrowthInterval;
  pm.addPass(createLoomBuildTrainStep(step));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}
