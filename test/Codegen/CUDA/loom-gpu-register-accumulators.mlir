// RUN: loom-opt %s --split-input-file --loom-gpu-register-accumulators | FileCheck %s

// A row sum over two reduction loops (convert-linalg-to-parallel-loops'
// form): the output element is loaded once before the outer loop, carried
// through both, and stored once after; the adds are the same, in the same
// order.
// CHECK-LABEL: func.func @nested
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK-NEXT: %[[A0:.*]] = memref.load %arg1[%[[I]]] : memref<4xf32>
// CHECK-NEXT: %[[R:.*]] = scf.for %{{.*}} iter_args(%[[A:.*]] = %[[A0]]) -> (f32) {
// CHECK-NEXT: %[[R2:.*]] = scf.for %{{.*}} iter_args(%[[B:.*]] = %[[A]]) -> (f32) {
// CHECK-NEXT: %[[X:.*]] = memref.load %arg0
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[B]], %[[X]] : f32
// CHECK-NEXT: scf.yield %[[S]] : f32
// CHECK: scf.yield %[[R2]] : f32
// CHECK: memref.store %[[R]], %arg1[%[[I]]] : memref<4xf32>
// CHECK-NOT: memref.store
func.func @nested(%x: memref<4x8x16xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.for %j = %c0 to %c8 step %c1 {
      scf.for %k = %c0 to %c16 step %c1 {
        %v = memref.load %x[%i, %j, %k] : memref<4x8x16xf32>
        %a = memref.load %out[%i] : memref<4xf32>
        %s = arith.addf %a, %v : f32
        memref.store %s, %out[%i] : memref<4xf32>
      }
    }
    scf.reduce
  }
  return
}

// -----

// Left as they are: a store whose index the loop changes (a scatter-add's
// tokens), a loop that writes a second buffer, and one that reads the
// output at another index.
// CHECK-LABEL: func.func @scatter
// CHECK-NOT: iter_args
// CHECK-LABEL: func.func @two_writes
// CHECK-NOT: iter_args
// CHECK-LABEL: func.func @other_read
// CHECK-NOT: iter_args
func.func @scatter(%u: memref<16xf32>, %idx: memref<16xindex>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %t = %c0 to %c16 step %c1 {
    %i = memref.load %idx[%t] : memref<16xindex>
    %v = memref.load %u[%t] : memref<16xf32>
    %a = memref.load %out[%i] : memref<8xf32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %out[%i] : memref<8xf32>
  }
  return
}
func.func @two_writes(%x: memref<16xf32>, %out: memref<1xf32>, %copy: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %t = %c0 to %c16 step %c1 {
    %v = memref.load %x[%t] : memref<16xf32>
    memref.store %v, %copy[%t] : memref<16xf32>
    %a = memref.load %out[%c0] : memref<1xf32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %out[%c0] : memref<1xf32>
  }
  return
}
func.func @other_read(%x: memref<16xf32>, %out: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %t = %c0 to %c16 step %c1 {
    %v = memref.load %x[%t] : memref<16xf32>
    %b = memref.load %out[%c1] : memref<2xf32>
    %a = memref.load %out[%c0] : memref<2xf32>
    %s = arith.addf %a, %v : f32
    %p = arith.addf %s, %b : f32
    memref.store %p, %out[%c0] : memref<2xf32>
  }
  return
}
