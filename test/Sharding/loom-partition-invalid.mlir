// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-partition

loom.mesh @m ["dp"=4]
// expected-error @+1 {{sharding of argument #0 splits dimension 0 of size 6 over 4 devices ("dp"=4), which does not divide it}}
func.func @indivisible(%x: tensor<6x8xf32> {loom.name = "x", loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>}) -> tensor<6x8xf32> {
  return %x : tensor<6x8xf32>
}

// -----

loom.mesh @m ["dp"=2]
// expected-error @+1 {{result #0 is declared partial (#loom.sharding<@m, [{}], partial = sum {"dp"}>); results must be whole values}}
func.func @partial_result(%x: tensor<4xf32>) -> (tensor<4xf32> {loom.sharding = #loom.sharding<@m, [{}], partial = sum {"dp"}>}) {
  return %x : tensor<4xf32>
}

// -----

loom.mesh @a ["x"=2]
loom.mesh @b ["y"=2]
// expected-error @+1 {{shardings in @two_meshes name more than one mesh}}
func.func @two_meshes(%x: tensor<4xf32> {loom.sharding = #loom.sharding<@a, [{"x"}]>}, %y: tensor<4xf32> {loom.sharding = #loom.sharding<@b, [{"y"}]>}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
