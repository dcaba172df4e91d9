// Verifier messages of meshes, shardings and the loom.* attributes.
// RUN: loom-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{'loom.mesh' op needs at least one axis}}
loom.mesh @empty []

// -----

// expected-error @+1 {{has two axes named "dp"}}
loom.mesh @twice ["dp"=2, "dp"=4]

// -----

// expected-error @+1 {{mesh axis "dp" must have a positive size, got 0}}
loom.mesh @zero ["dp"=0]

// -----

// expected-error @+1 {{mesh axis needs a non-empty name}}
loom.mesh @noname [""=2]

// -----

// expected-error @+1 {{mesh axis "tp" must have a positive bandwidth (bytes/s)}}
loom.mesh @slow ["tp"=2 {bandwidth = 0.0}]

// -----

// expected-error @+1 {{mesh axis "tp" must have a non-negative latency (s)}}
loom.mesh @past ["tp"=2 {latency = -1.0}]

// -----

// expected-error @+1 {{unknown mesh axis property 'speed' (expected 'bandwidth' or 'latency')}}
loom.mesh @typo ["tp"=2 {speed = 1.0}]

// -----

loom.mesh @m ["dp"=2, "tp"=2]
// expected-error @+1 {{mesh axis "dp" is used more than once in a sharding}}
func.func @axis_twice(%x: tensor<4x4xf32> {loom.sharding = #loom.sharding<@m, [{"dp"}, {"dp"}]>}) {
  return
}

// -----

loom.mesh @m ["dp"=2, "tp"=2]
// expected-error @+1 {{mesh axis "tp" is used more than once in a sharding}}
func.func @partial_and_split(%x: tensor<4x4xf32> {loom.sharding = #loom.sharding<@m, [{"tp"}, {}], partial = sum {"tp"}>}) {
  return
}

// -----

loom.mesh @m ["dp"=2]
// expected-error @+1 {{unknown partial reduction 'avg' (expected sum, max or min)}}
func.func @bad_partial(%x: tensor<4xf32> {loom.sharding = #loom.sharding<@m, [{}], partial = avg {"dp"}>}) {
  return
}

// -----

loom.mesh @m ["dp"=2]
// expected-error @+1 {{'partial' needs at least one mesh axis}}
func.func @empty_partial(%x: tensor<4xf32> {loom.sharding = #loom.sharding<@m, [{}], partial = sum {}>}) {
  return
}

// -----

// expected-error @+1 {{sharding of argument #0 names @nowhere, which is not a loom.mesh in scope}}
func.func @no_mesh(%x: tensor<4xf32> {loom.sharding = #loom.sharding<@nowhere, [{}]>}) {
  return
}

// -----

loom.mesh @m ["dp"=2]
// expected-error @+1 {{sharding of argument #0 has 1 dimensions but the value has 2 ('tensor<4x4xf32>')}}
func.func @rank(%x: tensor<4x4xf32> {loom.sharding = #loom.sharding<@m, [{"dp"}]>}) {
  return
}

// -----

loom.mesh @m ["dp"=2, "tp"=4]
// expected-error @+1 {{sharding of argument #0 uses unknown axis "sp"; mesh @m has "dp", "tp"}}
func.func @unknown_axis(%x: tensor<4xf32> {loom.sharding = #loom.sharding<@m, [{"sp"}]>}) {
  return
}

// -----

loom.mesh @m ["dp"=2, "tp"=4]
// expected-error @+1 {{sharding of argument #0 uses unknown axis "pp"}}
func.func @unknown_partial_axis(%x: tensor<4xf32> {loom.sharding = #loom.sharding<@m, [{}], partial = sum {"pp"}>}) {
  return
}

// -----

loom.mesh @m ["dp"=2, "tp"=4]
// expected-error @+1 {{sharding of argument #0 splits dimension 0 of size 12 over 8 devices ("dp"=2 x "tp"=4), which does not divide it}}
func.func @not_divisible(%x: tensor<12xf32> {loom.sharding = #loom.sharding<@m, [{"dp", "tp"}]>}) {
  return
}

// -----

loom.mesh @m ["dp"=2]
// expected-error @+1 {{sharding of function result #0 splits dimension 0 of size 3 over 2 devices ("dp"=2), which does not divide it}}
func.func @result_not_divisible(%x: tensor<3xf32>) -> (tensor<3xf32> {loom.sharding = #loom.sharding<@m, [{"dp"}]>}) {
  return %x : tensor<3xf32>
}

// -----

loom.mesh @m ["dp"=2]
// expected-error @+1 {{'loom.sharding' on argument #0 must be a #loom.sharding, got "dp"}}
func.func @arg_not_sharding(%x: tensor<4xf32> {loom.sharding = "dp"}) {
  return
}

// -----

loom.mesh @m ["dp"=2]
// expected-error @+1 {{has a sharding on argument #0, which is not a ranked tensor: 'i32'}}
func.func @arg_not_tensor(%x: i32 {loom.sharding = #loom.sharding<@m, []>}) {
  return
}

// -----

// expected-error @+1 {{has unknown loom argument attribute 'loom.shard'}}
func.func @arg_typo(%x: tensor<4xf32> {loom.shard = 1}) {
  return
}

// -----

loom.parameter @w : tensor<8xf32> trainable
// expected-error @+1 {{function result #0 has type 'tensor<4xf32>' but parameter @w has type 'tensor<8xf32>'}}
func.func @result_param(%x: tensor<4xf32>) -> (tensor<4xf32> {loom.param = @w}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{has unknown loom result attribute 'loom.bogus'}}
func.func @result_unknown(%x: tensor<4xf32>) -> (tensor<4xf32> {loom.bogus = 1}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'loom.index_bound' on argument #0 must be a positive integer, got 0 : i64}}
func.func @index_bound_zero(%x: tensor<4xi64> {loom.index_bound = 0}) {
  return
}

// -----

// expected-error @+1 {{'loom.index_bound' on argument #0 needs an integer tensor, got 'tensor<4xf32>'}}
func.func @index_bound_float(%x: tensor<4xf32> {loom.index_bound = 10}) {
  return
}

// -----

// expected-error @+1 {{'loom.param' on argument #0 must be a symbol reference to a loom.parameter}}
func.func @param_not_symbol(%x: tensor<4xf32> {loom.param = "w"}) {
  return
}

// -----

// expected-error @+1 {{'loom.param' on argument #0 names @w, which is not a loom.parameter}}
func.func @param_missing(%x: tensor<4xf32> {loom.param = @w}) {
  return
}

// -----

loom.parameter @w : tensor<8xf32> trainable
// expected-error @+1 {{argument #0 has type 'tensor<4xf32>' but parameter @w has type 'tensor<8xf32>'}}
func.func @param_type(%x: tensor<4xf32> {loom.param = @w}) {
  return
}

// -----

loom.mesh @m ["dp"=2]
func.func @op_sharding_not_attr(%x: tensor<4xf32>) {
  // expected-error @+1 {{'loom.sharding' must be a #loom.sharding or an array of them, got 3 : i64}}
  %0 = loom.exp %x {loom.sharding = 3} : tensor<4xf32>
  return
}

// -----

loom.mesh @m ["dp"=2]
func.func @op_sharding_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'loom.sharding' has 2 entries but the op has 1 results}}
  %0 = loom.exp %x {loom.sharding = [#loom.sharding<@m, [{"dp"}]>, #loom.sharding<@m, [{"dp"}]>]} : tensor<4xf32>
  return
}

// -----

loom.mesh @m ["dp"=2]
func.func @op_sharding_entry(%x: tensor<4xf32>) {
  // expected-error @+1 {{'loom.sharding' entry #0 is not a #loom.sharding: "dp"}}
  %0 = loom.exp %x {loom.sharding = ["dp"]} : tensor<4xf32>
  return
}

// -----

loom.mesh @m ["dp"=2]
func.func @op_sharding_multi_result(%x: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{has 2 results; 'loom.sharding' must be an array with one #loom.sharding per result}}
  %0:2 = loom.dropout %x, %s ratio = 0.5 {loom.sharding = #loom.sharding<@m, [{"dp"}]>}
      : (tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

loom.mesh @m ["dp"=2]
func.func @op_sharding_result(%x: tensor<3xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{sharding of result #1 splits dimension 0 of size 3 over 2 devices}}
  %0:2 = loom.dropout %x, %s ratio = 0.5 {loom.sharding = [#loom.sharding<@m, [{}]>, #loom.sharding<@m, [{"dp"}]>]}
      : (tensor<3xf32>, tensor<i64>) -> (tensor<3xf32>, tensor<3xi1>)
  return
}

// -----

func.func @unknown_op_attr(%x: tensor<4xf32>) {
  // expected-error @+1 {{has unknown loom attribute 'loom.shardings'}}
  %0 = loom.exp %x {loom.shardings = 1} : tensor<4xf32>
  return
}

// -----

loom.mesh @m ["dp"=2]
func.func @constraint(%x: tensor<5xf32>) {
  // expected-error @+1 {{sharding of the operand splits dimension 0 of size 5 over 2 devices ("dp"=2), which does not divide it}}
  %0 = loom.sharding_constraint %x <@m, [{"dp"}]> : tensor<5xf32>
  return
}

// -----

// expected-error @+1 {{external data offset must be non-negative, got -8}}
loom.parameter @w : tensor<4xf32> = #loom.external<"w.bin", offset = -8>

// -----

// expected-error @+1 {{external data needs a file path}}
loom.parameter @w : tensor<4xf32> = #loom.external<"", offset = 0>

// -----

// expected-error @+1 {{'loom.name' on argument #0 must be a non-empty string, got 3 : i64}}
func.func @name_not_string(%x: tensor<4xf32> {loom.name = 3}) {
  return
}

// -----

// expected-error @+1 {{'loom.name' on function result #0 must be a non-empty string, got ""}}
func.func @result_name_empty(%x: tensor<4xf32>) -> (tensor<4xf32> {loom.name = ""}) {
  return %x : tensor<4xf32>
}
