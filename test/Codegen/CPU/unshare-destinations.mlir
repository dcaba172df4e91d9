// RUN: loom-opt %s --loom-prepare-for-execution | FileCheck %s

// A zero-filled initial value CSE merged for two products (the forward's
// and, much later, the backward's) becomes one fill per product, each just
// before its product: bufferization allocates where a value is defined,
// and the backward's 512 MiB product of a GPT step had been allocated and
// filled in the forward and held through it. The shared fill is gone.
// CHECK-LABEL: func.func @two_products
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK-NEXT: %[[F0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<4x4xf32>)
// CHECK-NEXT: %[[P0:.*]] = linalg.matmul ins(%arg0, %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[F0]] : tensor<4x4xf32>)
// CHECK-NEXT: %[[T:.*]] = arith.negf %[[P0]]
// CHECK-NEXT: %[[E1:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK-NEXT: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x4xf32>)
// CHECK-NEXT: linalg.matmul ins(%[[T]], %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[F1]] : tensor<4x4xf32>)
// CHECK-NOT: linalg.fill
func.func @two_products(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %t = arith.negf %p : tensor<4x4xf32>
  %q = linalg.matmul ins(%t, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %q : tensor<4x4xf32>
}
