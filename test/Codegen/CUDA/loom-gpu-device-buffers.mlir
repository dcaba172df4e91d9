// RUN: loom-opt %s --loom-gpu-device-buffers | FileCheck %s

// Temporaries live on the device; a copy becomes a loop nest (a kernel
// later), not a host memcpy.
// CHECK-LABEL: func.func @step
// CHECK: %[[T:.*]] = gpu.alloc () : memref<8x4xf32>
// CHECK: linalg.copy ins(%arg0 : memref<8x4xf32>) outs(%[[T]] : memref<8x4xf32>)
// CHECK: linalg.copy ins(%[[T]] : memref<8x4xf32>) outs(%arg1 : memref<8x4xf32>)
// CHECK: gpu.dealloc %[[T]] : memref<8x4xf32>
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK-NOT: memref.dealloc
func.func @step(%in: memref<8x4xf32>, %out: memref<8x4xf32>) {
  %t = memref.alloc() : memref<8x4xf32>
  memref.copy %in, %t : memref<8x4xf32> to memref<8x4xf32>
  memref.copy %t, %out : memref<8x4xf32> to memref<8x4xf32>
  memref.dealloc %t : memref<8x4xf32>
  return
}
