//===- LoomNNOps.cpp - Neural-network ops -----------------------------------===//
//
// Type inference and verifiers of softmax, normalizations, dropout and
// losses (LoomNNOps.td).
//
//===----------------------------------------------------------------------===//

#include "InferTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::detail;

//===----------------------------------------------------------------------===//
// NN ops
//===----------------------------------------------------------------------===//

static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError("axis ")
           << axis << " is out of range for rank " << rank
           << " (axes are normalized to [0, rank))";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getInput().getType().getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getInput().getType().getRank());
}

static LogicalResult inferLayerNorm(MLIRContext *ctx, std::optional<Location> loc,
                                   LayerNormOp::Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input =
      rankedType(loc, adaptor.getInput().getType(), "input");
  FailureOr<RankedTensorType> scale =
      rankedType(loc, adaptor.getScale().getType(), "scale");
  FailureOr<RankedTensorType> bias =
      rankedType(loc, adaptor.getBias().getType(), "bias");
  if (failed(input) || failed(scale) || failed(bias))
    return failure();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= input->getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             input->getRank());
  ArrayRef<int64_t> normalized = input->getShape().drop_front(axis);
  if (scale->getShape() != normalized || bias->getShape() != normalized)
    return emitOptionalError(loc,
                             "scale and bias must have the shape of the "
                             "normalized dimensions of ",
                             *input, " from axis ", axis, ", got ", *scale,
                             " and ", *bias);
  inferred.push_back(*input);
  return success();
}
LOOM_INFER_TYPES(LayerNormOp, 1, inferLayerNorm)

/// Checks an `[N, C, ...]` input and `[C]` per-channel vectors.
static LogicalResult checkBatchNormShapes(std::optional<Location> loc,
                                          Type inputType,
                                          ArrayRef<Type> vectors,
                                          RankedTensorType &input) {
  FailureOr<RankedTensorType> in = rankedType(loc, inputType, "input");
  if (failed(in))
    return failure();
  input = *in;
  if (input.getRank() < 2)
    return emitOptionalError(loc, "input must be [N, C, ...], got ", input);
  int64_t c = input.getDimSize(1);
  for (Type v : vectors) {
    auto t = dyn_cast<RankedTensorType>(v);
    if (!t || t.getRank() != 1 || t.getDimSize(0) != c)
      return emitOptionalError(loc, "per-channel operands must be [", c,
                               "], got ", v);
  }
  return success();
}

static LogicalResult inferBatchNormInference(MLIRContext *ctx, std::optional<Location> loc,
                                            BatchNormInferenceOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType input;
  if (failed(checkBatchNormShapes(
          loc, adaptor.getInput().getType(),
          {adaptor.getScale().getType(), adaptor.getBias().getType(),
           adaptor.getMean().getType(), adaptor.getVariance().getType()},
          input)))
    return failure();
  inferred.push_back(input);
  return success();
}
LOOM_INFER_TYPES(BatchNormInferenceOp, 1, inferBatchNormInference)

static LogicalResult inferBatchNormTraining(MLIRContext *ctx, std::optional<Location> loc,
                                           BatchNormTrainingOp::Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  RankedTensorType input;
  if (failed(checkBatchNormShapes(
          loc, adaptor.getInput().getType(),
          {adaptor.getScale().getType(), adaptor.getBias().getType()}, input)))
    return failure();
  auto stats =
      RankedTensorType::get({input.getDimSize(1)}, input.getElementType());
  inferred.append({input, stats, stats});
  return success();
}
LOOM_INFER_TYPES(BatchNormTrainingOp, 3, inferBatchNormTraining)

static LogicalResult inferDropout(MLIRContext *ctx, std::optional<Location> loc,
                                 DropoutOp::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input =
      rankedType(loc, adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  double ratio = adaptor.getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOptionalError(loc, "ratio must be in [0, 1), got ", ratio);
  inferred.push_back(*input);
  inferred.push_back(input->clone(IntegerType::get(ctx, 1)));
  return success();
}
LOOM_INFER_TYPES(DropoutOp, 2, inferDropout)

static LogicalResult inferClassLoss(std::optional<Location> loc,
                                    Type inputType, Type labelsType,
                                    Value weight, LossReduction reduction,
                                    SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input = rankedType(loc, inputType, "input");
  FailureOr<RankedTensorType> labels = rankedType(loc, labelsType, "labels");
  if (failed(input) || failed(labels))
    return failure();
  if (input->getRank() < 2)
    return emitOptionalError(loc, "input must be [N, C, d1, ...], got ",
                             *input);
  SmallVector<int64_t> expected{input->getDimSize(0)};
  llvm::append_range(expected, input->getShape().drop_front(2));
  if (labels->getShape() != ArrayRef<int64_t>(expected))
    return emitOptionalError(loc, "labels ", *labels,
                             " do not match input ", *input,
                             ": expected shape [N, d1, ...] = [",
                             llvm::make_range(expected.begin(), expected.end()),
                             "]");
  if (weight) {
    auto w = dyn_cast<RankedTensorType>(weight.getType());
    if (!w || w.getRank() != 1 || w.getDimSize(0) != input->getDimSize(1))
      return emitOptionalError(loc, "weight must be [C] = [",
                               input->getDimSize(1), "], got ",
                               weight.getType());
  }
  if (reduction == LossReduction::none)
    inferred.push_back(labels->clone(input->getElementType()));
  else
    inferred.push_back(RankedTensorType::get({}, input->getElementType()));
  return success();
}

static LogicalResult inferCrossEntropy(MLIRContext *ctx, std::optional<Location> loc,
                                      CrossEntropyOp::Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  return inferClassLoss(loc, adaptor.getInput().getType(),
                        adaptor.getLabels().getType(), adaptor.getWeight(),
                        adaptor.getReduction(), inferred);
}
LOOM_INFER_TYPES(CrossEntropyOp, 1, inferCrossEntropy)

static LogicalResult inferNllLoss(MLIRContext *ctx, std::optional<Location> loc,
                                 NllLossOp::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  return inferClassLoss(loc, adaptor.getInput().getType(),
                        adaptor.getLabels().getType(), adaptor.getWeight(),
                        adaptor.getReduction(), inferred);
}
LOOM_INFER_TYPES(NllLossOp, 1, inferNllLoss)

static LogicalResult inferMseLoss(MLIRContext *ctx, std::optional<Location> loc,
                                 MseLossOp::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input =
      rankedType(loc, adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  if (adaptor.getReduction() == LossReduction::none)
    inferred.push_back(*input);
  else
    inferred.push_back(RankedTensorType::get({}, input->getElementType()));
  return success();
}
LOOM_INFER_TYPES(MseLossOp, 1, inferMseLoss)

