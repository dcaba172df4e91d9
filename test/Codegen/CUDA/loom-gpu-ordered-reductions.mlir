// RUN: loom-opt %s --loom-gpu-ordered-reductions | FileCheck %s

// reassoc goes, other flags stay; ops without flags are untouched.
// CHECK-LABEL: func.func @sum
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.subf %{{.*}}, %{{.*}} fastmath<nnan> : f32
// CHECK: arith.addi
func.func @sum(%a: f32, %b: f32, %i: i32) -> (f32, f32, f32, i32) {
  %0 = arith.addf %a, %b fastmath<reassoc> : f32
  %1 = arith.mulf %a, %b fastmath<reassoc,contract> : f32
  %2 = arith.subf %a, %b fastmath<nnan> : f32
  %3 = arith.addi %i, %i : i32
  return %0, %1, %2, %3 : f32, f32, f32, i32
}
