// A bufferization.dealloc of distinct allocations with constant conditions
// becomes one memref.dealloc per allocation (false conditions dropped);
// anything else is left to upstream's passes.
// RUN: loom-opt %s --split-input-file --loom-split-deallocations | FileCheck %s

// CHECK-LABEL: func.func @distinct
// CHECK-SAME: (%[[ARG:.*]]: memref<4xf32>)
// CHECK: %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[B:.*]] = memref.alloc() : memref<2x2xf32>
// CHECK-NOT: bufferization.dealloc
// CHECK: memref.dealloc %[[A]] : memref<4xf32>
// CHECK-NEXT: memref.dealloc %[[B]] : memref<2x2xf32>
// CHECK-NEXT: return
func.func @distinct(%arg: memref<4xf32>) {
  %true = arith.constant true
  %false = arith.constant false
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<2x2xf32>
  %v = memref.collapse_shape %b [[0, 1]] : memref<2x2xf32> into memref<4xf32>
  %base_a, %o1, %s1, %t1 = memref.extract_strided_metadata %a : memref<4xf32> -> memref<f32>, index, index, index
  %base_v, %o2, %s2, %t2 = memref.extract_strided_metadata %v : memref<4xf32> -> memref<f32>, index, index, index
  %base_arg, %o3, %s3, %t3 = memref.extract_strided_metadata %arg : memref<4xf32> -> memref<f32>, index, index, index
  bufferization.dealloc (%base_arg, %base_a, %base_v : memref<f32>, memref<f32>, memref<f32>) if (%false, %true, %true)
  return
}

// -----

// Two buffers of one allocation (freed once by bufferization.dealloc's
// semantics): left alone.
// CHECK-LABEL: func.func @same_allocation
// CHECK: bufferization.dealloc
// CHECK-NOT: memref.dealloc
func.func @same_allocation() {
  %true = arith.constant true
  %a = memref.alloc() : memref<2x2xf32>
  %v = memref.collapse_shape %a [[0, 1]] : memref<2x2xf32> into memref<4xf32>
  bufferization.dealloc (%a, %v : memref<2x2xf32>, memref<4xf32>) if (%true, %true)
  return
}

// -----

// A runtime condition, a retained buffer, a buffer not from memref.alloc:
// left alone.
// CHECK-LABEL: func.func @not_split
// CHECK-COUNT-3: bufferization.dealloc
// CHECK-NOT: memref.dealloc
func.func @not_split(%c: i1, %arg: memref<4xf32>) -> memref<4xf32> {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  bufferization.dealloc (%a : memref<4xf32>) if (%c)
  %r = bufferization.dealloc (%b : memref<4xf32>) if (%true) retain (%arg : memref<4xf32>)
  bufferization.dealloc (%arg : memref<4xf32>) if (%true)
  return %arg : memref<4xf32>
}
