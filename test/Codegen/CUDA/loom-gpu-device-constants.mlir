// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-gpu-device-constants | FileCheck %s

// A constant a kernel reads moves into the launch (outlining then copies
// the global into the kernel's module): nothing outside reads host memory.
// CHECK-LABEL: func.func @kernel_reads
// CHECK-NOT: memref.get_global
// CHECK: gpu.launch
// CHECK: memref.get_global @c
// CHECK: memref.load
module attributes {gpu.container_module} {
  memref.global "private" constant @c : memref<10xi64> = dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]>
  func.func @kernel_reads(%out: memref<10xi64>) {
    %g = memref.get_global @c : memref<10xi64>
    %c1 = arith.constant 1 : index
    gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1)
               threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %d = %c1) {
      %v = memref.load %g[%tx] : memref<10xi64>
      memref.store %v, %out[%tx] : memref<10xi64>
      gpu.terminator
    }
    return
  }
}

// -----

// A constant host code hands to a device call is copied to a device buffer
// there, and freed before the return.
// CHECK-LABEL: func.func @host_passes
// CHECK: %[[G:.*]] = memref.get_global @w
// CHECK: %[[D:.*]] = gpu.alloc () : memref<4x4xf32>
// CHECK: gpu.memcpy %[[D]], %[[G]]
// CHECK: call @device_call(%[[D]])
// CHECK: gpu.dealloc %[[D]]
// CHECK-NEXT: return
module attributes {gpu.container_module} {
  memref.global "private" constant @w : memref<4x4xf32> = dense<1.0>
  func.func private @device_call(memref<4x4xf32>)
  func.func @host_passes() {
    %g = memref.get_global @w : memref<4x4xf32>
    call @device_call(%g) : (memref<4x4xf32>) -> ()
    return
  }
}

// -----

// A mutable global cannot reach the GPU: the runtime uploads each global
// once (a CUDA graph replays the copy) and would miss its changes.
module attributes {gpu.container_module} {
  memref.global "private" @m : memref<4xf32> = dense<1.0>
  func.func private @device_call(memref<4xf32>)
  func.func @host_passes_mutable() {
    // expected-error @+1 {{host code passes global @m to the GPU, but it is not a constant global}}
    %g = memref.get_global @m : memref<4xf32>
    call @device_call(%g) : (memref<4xf32>) -> ()
    return
  }
}
