// Elementwise chains fuse; named ops (matmuls, transposes) are left alone.
// RUN: loom-opt %s --split-input-file --loom-convert-to-linalg --loom-fuse-elementwise | FileCheck %s --check-prefixes=CHECK,CPU
// RUN: loom-opt %s --split-input-file --loom-convert-to-linalg --loom-fuse-elementwise=shared-producers | FileCheck %s --check-prefixes=CHECK,GPU

// CHECK-LABEL: func.func @chain
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: arith.maximumf
func.func @chain(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %0 = loom.exp %x : tensor<16xf32>
  %1 = loom.add %0, %y : tensor<16xf32>
  %2 = loom.relu %1 : tensor<16xf32>
  return %2 : tensor<16xf32>
}

// -----

// A transpose feeding a matmul stays a transpose (the matmul must reach BLAS).
// CHECK-LABEL: func.func @transpose_into_matmul
// CHECK: linalg.transpose
// CHECK: linalg.batch_matmul
func.func @transpose_into_matmul(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>) -> tensor<2x8x8xf32> {
  %kt = loom.transpose %k permutation = [0, 2, 1] : (tensor<2x8x4xf32>) -> tensor<2x4x8xf32>
  %s = loom.dot_general %q, %kt batching_dims = [0] x [0] contracting_dims = [2] x [1]
      : (tensor<2x8x4xf32>, tensor<2x4x8xf32>) -> tensor<2x8x8xf32>
  return %s : tensor<2x8x8xf32>
}

// -----

// A producer with two elementwise users (an optimizer's moment, stored and
// used by the weight update). With shared-producers (the CUDA pipelines):
// fused into the consumer as one more result, computed and written once;
// one op instead of two. On the CPU, two ops.
// CHECK-LABEL: func.func @shared_producer
// GPU: %[[R:.*]]:2 = linalg.generic
// GPU-NOT: linalg.generic
// GPU: return %[[R]]#{{[01]}}, %[[R]]#{{[01]}}
// CPU: %[[M:.*]] = linalg.generic
// CPU: %[[P:.*]] = linalg.generic {{.*}}ins(%{{.*}}, %[[M]] :
// CPU: return %[[M]], %[[P]]
func.func @shared_producer(%m: tensor<8xf32>, %g: tensor<8xf32>, %p: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %m1 = loom.add %m, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %p1 = loom.sub %p, %m1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %m1, %p1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// A producer read by a reduction before its elementwise user (a softmax's
// x - max, summed and then divided): not fused in either mode. The fused
// op would sit after the reduction that reads the value, and a reduction
// cannot take it as a result (it would compute it once per use).
// CHECK-LABEL: func.func @producer_before_reduction
// CHECK: %[[D:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[D]] :
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} ins(%[[D]] :
func.func @producer_before_reduction(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>) {
  %d = loom.sub %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = loom.reduce_sum %d dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  %e = loom.exp %d : tensor<4x8xf32>
  return %s, %e : tensor<4xf32>, tensor<4x8xf32>
}

// -----

// Two elementwise users after each other (Adam's first moment, read by the
// second moment's op and the weight update): the first takes it as a
// result, then the second takes that op's results in turn; one op.
// CHECK-LABEL: func.func @two_users
// GPU: %[[R:.*]]:3 = linalg.generic
// GPU-NOT: linalg.generic
// CPU-COUNT-3: linalg.generic
func.func @two_users(%m: tensor<8xf32>, %g: tensor<8xf32>, %p: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %m1 = loom.add %m, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %v1 = loom.mul %m1, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %p1 = loom.sub %p, %m1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %p2 = loom.sub %p1, %v1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %m1, %v1, %p2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A one-hot against the class ids 0..C-1 (a cross-entropy's gradient):
// the constant ids become the loop's index, not a table read per element
// (the constant is then an unused input, which canonicalization drops).
// CHECK-LABEL: func.func @one_hot
// CHECK: ^bb0(%[[L:.*]]: i64, %{{.*}}: i64, %{{.*}}: i1):
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: %[[C:.*]] = arith.index_cast %[[J]] : index to i64
// CHECK: arith.cmpi eq, %[[L]], %[[C]]
func.func @one_hot(%labels: tensor<4xi64>) -> tensor<4x5xi1> {
  %ids = loom.constant dense<[0, 1, 2, 3, 4]> : tensor<5xi64>
  %l = loom.broadcast %labels dims = [0] : (tensor<4xi64>) -> tensor<4x5xi64>
  %c = loom.broadcast %ids dims = [1] : (tensor<5xi64>) -> tensor<4x5xi64>
  %eq = loom.compare eq, %l, %c : (tensor<4x5xi64>, tensor<4x5xi64>) -> tensor<4x5xi1>
  return %eq : tensor<4x5xi1>
}

// -----

// A scalar computed with transcendental math (Adam's bias correction
// 1 - beta^t) and read broadcast by a large elementwise op stays its own
// op in either mode: fused, it would be recomputed for every element (and,
// as a shared producer, stored by every thread).
// CHECK-LABEL: func.func @costly_scalar
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = []
// CHECK: math.powf
// CHECK: linalg.generic {{.*}}ins(%{{.*}}, %[[S]] : tensor<64xf32>, tensor<f32>)
// CHECK-NOT: math.powf
// CHECK: return
func.func @costly_scalar(%p: tensor<64xf32>, %t: tensor<f32>) -> (tensor<f32>, tensor<64xf32>) {
  %b = loom.constant dense<0.9> : tensor<f32>
  %c = loom.pow %b, %t : tensor<f32>
  %u = loom.mul %p, %c : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
  return %c, %u : tensor<f32>, tensor<64xf32>
}

// -----

// The same scalar read only by the large op (one use): still not fused.
// CHECK-LABEL: func.func @costly_scalar_one_use
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = []
// CHECK: math.powf
// CHECK: linalg.generic {{.*}}ins(%{{.*}}, %[[S]] : tensor<64xf32>, tensor<f32>)
// CHECK-NOT: math.powf
// CHECK: return
func.func @costly_scalar_one_use(%p: tensor<64xf32>, %t: tensor<f32>) -> tensor<64xf32> {
  %b = loom.constant dense<0.9> : tensor<f32>
  %c = loom.pow %b, %t : tensor<f32>
  %u = loom.mul %p, %c : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
  return %u : tensor<64xf32>
}
