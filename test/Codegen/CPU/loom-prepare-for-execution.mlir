// Public functions get caller-provided result buffers; loom declarations
// and attributes disappear.
// RUN: loom-opt %s --loom-prepare-for-execution | FileCheck %s

// CHECK-NOT: loom.parameter
// CHECK-NOT: loom.mesh
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32> {bufferization.writable = false}, %[[OUT0:.*]]: memref<4xf32>, %[[OUT1:.*]]: memref<f32>)
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: bufferization.materialize_in_destination %[[X]] in restrict writable %[[OUT0]] : (tensor<4xf32>, memref<4xf32>) -> ()
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[OUT1]]
// CHECK-NEXT: return{{$}}
loom.mesh @m ["dp"=2]
loom.parameter @w : tensor<4xf32> trainable
func.func @f(%x: tensor<4xf32> {loom.param = @w, loom.name = "x"}) -> (tensor<4xf32> {loom.name = "y"}, tensor<f32>) {
  %c = arith.constant dense<1.0> : tensor<f32>
  return %x, %c : tensor<4xf32>, tensor<f32>
}

// Private functions keep their interface.
// CHECK-LABEL: func.func private @helper(%arg0: tensor<4xf32>) -> tensor<4xf32>
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
