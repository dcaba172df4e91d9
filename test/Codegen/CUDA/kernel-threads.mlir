// RUN: loom-opt %s --loom-cuda-pipeline="chip=sm_90 format=isa" --mlir-print-ir-after=loom-gpu-name-kernels -o /dev/null 2>&1 | FileCheck %s

// How many threads the kernels of two ops that used to run serially get
// (GPT on an H200: 97 % and then 81 % of the step): a column sum, the
// gradient of a layer norm's scale, is split in two stages
// (loom-gpu-split-reductions): 64 lanes per column, each summing 8 of the
// 512 rows (65,536 threads in 256 blocks, after the partial sums are set to
// -0.0), then one thread per column (1024 in 4 blocks) adding its 64
// partial sums; not one block walking every row. A scatter-add, an
// embedding's gradient, is one thread per hidden element (its tokens summed
// in order inside), not one thread for everything.

// CHECK: gpu.func @column_sum_kernel_0({{.*}}memref<64x1024xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 256, 1, 1>
// CHECK: gpu.func @column_sum_kernel_1({{.*}}memref<64x1024xf32>, %{{.*}}: memref<8x64x1024xf32>{{.*}}known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 256, 1, 1>
// CHECK: gpu.func @column_sum_kernel_2(%{{.*}}: memref<1024xf32>, %{{.*}}: memref<64x1024xf32>{{.*}}known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 4, 1, 1>
func.func @column_sum(%x: tensor<8x64x1024xf32>) -> tensor<1024xf32> {
  %0 = loom.reduce_sum %x dims = [0, 1] : (tensor<8x64x1024xf32>) -> tensor<1024xf32>
  return %0 : tensor<1024xf32>
}

// CHECK: gpu.func @scatter_add_kernel{{.*}}memref<8x32x1024xf32>{{.*}}known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 4, 1, 1>
func.func @scatter_add(%u: tensor<8x32x1024xf32>, %i: tensor<8x32xi64>) -> tensor<100x1024xf32> {
  %0 = loom.scatter_add %u[%i] axis = 0 : (tensor<8x32x1024xf32>, tensor<8x32xi64>) -> tensor<100x1024xf32>
  return %0 : tensor<100x1024xf32>
}
