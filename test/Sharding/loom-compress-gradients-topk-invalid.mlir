// RUN: not loom-opt %s --loom-compress-gradients 2>&1 | FileCheck %s

// The residual's name is taken.
loom.mesh @mesh ["dp"=2]
loom.parameter @w : tensor<4xf32> trainable
// CHECK: error: loom-compress-gradients: the top-k residual @w.error_feedback would clash with this symbol
loom.parameter @w.error_feedback : tensor<4xf32>
func.func @clash(%g: tensor<4xf32>) -> tensor<4xf32>
    attributes {loom.grad_compression = "topk:0.5", loom.partitioned = @mesh} {
  %r = loom.all_reduce %g over @mesh ["dp"] reduction = sum : tensor<4xf32>
  %b = loom.optimization_barrier %r : tensor<4xf32> {loom.grad_compression = "topk:0.5", loom.param = @w}
  return %b : tensor<4xf32>
}
