// RUN: loom-opt %s --loom-approximate-math | FileCheck %s

// f32 exp, erf and tanh become straight-line arithmetic (no call for the
// loop vectorizer to stop at); log stays math.log (libm: MLIR's polynomial
// log treats subnormal inputs as normal), as do sin and f64 ops.
// CHECK-LABEL: func.func @approximated
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK-NOT: math.tanh
// CHECK: math.log %{{.*}} : f32
// CHECK: math.sin %{{.*}} : f32
// CHECK: math.exp %{{.*}} : f64
func.func @approximated(%x: f32, %d: f64) -> (f32, f32, f32, f32, f32, f64) {
  %e = math.exp %x : f32
  %r = math.erf %x : f32
  %t = math.tanh %x : f32
  %l = math.log %x : f32
  %s = math.sin %x : f32
  %ed = math.exp %d : f64
  return %e, %r, %t, %l, %s, %ed : f32, f32, f32, f32, f32, f64
}
