// Ops that cannot be compiled are reported with their name.
// RUN: loom-opt %s --loom-convert-to-linalg --verify-diagnostics

func.func @opaque(%x: tensor<3x3xf32>) -> tensor<f32> {
  // expected-error @+2 {{'loom.opaque' op 'Det' cannot be compiled: Loom has no lowering for it (it was imported with --allow-unsupported)}}
  // expected-error @+1 {{failed to legalize operation 'loom.opaque' that was explicitly marked illegal}}
  %0 = loom.opaque "Det"(%x) {} : (tensor<3x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
