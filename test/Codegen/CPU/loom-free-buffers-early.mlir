// Each dealloc moves up to just after the last use of its buffer or of a
// view of it; a buffer that leaves the block keeps its place.
// RUN: loom-opt %s --split-input-file --loom-free-buffers-early | FileCheck %s

// CHECK-LABEL: func.func @chain
// CHECK: %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[A]]
// CHECK-NEXT: %[[B:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: linalg.copy ins(%[[A]] {{.*}} outs(%[[B]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: %[[V:.*]] = memref.expand_shape %[[B]]
// CHECK-NEXT: linalg.copy ins(%[[V]] {{.*}} outs(%arg0
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: %[[C:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: memref.dealloc %[[C]]
// CHECK-NEXT: return
func.func @chain(%out: memref<2x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<4xf32>)
  %b = memref.alloc() : memref<4xf32>
  linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
  %v = memref.expand_shape %b [[0, 1]] output_shape [2, 2] : memref<4xf32> into memref<2x2xf32>
  linalg.copy ins(%v : memref<2x2xf32>) outs(%out : memref<2x2xf32>)
  %c = memref.alloc() : memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<4xf32>
  memref.dealloc %c : memref<4xf32>
  return
}

// -----

// A use inside a region counts at the op holding the region.
// CHECK-LABEL: func.func @nested
// CHECK: scf.for
// CHECK: memref.load %[[A:.*]][
// CHECK: }
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: arith.addf
// CHECK-NEXT: return
func.func @nested(%n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4xf32>
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> f32 {
    %x = memref.load %a[%c0] : memref<4xf32>
    %y = arith.addf %acc, %x : f32
    scf.yield %y : f32
  }
  %unrelated = arith.addf %s, %s : f32
  memref.dealloc %a : memref<4xf32>
  return %unrelated : f32
}

// -----

// A view that is returned keeps its buffer alive: the dealloc stays.
// CHECK-LABEL: func.func @escapes
// CHECK: memref.subview
// CHECK-NEXT: arith.constant
// CHECK-NEXT: memref.dealloc
func.func @escapes() -> memref<2xf32, strided<[1], offset: 1>> {
  %a = memref.alloc() : memref<4xf32>
  %v = memref.subview %a[1] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1], offset: 1>>
  %c = arith.constant 1.0 : f32
  memref.dealloc %a : memref<4xf32>
  return %v : memref<2xf32, strided<[1], offset: 1>>
}
