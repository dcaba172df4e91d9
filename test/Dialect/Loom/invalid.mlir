// Every verifier message of loom ops.
// RUN: loom-opt %s --split-input-file --verify-diagnostics

// Constant values must be elements attributes.
func.func @constant_not_elements() {
  // expected-error @+1 {{attribute 'value' failed to satisfy constraint: constant vector/tensor attribute}}
  %0 = "loom.constant"() {value = 1.0 : f32} : () -> tensor<f32>
  return
}

// -----

// The result type of a constant is its value's type.
func.func @constant_wrong_type() {
  // expected-error @+2 {{inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "loom.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<3xf32>
  return
}

// -----

// expected-error @+1 {{trainable parameter must have a floating-point element type, got 'tensor<4xi64>'}}
loom.parameter @steps : tensor<4xi64> trainable

// -----

// expected-error @+1 {{initial value has type 'tensor<3xf32>' but the parameter has type 'tensor<4xf32>'}}
loom.parameter @w : tensor<4xf32> = dense<0.0> : tensor<3xf32>

// -----

// expected-error @+1 {{initial value must be an elements attribute or #loom.external, got "zeros"}}
loom.parameter @w : tensor<4xf32> = "zeros"

// -----

// Optimizer state belongs to a trainable weight.
loom.parameter @b : tensor<4xf32>
// expected-error @+1 {{state_of names @b, which is not a trainable loom.parameter}}
loom.parameter @b.exp_avg : tensor<4xf32> state_of @b

// -----

loom.parameter @w : tensor<4xf32> trainable
// expected-error @+1 {{optimizer state (state_of @w) cannot be trainable}}
loom.parameter @w.exp_avg : tensor<4xf32> trainable state_of @w

// -----

// Unary ops take floats where the math needs them.
func.func @exp_of_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of floating-point values}}
  %0 = loom.exp %x : tensor<4xi32>
  return
}

// -----

// Dynamic shapes are not allowed.
func.func @dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor}}
  %0 = loom.neg %x : tensor<?xf32>
  return
}

// -----

func.func @unary_type_change(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "loom.tanh"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @cast_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %0 = loom.cast %x : tensor<4xf32> to tensor<2x2xf16>
  return
}

// -----

func.func @gelu_bad_mode(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected one of none, tanh, got 'fast'}}
  %0 = loom.gelu %x approximate = fast : tensor<4xf32>
  return
}

// -----

func.func @not_broadcastable(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+3 {{operands are not broadcast-compatible: 'tensor<4x3xf32>' vs 'tensor<4xf32>' (dimension of size 4 against 3)}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.add %a, %b : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @binary_wrong_result(%a: tensor<4x1xf32>, %b: tensor<1x3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.mul %a, %b : (tensor<4x1xf32>, tensor<1x3xf32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @binary_mixed_elements(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{failed to verify that all of {lhs, rhs, result} have same element type}}
  %0 = loom.sub %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @pow_bool(%a: tensor<4xi1>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of 16-bit float}}
  %0 = loom.pow %a, %a : tensor<4xi1>
  return
}

// -----

func.func @div_bool(%a: tensor<4xi1>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<4xi1>'}}
  %0 = loom.div %a, %a : tensor<4xi1>
  return
}

// -----

func.func @max_not_broadcastable(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  // expected-error @+3 {{operands are not broadcast-compatible}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.max %a, %b : (tensor<2xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @min_wrong_result(%a: tensor<2xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.min %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  return
}

// -----

func.func @compare_result_not_bool(%a: tensor<2xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of 1-bit signless integer values}}
  %0 = loom.compare lt, %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @compare_mixed(%a: tensor<2xf32>, %b: tensor<2xi32>) {
  // expected-error @+1 {{failed to verify that all of {lhs, rhs} have same element type}}
  %0 = loom.compare lt, %a, %b : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xi1>
  return
}

// -----

func.func @select_not_broadcastable(%c: tensor<3xi1>, %a: tensor<2xf32>) {
  // expected-error @+3 {{operands are not broadcast-compatible: 'tensor<3xi1>' vs 'tensor<2xf32>' vs 'tensor<2xf32>'}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.select %c, %a, %a : (tensor<3xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @select_cond_not_bool(%c: tensor<2xf32>, %a: tensor<2xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of 1-bit signless integer values}}
  %0 = loom.select %c, %a, %a : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @dot_batch_count(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) {
  // expected-error @+3 {{lhs has 1 batching dimensions but rhs has 0}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "loom.dot_general"(%a, %b) <{lhs_batching_dims = array<i64: 0>, rhs_batching_dims = array<i64>,
      lhs_contracting_dims = array<i64: 2>, rhs_contracting_dims = array<i64: 1>}>
      : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return
}

// -----

func.func @dot_contract_count(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+3 {{lhs has 1 contracting dimensions but rhs has 2}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.dot_general %a, %b contracting_dims = [1] x [0, 1] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @dot_out_of_range(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+3 {{lhs batching/contracting dimension 2 is out of range for rank 2}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.dot_general %a, %b contracting_dims = [2] x [0] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return
}

// -----

func.func @dot_dim_twice(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+3 {{rhs batching/contracting dimension 0 is listed more than once}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.dot_general %a, %b batching_dims = [0] x [0] contracting_dims = [1] x [0]
      : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @dot_size_mismatch(%a: tensor<3x4xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+3 {{lhs dimension 1 (size 4) and rhs dimension 0 (size 5) are paired but differ in size}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.dot_general %a, %b contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<5x6xf32>) -> tensor<3x6xf32>
  return
}

// -----

func.func @dot_wrong_result(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<3x5xf32>' are incompatible with return type(s) of operation 'tensor<5x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.dot_general %a, %b contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<5x3xf32>
  return
}

// -----

func.func @reduce_unsorted(%x: tensor<3x4xf32>) {
  // expected-error @+3 {{reduced dimensions must be sorted}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.reduce_sum %x dims = [1, 0] : (tensor<3x4xf32>) -> tensor<f32>
  return
}

// -----

func.func @reduce_out_of_range(%x: tensor<3x4xf32>) {
  // expected-error @+3 {{reduced dimension 2 is out of range for rank 2}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.reduce_mean %x dims = [2] : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @reduce_twice(%x: tensor<3x4xf32>) {
  // expected-error @+3 {{reduced dimension 1 is listed more than once}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.reduce_max %x dims = [1, 1] : (tensor<3x4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @reduce_keepdims_result(%x: tensor<3x4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<3x1xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.reduce_min %x dims = [1] keepdims : (tensor<3x4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+3 {{filter 'tensor<4x3x3x3xf32>' must have the rank of the input 'tensor<3x8x8xf32>' ([F, C/groups, K1...Kk])}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_groups(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+3 {{groups = 2 must be positive and divide both the 3 input channels and the 4 filters}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 2
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+3 {{filter has 2 input channels per group but the input has 3 channels in 1 group(s)}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_attr_sizes(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+3 {{expects 2 kernel sizes, strides and dilations and 4 paddings [begin..., end...] for 2 spatial dimensions}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.conv %x, %w strides = [1, 1] padding = [0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_zero_stride(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+3 {{kernel sizes, strides and dilations must be positive}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.conv %x, %w strides = [0, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_negative_pad(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+3 {{padding must be non-negative}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.conv %x, %w strides = [1, 1] padding = [-1, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_window_too_big(%x: tensor<1x3x2x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+3 {{window of size 3 (dilation 1) does not fit spatial dimension 2 of size 2 with its padding}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x2x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32>
  return
}

// -----

func.func @conv_wrong_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x4x4x4xf32>' are incompatible with return type(s) of operation 'tensor<1x4x3x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.conv %x, %w strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<3x8xf32>) {
  // expected-error @+3 {{expects a channels-first input [N, C, D1...Dk] with 1 to 3 spatial dimensions, got 'tensor<3x8xf32>'}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.max_pool %x kernel = [2] strides = [2] padding = [0, 0] dilations = [1]
      : (tensor<3x8xf32>) -> tensor<3x4xf32>
  return
}

// -----

// A window whose size arithmetic overflows int64 (libFuzzer found it
// through ONNX's MaxPool, whose attributes the importer now bounds first).
func.func @pool_window_overflow(%x: tensor<1x1x220001xf32>) {
  // expected-error @+3 {{window of size 9223372036854775807 (dilation 10) with its padding over spatial dimension 2 of size 220001 overflows 64-bit sizes}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.max_pool %x kernel = [9223372036854775807] strides = [1] padding = [0, 0] dilations = [10]
      : (tensor<1x1x220001xf32>) -> tensor<1x1x1xf32>
  return
}

// -----

func.func @pool_window_in_padding(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+3 {{the last window along spatial dimension 2 lies entirely in the padding}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.avg_pool %x kernel = [1, 1] strides = [1, 1] padding = [0, 0, 2, 0]
      : (tensor<1x1x4x4xf32>) -> tensor<1x1x6x4xf32>
  return
}

// -----

func.func @pool_kernel_size(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+3 {{expects 2 kernel sizes, strides and dilations and 4 paddings}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.avg_pool %x kernel = [2] strides = [1, 1] padding = [0, 0, 0, 0]
      : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot reshape 'tensor<2x3xf32>' (6 elements) into 'tensor<7xf32>' (7 elements)}}
  %0 = loom.reshape %x : (tensor<2x3xf32>) -> tensor<7xf32>
  return
}

// -----

func.func @reshape_element(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{failed to verify that all of {input, result} have same element type}}
  %0 = loom.reshape %x : (tensor<2x3xf32>) -> tensor<6xf16>
  return
}

// -----

func.func @transpose_length(%x: tensor<2x3xf32>) {
  // expected-error @+3 {{permutation has 3 entries but the input has rank 2}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.transpose %x permutation = [0, 1, 2] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_not_permutation(%x: tensor<2x3xf32>) {
  // expected-error @+3 {{permuted dimension 0 is listed more than once}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.transpose %x permutation = [0, 0] : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @broadcast_dims_length(%x: tensor<3xf32>) {
  // expected-error @+1 {{dims has 2 entries but the input has rank 1}}
  %0 = loom.broadcast %x dims = [0, 1] : (tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @broadcast_dims_range(%x: tensor<3xf32>) {
  // expected-error @+1 {{dims entry 2 is out of range for result rank 2}}
  %0 = loom.broadcast %x dims = [2] : (tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @broadcast_dims_order(%x: tensor<3x3xf32>) {
  // expected-error @+1 {{dims must be strictly increasing}}
  %0 = loom.broadcast %x dims = [1, 0] : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @broadcast_size(%x: tensor<3xf32>) {
  // expected-error @+1 {{input dimension 0 (size 3) cannot broadcast to result dimension 1 (size 4)}}
  %0 = loom.broadcast %x dims = [1] : (tensor<3xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{expected 1 or more operands, but found 0}}
  %0 = "loom.concat"() {axis = 0 : i64} : () -> tensor<0xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+3 {{axis 2 is out of range for rank 2}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.concat %a, %a axis = 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+3 {{operand #1 has rank 1 but operand #0 has rank 2}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.concat %a, %b axis = 0 : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_sizes(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+3 {{operand #1 has size 4 in dimension 1 but operand #0 has 3}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.concat %a, %b axis = 0 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_elements(%a: tensor<2xf32>, %b: tensor<2xf16>) {
  // expected-error @+1 {{requires the same element type for all operands and results}}
  %0 = loom.concat %a, %b axis = 0 : (tensor<2xf32>, tensor<2xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @slice_ranges(%x: tensor<4x4xf32>) {
  // expected-error @+3 {{needs one range per dimension (2), got 1}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.slice %x [0:2] : (tensor<4x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_bounds(%x: tensor<4x4xf32>) {
  // expected-error @+3 {{range 2:5 of dimension 1 is not within [0, 4] in increasing order}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.slice %x [0:4, 2:5] : (tensor<4x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @slice_stride(%x: tensor<4x4xf32>) {
  // expected-error @+3 {{stride of dimension 0 must be positive, got -1}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.slice %x [0:4:-1, 0:4] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @slice_result(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x4xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.slice %x [0:4:2, 0:4] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @gather_axis(%t: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+3 {{axis 2 is out of range for rank 2}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.gather %t[%i] axis = 2 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_float_indices(%t: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of 32-bit signless integer or 64-bit signless integer values}}
  %0 = loom.gather %t[%i] axis = 0 : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @scatter_add_shape(%u: tensor<3x5xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{updates have shape [3, 5] but result and indices need [3, 4]}}
  %0 = loom.scatter_add %u[%i] axis = 0 : (tensor<3x5xf32>, tensor<3xi64>) -> tensor<10x4xf32>
  return
}

// -----

func.func @scatter_add_axis(%u: tensor<3x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{axis 2 is out of range for result rank 2}}
  %0 = loom.scatter_add %u[%i] axis = 2 : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<10x4xf32>
  return
}

// -----

func.func @pad_lengths(%x: tensor<4x4xf32>) {
  // expected-error @+3 {{needs 2 low and high padding amounts, got 1 and 2}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.pad %x low = [1] high = [1, 1] value = 0.0 : f32 : (tensor<4x4xf32>) -> tensor<6x5xf32>
  return
}

// -----

func.func @pad_value_type(%x: tensor<4xf32>) {
  // expected-error @+3 {{padding value must have the element type 'f32'}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.pad %x low = [1] high = [1] value = 0 : i32 : (tensor<4xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @pad_negative(%x: tensor<4xf32>) {
  // expected-error @+3 {{padding amounts must be non-negative}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.pad %x low = [-1] high = [1] value = 0.0 : f32 : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{axis -1 is out of range for rank 2 (axes are normalized to [0, rank))}}
  %0 = loom.softmax %x axis = -1 : tensor<4x8xf32>
  return
}

// -----

func.func @log_softmax_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = loom.log_softmax %x axis = 2 : tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+3 {{axis 2 is out of range for rank 2}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.layer_norm %x, %g, %g axis = 2 epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+3 {{scale and bias must have the shape of the normalized dimensions of 'tensor<4x8xf32>' from axis 1, got 'tensor<4xf32>' and 'tensor<4xf32>'}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.layer_norm %x, %g, %g axis = 1 epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<4xf32>, %c: tensor<4xf32>) {
  // expected-error @+3 {{input must be [N, C, ...], got 'tensor<4xf32>'}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.batch_norm_inference %x, %c, %c, %c, %c epsilon = 1.0e-5
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @batch_norm_channels(%x: tensor<2x3x4x4xf32>, %c: tensor<4xf32>) {
  // expected-error @+3 {{per-channel operands must be [3], got 'tensor<4xf32>'}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = loom.batch_norm_training %x, %c, %c epsilon = 1.0e-5
      : (tensor<2x3x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @dropout_ratio(%x: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+3 {{ratio must be in [0, 1), got 1.000000e+00}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = loom.dropout %x, %s ratio = 1.0 : (tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

func.func @dropout_seed(%x: tensor<4xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{operand #1 must be 0D tensor of 64-bit signless integer values}}
  %0:2 = loom.dropout %x, %s ratio = 0.5 : (tensor<4xf32>, tensor<2xi64>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

func.func @ce_rank(%x: tensor<10xf32>, %l: tensor<1xi64>) {
  // expected-error @+3 {{input must be [N, C, d1, ...], got 'tensor<10xf32>'}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.cross_entropy %x, %l reduction = mean : (tensor<10xf32>, tensor<1xi64>) -> tensor<f32>
  return
}

// -----

func.func @ce_labels(%x: tensor<4x10xf32>, %l: tensor<5xi64>) {
  // expected-error @+3 {{labels 'tensor<5xi64>' do not match input 'tensor<4x10xf32>': expected shape [N, d1, ...] = [4]}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.cross_entropy %x, %l reduction = mean : (tensor<4x10xf32>, tensor<5xi64>) -> tensor<f32>
  return
}

// -----

func.func @nll_weight(%x: tensor<4x10xf32>, %l: tensor<4xi64>, %w: tensor<4xf32>) {
  // expected-error @+3 {{weight must be [C] = [10], got 'tensor<4xf32>'}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.nll_loss %x, %l weight = %w reduction = mean : (tensor<4x10xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @ce_none_result(%x: tensor<4x10xf32>, %l: tensor<4xi64>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.cross_entropy %x, %l reduction = none : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @mse_shapes(%a: tensor<4x1xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{failed to verify that all of {input, target} have same type}}
  %0 = loom.mse_loss %a, %b reduction = mean : (tensor<4x1xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @abs_bool(%x: tensor<4xi1>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8-bit signless integer}}
  %0 = loom.abs %x : tensor<4xi1>
  return
}

// -----

func.func @log_int(%x: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of floating-point values}}
  %0 = loom.log %x : tensor<4xi64>
  return
}

// -----

func.func @sqrt_unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of floating-point values}}
  %0 = "loom.sqrt"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @rsqrt_type_change(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "loom.rsqrt"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @sigmoid_int(%x: tensor<4xi8>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of floating-point values}}
  %0 = loom.sigmoid %x : tensor<4xi8>
  return
}

// -----

func.func @relu_bool(%x: tensor<4xi1>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of 16-bit float or bfloat16 type}}
  %0 = loom.relu %x : tensor<4xi1>
  return
}

// -----

func.func @erf_memref(%x: memref<4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of floating-point values}}
  %0 = "loom.erf"(%x) : (memref<4xf32>) -> memref<4xf32>
  return
}

// -----

func.func @exp_scalar(%x: f32) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of floating-point values}}
  %0 = "loom.exp"(%x) : (f32) -> f32
  return
}

// -----

func.func @cast_unsupported_element(%x: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of floating-point or integer values, but got 'tensor<4xcomplex<f32>>'}}
  %0 = loom.cast %x : tensor<4xf32> to tensor<4xcomplex<f32>>
  return
}

// -----

func.func @conv_4d_spatial(%x: tensor<1x1x2x2x2x2xf32>, %w: tensor<1x1x1x1x1x1xf32>) {
  // expected-error @+3 {{expects a channels-first input [N, C, D1...Dk] with 1 to 3 spatial dimensions}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.conv %x, %w strides = [1, 1, 1, 1] padding = [0, 0, 0, 0, 0, 0, 0, 0] dilations = [1, 1, 1, 1] groups = 1
      : (tensor<1x1x2x2x2x2xf32>, tensor<1x1x1x1x1x1xf32>) -> tensor<1x1x2x2x2x2xf32>
  return
}

// -----

func.func @reduce_prod_order(%x: tensor<3x4xf32>) {
  // expected-error @+3 {{reduced dimensions must be sorted}}
  // expected-error @+2 {{inferred type(s) 'tensor<none>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = loom.reduce_prod %x dims = [1, 0] : (tensor<3x4xf32>) -> tensor<f32>
  return
}

// -----

func.func @floor_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of floating-point values}}
  %0 = loom.floor %x : tensor<4xi32>
  return
}

// -----

func.func @ceil_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of floating-point values}}
  %0 = loom.ceil %x : tensor<4xi32>
  return
}

// -----

func.func @round_type_change(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "loom.round"(%x) : (tensor<4xf32>) -> tensor<4xf64>
  return
}

// -----

func.func @sin_int(%x: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of floating-point values}}
  %0 = loom.sin %x : tensor<4xi64>
  return
}

// -----

func.func @cos_int(%x: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of floating-point values}}
  %0 = loom.cos %x : tensor<4xi64>
  return
}

// -----

func.func @opaque_needs_tensors(%x: tensor<?xf32>) {
  // expected-error @+1 {{operand #0 must be variadic of statically shaped tensor}}
  %0 = loom.opaque "Foo"(%x) {} : (tensor<?xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @max_pool_indices_result(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor (dimensions at most 2^31 - 1, at most 2^46 elements) of 64-bit signless integer values}}
  %0 = loom.max_pool_indices %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xi32>
  return
}

// -----

loom.mesh @m ["dp"=2, "tp"=4]
func.func @collective_unknown_axis(%x: tensor<8xf32>) {
  // expected-error @+1 {{axis "pp" is not an axis of mesh @m}}
  %0 = loom.all_reduce %x over @m ["pp"] reduction = sum : tensor<8xf32>
  return
}

// -----

func.func @collective_no_mesh(%x: tensor<8xf32>) {
  // expected-error @+1 {{names @nope, which is not a loom.mesh}}
  %0 = loom.all_reduce %x over @nope ["dp"] reduction = sum : tensor<8xf32>
  return
}

// -----

loom.mesh @m ["dp"=2, "tp"=4]
func.func @collective_repeated_axis(%x: tensor<8xf32>) {
  // expected-error @+1 {{axis "dp" appears twice}}
  %0 = loom.all_gather %x over @m ["dp", "dp"] dim = 0 : (tensor<8xf32>) -> tensor<32xf32>
  return
}

// -----

loom.mesh @m ["dp"=2, "tp"=4]
func.func @all_gather_size(%x: tensor<8x3xf32>) {
  // expected-error @+1 {{result dimension 0 should be 16, got 8}}
  %0 = loom.all_gather %x over @m ["dp"] dim = 0 : (tensor<8x3xf32>) -> tensor<8x3xf32>
  return
}

// -----

loom.mesh @m ["dp"=2, "tp"=4]
func.func @reduce_scatter_divides(%x: tensor<6x3xf32>) {
  // expected-error @+1 {{dimension 0 (size 6) does not divide into 4 blocks}}
  %0 = loom.reduce_scatter %x over @m ["tp"] dim = 0 reduction = sum : (tensor<6x3xf32>) -> tensor<1x3xf32>
  return
}

// -----

loom.mesh @m ["dp"=2, "tp"=4]
func.func @all_slice_dim(%x: tensor<8xf32>) {
  // expected-error @+1 {{dim 1 is out of range for rank 1}}
  %0 = loom.all_slice %x over @m ["tp"] dim = 1 : (tensor<8xf32>) -> tensor<2xf32>
  return
}

// -----

loom.mesh @m ["dp"=2, "tp"=4]
func.func @send_recv_offset(%x: tensor<8xf32>) {
  // expected-error @+1 {{offset 4 must be nonzero and within (-4, 4), the group size}}
  %0 = loom.send_recv %x over @m ["tp"] offset = 4 : tensor<8xf32>
  return
}

// -----

loom.mesh @m ["dp"=2, "tp"=4]
func.func @send_recv_axis(%x: tensor<8xf32>) {
  // expected-error @+1 {{axis "pp" is not an axis of mesh @m}}
  %0 = loom.send_recv %x over @m ["pp"] offset = 1 : tensor<8xf32>
  return
}

// -----

loom.mesh @m ["dp"=2, "tp"=4]
func.func @all_to_all_split(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{split dimension 1 (size 6) does not divide into 4 blocks}}
  %0 = loom.all_to_all %x over @m ["tp"] split_dim = 1 concat_dim = 0 : (tensor<8x6xf32>) -> tensor<32x1xf32>
  return
}

// -----

func.func @optimization_barrier_memref(%x: memref<8xf32>) {
  // expected-error @+1 {{'loom.optimization_barrier' op operand #0 must be variadic of}}
  %0 = "loom.optimization_barrier"(%x) : (memref<8xf32>) -> memref<8xf32>
  return
}

// -----

func.func @recomputed_on_function() attributes {loom.recomputed = 1 : i64} {
  return
}
// expected-error @-3 {{'loom.recomputed' must be a non-negative integer (a rematerialization segment) on an op}}

// -----

func.func @op_id_negative(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'loom.op_id' must be a non-negative integer (an op number) on an op}}
  %0 = loom.neg %a {loom.op_id = -1 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @vjp_of_on_function() attributes {loom.vjp_of = 1 : i64} {
  return
}
// expected-error @-3 {{'loom.vjp_of' must be a non-negative integer (an op number) on an op}}

// -----

func.func @factors_count(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'loom.factors' names 2 factors; the op's sharding rule has 3}}
  %0 = loom.dot_general %a, %b contracting_dims = [1] x [0] {loom.factors = [[], []]} : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @factors_not_names(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'loom.factors' must be an array with, per factor of the op's sharding rule, an array of mesh axis names}}
  %0 = loom.neg %a {loom.factors = [[1]]} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @cotangent_of_another_type(%g: tensor<4xf32>, %v: tensor<8xf32>) {
  // expected-error @+1 {{failed to verify that all of {gradient, primal, result} have same type}}
  %0 = "loom.cotangent"(%g, %v) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @top_k_rank(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{input must be 1-D, got rank 2}}
  %0 = loom.top_k_indices %x k = 2 : (tensor<4x4xf32>) -> tensor<2xi64>
  return
}

// -----

func.func @top_k_k(%x: tensor<8xf32>) {
  // expected-error @+1 {{k = 9 must be in [1, 8]}}
  %0 = loom.top_k_indices %x k = 9 : (tensor<8xf32>) -> tensor<9xi64>
  return
}

// -----

func.func @top_k_result(%x: tensor<8xf32>) {
  // expected-error @+1 {{result must be tensor<2xi64> (or xi32 for at most 2^31 - 1 elements), got 'tensor<3xi64>'}}
  %0 = loom.top_k_indices %x k = 2 : (tensor<8xf32>) -> tensor<3xi64>
  return
}

// -----

// A started collective's results exist only after its wait.
loom.mesh @m ["dp"=2]
func.func @async_read_early(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{started collective ('loom.async') must be read by one loom.wait only, not by loom.exp}}
  %r = loom.all_reduce %x over @m ["dp"] reduction = sum {loom.async} : tensor<4xf32>
  %e = loom.exp %r : tensor<4xf32>
  %w = loom.wait %r : tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

loom.mesh @m ["dp"=2]
func.func @async_no_wait(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{started collective ('loom.async') needs a later loom.wait of all its results, in order, in its block}}
  %r:2 = loom.all_reduce %x, %x over @m ["dp"] reduction = sum {loom.async} : tensor<4xf32>, tensor<4xf32>
  %w = loom.wait %r#1 : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

loom.mesh @m ["dp"=2]
func.func @async_not_collective(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'loom.async' is a unit attribute of loom.all_reduce, loom.all_gather and loom.reduce_scatter}}
  %r = loom.all_to_all %x over @m ["dp"] split_dim = 0 concat_dim = 0 {loom.async} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

loom.mesh @m ["dp"=2]
func.func @regather_not_collective(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'loom.regather' must be a unit attribute on a collective}}
  %r = loom.exp %x {loom.regather} : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

loom.mesh @m ["dp"=2]
func.func @regather_not_unit(%x: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'loom.regather' must be a unit attribute on a collective}}
  %r = loom.all_gather %x over @m ["dp"] dim = 0 {loom.regather = 1 : i64} : (tensor<2xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @weight_gradient_not_conv(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'loom.weight_gradient' must be a unit attribute on a loom.conv}}
  %r = loom.exp %x {loom.weight_gradient} : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

loom.mesh @m ["dp"=2]
func.func @wait_two(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{started collective ('loom.async') needs a later loom.wait of all its results, in order, in its block}}
  %a = loom.all_reduce %x over @m ["dp"] reduction = sum {loom.async} : tensor<4xf32>
  %b = loom.all_reduce %x over @m ["dp"] reduction = max {loom.async} : tensor<4xf32>
  %w:2 = loom.wait %a, %b : tensor<4xf32>, tensor<4xf32>
  return %w#0, %w#1 : tensor<4xf32>, tensor<4xf32>
}


// -----

// expected-error @+1 {{'loom.pipeline_plan' must be {mesh = "...", stages = S >= 1, schedule = "...", micro_batches = M >= 1, ...} on a module}}
module attributes {loom.pipeline_plan = {mesh = "pp=2", stages = 0 : i64, schedule = "1f1b", micro_batches = 4 : i64}} {
}
