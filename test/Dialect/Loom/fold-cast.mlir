// RUN: loom-opt %s --canonicalize --split-input-file | FileCheck %s

// A splat float constant cast to another float type folds to that type's
// constant, rounded to nearest even (mixed precision's cast of an
// attention scale; each pipeline stage would otherwise compute its own).
// 1/3 in bf16: 0x3EAB (0.333984375); 1 + 2^-8 is a tie in bf16 and rounds
// to the even 1.0; f64 -> f32 -> f64 keeps f32's rounding.
// CHECK-LABEL: func.func @splat
// CHECK-DAG: loom.constant dense<3.339840e-01> : tensor<bf16>
// CHECK-DAG: loom.constant dense<1.000000e+00> : tensor<4xbf16>
// CHECK-DAG: loom.constant dense<0.3333333432674408> : tensor<f64>
// CHECK-NOT: loom.cast
func.func @splat() -> (tensor<bf16>, tensor<4xbf16>, tensor<f64>) {
  %third = loom.constant dense<0.333333343> : tensor<f32>
  %a = loom.cast %third : tensor<f32> to tensor<bf16>
  %tie = loom.constant dense<1.00390625> : tensor<4xf32>
  %b = loom.cast %tie : tensor<4xf32> to tensor<4xbf16>
  %c64 = loom.constant dense<0.3333333333333333> : tensor<f64>
  %c32 = loom.cast %c64 : tensor<f64> to tensor<f32>
  %c = loom.cast %c32 : tensor<f32> to tensor<f64>
  return %a, %b, %c : tensor<bf16>, tensor<4xbf16>, tensor<f64>
}

// -----

// Not folded: a constant that is not a splat, integer casts, a value.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: loom.cast
func.func @kept(%x: tensor<2xf32>) -> (tensor<2xbf16>, tensor<f32>, tensor<2xbf16>) {
  %v = loom.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %a = loom.cast %v : tensor<2xf32> to tensor<2xbf16>
  %i = loom.constant dense<3> : tensor<i64>
  %b = loom.cast %i : tensor<i64> to tensor<f32>
  %c = loom.cast %x : tensor<2xf32> to tensor<2xbf16>
  return %a, %b, %c : tensor<2xbf16>, tensor<f32>, tensor<2xbf16>
}
