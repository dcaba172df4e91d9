// RUN: loom-opt %s --loom-split-functions="max-ops=16" | FileCheck %s
// RUN: loom-opt %s --loom-split-functions="max-ops=4" | FileCheck %s --check-prefix=STACK
// RUN: loom-opt %s --loom-split-functions="max-ops=0" | FileCheck %s --check-prefix=OFF

// Six identical "layers": cut at the same content-chosen points in each, so
// the first and last (whose result is used) share one function and the
// four in between another; the C-interface entry becomes internal; each
// function clones the constants it uses; calls are no_inline.
// CHECK-LABEL: func.func private @step_part0(%arg0: memref<4xf32>) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>, no_inline}
// CHECK-DAG:     arith.constant 0 : index
// CHECK-DAG:     arith.constant 2.000000e+00 : f32
// CHECK:         memref.alloc()
// CHECK:         memref.dealloc
// CHECK:         return %{{.*}} : f32
// CHECK-LABEL: func.func private @step_part1(%arg0: memref<4xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, no_inline}
// CHECK-LABEL: func.func private @step_part6(%arg0: f32)
// CHECK:         memref.alloca()
// CHECK-LABEL: func.func @step(%arg0: memref<4xf32>, %arg1: memref<4xf32>) -> f32 attributes {llvm.emit_c_interface, llvm.linkage = #llvm.linkage<internal>}
// CHECK:         %[[FIRST:.*]] = call @step_part0(%arg0) {no_inline} : (memref<4xf32>) -> f32
// CHECK-COUNT-4: call @step_part1(%arg0) {no_inline}
// CHECK-NEXT:    %[[LAST:.*]] = call @step_part0(%arg0) {no_inline}
// CHECK-NEXT:    call @step_part6(%[[LAST]]) {no_inline}
// CHECK-NEXT:    return %[[FIRST]] : f32
// A function under the limit is left alone.
// CHECK-LABEL: func.func @small(
// CHECK-NOT:     call
// CHECK:         linalg.fill

// Stack memory does not leave the function that allocates it: the run
// holding the alloca extends to its last use.
// STACK-LABEL: func.func private @stack_part0(%arg0: memref<4xf32>) -> (f32, f32)
// STACK:         memref.alloca()
// STACK:         linalg.fill
// STACK:         %[[R:.*]] = memref.load %alloca
// STACK:         return %{{.*}}, %[[R]] : f32, f32
// STACK-LABEL: func.func @stack(
// STACK:         call @stack_part0
// STACK-NEXT:    call @stack_part1

// OFF-NOT: _part

func.func @step(%a: memref<4xf32>, %b: memref<4xf32>) -> f32 attributes {llvm.emit_c_interface} {
  %c = arith.constant 2.0 : f32
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %x0 = memref.load %a[%i0] : memref<4xf32>
  %y0 = arith.mulf %x0, %c : f32
  %t0 = memref.alloc() : memref<4xf32>
  linalg.fill ins(%y0 : f32) outs(%t0 : memref<4xf32>)
  %z0 = memref.load %t0[%i1] : memref<4xf32>
  memref.dealloc %t0 : memref<4xf32>
  memref.store %z0, %a[%i0] : memref<4xf32>
  %x1 = memref.load %a[%i0] : memref<4xf32>
  %y1 = arith.mulf %x1, %c : f32
  %t1 = memref.alloc() : memref<4xf32>
  linalg.fill ins(%y1 : f32) outs(%t1 : memref<4xf32>)
  %z1 = memref.load %t1[%i1] : memref<4xf32>
  memref.dealloc %t1 : memref<4xf32>
  memref.store %z1, %a[%i0] : memref<4xf32>
  %x2 = memref.load %a[%i0] : memref<4xf32>
  %y2 = arith.mulf %x2, %c : f32
  %t2 = memref.alloc() : memref<4xf32>
  linalg.fill ins(%y2 : f32) outs(%t2 : memref<4xf32>)
  %z2 = memref.load %t2[%i1] : memref<4xf32>
  memref.dealloc %t2 : memref<4xf32>
  memref.store %z2, %a[%i0] : memref<4xf32>
  %x3 = memref.load %a[%i0] : memref<4xf32>
  %y3 = arith.mulf %x3, %c : f32
  %t3 = memref.alloc() : memref<4xf32>
  linalg.fill ins(%y3 : f32) outs(%t3 : memref<4xf32>)
  %z3 = memref.load %t3[%i1] : memref<4xf32>
  memref.dealloc %t3 : memref<4xf32>
  memref.store %z3, %a[%i0] : memref<4xf32>
  %x4 = memref.load %a[%i0] : memref<4xf32>
  %y4 = arith.mulf %x4, %c : f32
  %t4 = memref.alloc() : memref<4xf32>
  linalg.fill ins(%y4 : f32) outs(%t4 : memref<4xf32>)
  %z4 = memref.load %t4[%i1] : memref<4xf32>
  memref.dealloc %t4 : memref<4xf32>
  memref.store %z4, %a[%i0] : memref<4xf32>
  %x5 = memref.load %a[%i0] : memref<4xf32>
  %y5 = arith.mulf %x5, %c : f32
  %t5 = memref.alloc() : memref<4xf32>
  linalg.fill ins(%y5 : f32) outs(%t5 : memref<4xf32>)
  %z5 = memref.load %t5[%i1] : memref<4xf32>
  memref.dealloc %t5 : memref<4xf32>
  memref.store %z5, %a[%i0] : memref<4xf32>
  %s = memref.alloca() : memref<4xf32>
  linalg.fill ins(%z5 : f32) outs(%s : memref<4xf32>)
  %r = memref.load %s[%i1] : memref<4xf32>
  return %z0 : f32
}

func.func @small(%a: memref<4xf32>) {
  %c = arith.constant 2.0 : f32
  linalg.fill ins(%c : f32) outs(%a : memref<4xf32>)
  return
}

func.func @stack(%a: memref<4xf32>) -> f32 {
  %i0 = arith.constant 0 : index
  %s = memref.alloca() : memref<4xf32>
  %x = memref.load %a[%i0] : memref<4xf32>
  linalg.fill ins(%x : f32) outs(%s : memref<4xf32>)
  %y = memref.load %a[%i0] : memref<4xf32>
  %z = arith.addf %x, %y : f32
  %w = arith.mulf %z, %z : f32
  %v = arith.addf %w, %z : f32
  %u = arith.mulf %v, %w : f32
  %r = memref.load %s[%i0] : memref<4xf32>
  %q = arith.addf %r, %u : f32
  return %q : f32
}
