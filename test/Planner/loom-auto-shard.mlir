// loom-auto-shard: plans from the cost model and an ILP, checked against
// exhaustive search, written into the IR, and failing clearly.

// RUN: loom-opt %s --split-input-file --mlir-disable-threading --loom-auto-shard="cluster=%S/Inputs/fast-links.json fixed-mesh=1 brute-force=1 report=text" -o %t.mlir | FileCheck %s --check-prefix=BRUTE
// RUN: FileCheck %s --check-prefix=IR --input-file=%t.mlir
// RUN: loom-opt %s --split-input-file --mlir-disable-threading --loom-auto-shard="cluster=%S/Inputs/fast-links.json fixed-mesh=1 report=json" -o /dev/null | FileCheck %s --check-prefix=JSON
// RUN: not loom-opt %s --split-input-file --mlir-disable-threading --loom-auto-shard="cluster=%S/Inputs/fast-links.json fixed-mesh=1 memory-limit-gib=0.0000001" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOFIT
// RUN: not loom-opt %s --split-input-file --mlir-disable-threading --loom-auto-shard="cluster=no-such-cluster" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADCLUSTER

// The ILP's plan is the best of every combination of candidates (same cost
// model, evaluated independently of the ILP's assembly).
// BRUTE: auto-sharding plan: mesh tp=2 on fast-links
// BRUTE: brute force over {{[0-9]+}} combinations: [[T:.*]] (ILP: [[T]]) equal
// BRUTE: auto-sharding plan: mesh dp=2,tp=2 on fast-links
// BRUTE: brute force over {{[0-9]+}} combinations: [[U:.*]] (ILP: [[U]]) equal
// BRUTE: auto-sharding plan: mesh tp=2 on fast-links
// BRUTE: brute force over {{[0-9]+}} combinations: [[V:.*]] (ILP: [[V]]) equal

// Every argument and forward op carries the plan's sharding.
// IR-LABEL: func.func @mlp
// IR-SAME: loom.sharding = #loom.sharding<@mesh
// IR: loom.dot_general {{.*}}loom.sharding = #loom.sharding<@mesh
// IR: loom.relu {{.*}}loom.sharding = #loom.sharding<@mesh
// IR-LABEL: func.func @dense

// JSON: "mesh": "tp=2"
// JSON: "memory": {
// JSON: "optimizer":
// JSON: "ops": [
// JSON: "sharding":
// JSON: "solver": {
// JSON-NEXT: "bound_s":
// JSON: "status": "optimal"
// JSON: "step_s":

// NOFIT-DAG: error: loom-auto-shard: no sharding of @mlp fits in 107.4 B per device on fast-links {{.*}} the smallest per-device memory found is {{.*}} (mesh tp=2: parameters {{.*}}, gradients {{.*}}, optimizer state {{.*}}, activations {{.*}}, inputs {{.*}}); parameters, gradients and optimizer state dominate. {{.*}} To fit: about {{.*}}x the devices
// NOFIT-DAG: error: loom-auto-shard: no sharding of @dense fits in

// BADCLUSTER: cannot read cluster 'no-such-cluster'{{.*}}expected h100-8x

// RUN: not loom-opt %s --split-input-file --loom-auto-shard="cluster=%S/Inputs/bad-cluster.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADFILE
// BADFILE: bad-cluster.json': level 'link' needs a positive integer "size"
// RUN: not loom-opt %s --split-input-file --loom-auto-shard="cluster=h100-cluster:2x9" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADPRESET
// BADPRESET: cluster 'h100-cluster:2x9': expected NODESxGPUS with 1 to 8 GPUs per node

loom.mesh @mesh ["tp"=2]
loom.parameter @"fc1.weight" : tensor<32x16xf32> trainable
loom.parameter @"fc2.weight" : tensor<16x10xf32> trainable
func.func @mlp(%x: tensor<8x32xf32> {loom.name = "x"},
               %labels: tensor<8xi64> {loom.name = "labels"},
               %w1: tensor<32x16xf32> {loom.param = @"fc1.weight"},
               %w2: tensor<16x10xf32> {loom.param = @"fc2.weight"}) -> tensor<f32> {
  %h = loom.dot_general %x, %w1 contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %a = loom.relu %h : tensor<8x16xf32>
  %o = loom.dot_general %a, %w2 contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x10xf32>) -> tensor<8x10xf32>
  %loss = loom.cross_entropy %o, %labels reduction = mean : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A 2-D mesh.
loom.mesh @mesh ["dp"=2, "tp"=2]
loom.parameter @"w" : tensor<16x8xf32> trainable
func.func @dense(%x: tensor<8x16xf32> {loom.name = "x"},
                 %y: tensor<8x8xf32> {loom.name = "y"},
                 %w: tensor<16x8xf32> {loom.param = @"w"}) -> tensor<f32> {
  %o = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %loss = loom.mse_loss %o, %y reduction = mean : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A user's sharding is a hard constraint: the input stays split by rows.
loom.mesh @mesh ["tp"=2]
loom.parameter @"w" : tensor<16x8xf32> trainable
func.func @constrained(%x: tensor<8x16xf32> {loom.name = "x", loom.sharding = #loom.sharding<@mesh, [{}, {"tp"}]>},
                       %y: tensor<8x8xf32> {loom.name = "y"},
                       %w: tensor<16x8xf32> {loom.param = @"w"}) -> tensor<f32> {
  %o = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %loss = loom.mse_loss %o, %y reduction = mean : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
// IR-LABEL: func.func @constrained
// IR-SAME: loom.sharding = #loom.sharding<@mesh, [{}, {"tp"}]>

// -----

// Repeated layers share variables: three layers, one layer's ILP, and the
// plan is still the best of all combinations.
// BRUTE: auto-sharding plan: mesh tp=2
// BRUTE: graph: 12 nodes, 6 distinct (3 repeated layers of 2 ops)
// BRUTE: brute force over {{[0-9]+}} combinations: [[W:.*]] (ILP: [[W]]) equal
loom.mesh @mesh ["tp"=2]
loom.parameter @"w0" : tensor<16x16xf32> trainable
loom.parameter @"w1" : tensor<16x16xf32> trainable
loom.parameter @"w2" : tensor<16x16xf32> trainable
func.func @layers(%x: tensor<8x16xf32> {loom.name = "x"},
                  %y: tensor<8x16xf32> {loom.name = "y"},
                  %w0: tensor<16x16xf32> {loom.param = @"w0"},
                  %w1: tensor<16x16xf32> {loom.param = @"w1"},
                  %w2: tensor<16x16xf32> {loom.param = @"w2"}) -> tensor<f32> {
  %h0 = loom.dot_general %x, %w0 contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %a0 = loom.relu %h0 : tensor<8x16xf32>
  %h1 = loom.dot_general %a0, %w1 contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %a1 = loom.relu %h1 : tensor<8x16xf32>
  %h2 = loom.dot_general %a1, %w2 contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %a2 = loom.relu %h2 : tensor<8x16xf32>
  %loss = loom.mse_loss %a2, %y reduction = mean : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
