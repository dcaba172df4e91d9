// RUN: loom-opt %s --loom-convert-to-linalg --cse | FileCheck %s
// RUN: loom-opt %s --loom-convert-to-linalg --cse | FileCheck %s --check-prefix=WIDE

// A softmax's statistics are read straight from the 16-bit logits: the row
// maximum and the sum of exp(x - max), both in f32, the widening and the
// exponentials inside the reductions' bodies; no f32 tensor of the logits'
// size and no x - max is written. A cross-entropy and the softmax of its
// gradient (d/dx = softmax(x) - onehot) build the same two reductions of
// the same logits, which CSE computes once for the step: for the GPT's
// 8192 x 51200 vocabulary that is 2 reads of the logits for the loss and its
// gradient's statistics, where 12 passes were written or read before.
// WIDE-LABEL: func.func @loss_and_softmax
// WIDE-NOT: tensor<8x32xf32>
// WIDE: return
// CHECK-LABEL: func.func @loss_and_softmax
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x32xbf16>) outs(%{{.*}} : tensor<8xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%arg0, %[[MAX]] : tensor<8x32xbf16>, tensor<8xf32>) outs(%{{.*}} : tensor<8xf32>)
// CHECK: arith.extf
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: arith.addf
// The loss: x - max - log(sum) at the labels, rounded to bf16 as
// PyTorch's log_softmax of bf16 logits is.
// CHECK: linalg.generic {{.*}}ins(%arg1 : tensor<8xi64>)
// CHECK: tensor.extract %arg0
// CHECK: tensor.extract %[[MAX]]
// CHECK: tensor.extract %[[SUM]]
// CHECK: math.log
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// The softmax reads the same statistics: no third reduction over x.
// CHECK-NOT: iterator_types = ["parallel", "reduction"]} ins(%arg0
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%arg0, %{{.*}}, %{{.*}} : tensor<8x32xbf16>, tensor<8x1xf32>, tensor<8x1xf32>) outs(%{{.*}} : tensor<8x32xbf16>)
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: iterator_types = ["parallel", "reduction"]} ins(%arg0
// CHECK: return
func.func @loss_and_softmax(%x: tensor<8x32xbf16>, %l: tensor<8xi64>) -> (tensor<bf16>, tensor<8x32xbf16>) {
  %loss = loom.cross_entropy %x, %l reduction = mean : (tensor<8x32xbf16>, tensor<8xi64>) -> tensor<bf16>
  %p = loom.softmax %x axis = 1 : tensor<8x32xbf16>
  return %loss, %p : tensor<bf16>, tensor<8x32xbf16>
}

// Layer-norm statistics: the mean, then the sum of squared deviations
// computed in the reduction's body (no tensor of squares).
// CHECK-LABEL: func.func @layer_norm
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x32xf32>)
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}}ins(%[[S]] : tensor<8xf32>)
// CHECK: arith.divf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%arg0, %[[MEAN]] : tensor<8x32xf32>, tensor<8xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.subf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
func.func @layer_norm(%x: tensor<8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %y = loom.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-05 : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
