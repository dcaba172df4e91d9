// RUN: loom-opt %s --loom-gpu-flatten-parallel-loops | FileCheck %s

// A 2-D parallel loop becomes one dimension of 8 x 64 = 512 iterations.
// CHECK-LABEL: func.func @nest
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[N:.*]]) step
// CHECK-NOT: scf.parallel
func.func @nest(%a: memref<8x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c64) step (%c1, %c1) {
    memref.store %z, %a[%i, %j] : memref<8x64xf32>
  }
  return
}
