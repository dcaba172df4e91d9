// RUN: loom-opt %s --loom-gpu-serial-kernels | FileCheck %s

// A reduction over every dimension (no parallel loop) and the scalar code
// after it become one one-iteration loop: a one-thread kernel. The scalar
// constant the host uses later is recomputed outside.
// CHECK-LABEL: func.func @serial
// CHECK: %[[K:.*]] = arith.addf
// CHECK: scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c1{{.*}}) step (%c1{{.*}}) {
// CHECK: scf.for
// CHECK: memref.load
// CHECK: arith.divf
// CHECK: memref.store
// CHECK: }
// CHECK: call @use(%[[K]])
func.func private @use(f32)
func.func @serial(%x: memref<8xf32>, %acc: memref<f32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  memref.store %z, %acc[] : memref<f32>
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    %s = memref.load %acc[] : memref<f32>
    %t = arith.addf %s, %v : f32
    memref.store %t, %acc[] : memref<f32>
  }
  %k = arith.addf %two, %two : f32
  %sum = memref.load %acc[] : memref<f32>
  %mean = arith.divf %sum, %k : f32
  memref.store %mean, %out[] : memref<f32>
  func.call @use(%k) : (f32) -> ()
  return
}

// A conditional free and a loop that calls the host stay on the host.
// CHECK-LABEL: func.func @host_only
// CHECK-NOT: scf.parallel
// CHECK: scf.if
// CHECK: gpu.dealloc
// CHECK: scf.for
// CHECK: call @host
func.func private @host(index)
func.func @host_only(%c: i1, %m: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.if %c {
    gpu.dealloc %m : memref<4xf32>
  }
  scf.for %i = %c0 to %c4 step %c1 {
    func.call @host(%i) : (index) -> ()
  }
  return
}
