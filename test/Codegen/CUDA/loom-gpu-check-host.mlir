// RUN: not loom-opt %s --loom-gpu-check-host 2>&1 | FileCheck %s

// A load left in host code would read device memory from the host.
// CHECK: error: loom-gpu-check-host: 'memref.load' in host code would access device memory from the host
// CHECK-NOT: error
module attributes {gpu.container_module} {
  func.func @step(%a: memref<4xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %v = memref.load %a[%c0] : memref<4xf32>
    return %v : f32
  }
  gpu.module @kernels {
    gpu.func @k(%a: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %a[%c0] : memref<4xf32>
      memref.store %v, %a[%c0] : memref<4xf32>
      gpu.return
    }
  }
}
