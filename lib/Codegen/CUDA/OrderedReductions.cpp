//===- OrderedReductions.cpp - Floating-point sums in program order -------===//

#include "loom/Codegen/CUDA/Passes.h"



namespace mlir::loom {
#define GEN_PASS_DEF_LOOMGPUORDEREDREDUCTIONS
#include "loom/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

struct OrderedReductionsPass
    : loom::impl::LoomGpuOrderedReductionsBase<OrderedReductionsPass> {
  void runOnOperation() override {
    getOperation().walk([](arith::ArithFastMathInterface op) {
      arith::FastMathFlagsAttr attr = op.getFastMathFlagsAttr();
      if (!attr)
        return;
      arith::FastMathFlags flags = attr.getValue();
      if (!arith::bitEnumContainsAny(flags, arith::FastMathFlags::reassoc))
        return;
      op->setAttr(op.getFastMathAttrName(),
                  arith::FastMathFlagsAttr::get(
                      op->getContext(), flags & ~arith::FastMathFlags::reassoc));
    });
  }
};

} // namespace
