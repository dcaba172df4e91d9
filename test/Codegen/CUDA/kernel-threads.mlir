// RUN: loom-opt %s --loom-cuda-pipeline="chip=sm_90 format=isa" --mlir-print-ir-after=loom-gpu-name-kernels -o /dev/null 2>&1 | FileCheck %s

// How many threads the kernels of two ops that used to run serially get
// (GPT on an H200: 97 % and then 81 % of the step): a column sum, the
// gradient of a layer norm's scale, is split in two stages
// (loom-gpu-split-reductions): 64 lanes per column, each summing 8 of the
// 512 rows (65,536 threads in 256 blocks; no kernel fills the partial sums
// first: each lane's first row is its start), then one thread per column
// (1024 in 4 blocks) adding its 64 partial sums; not one block walking
// every row. (The first kernel zeroes the output.) A scatter-add, an
// embedding's gradient into 100 rows of 1024, is one thread per (chunk of
// 2 rows, hidden element): 50 x 1024 = 51,200 threads in 200 blocks (the
// CUDA pipeline aims at 65,536), each walking the 256 tokens in order and
// adding those in its chunk; not one thread per hidden element (4 blocks),
// nor one thread for everything.

// CHECK: gpu.func @column_sum_kernel(%{{.*}}: memref<1024xf32>) kernel
// CHECK: gpu.func @column_sum_kernel_0({{.*}}memref<64x1024xf32>, %{{.*}}: memref<8x64x1024xf32>{{.*}}known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 256, 1, 1>
// CHECK: gpu.func @column_sum_kernel_1(%{{.*}}: memref<1024xf32>, %{{.*}}: memref<64x1024xf32>{{.*}}known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 4, 1, 1>
// CHECK-NOT: gpu.func @column_sum_kernel_2
func.func @column_sum(%x: tensor<8x64x1024xf32>) -> tensor<1024xf32> {
  %0 = loom.reduce_sum %x dims = [0, 1] : (tensor<8x64x1024xf32>) -> tensor<1024xf32>
  return %0 : tensor<1024xf32>
}

// CHECK: gpu.func @scatter_add_kernel{{.*}}memref<8x32x1024xf32>{{.*}}known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 200, 1, 1>
// CHECK: memref.subview %{{.*}}[%{{.*}}, %{{.*}}] [2, 1] [1, 1] : memref<100x1024xf32> to memref<2xf32
// CHECK: %[[REL:.*]] = arith.subi
// CHECK-NEXT: %[[IN:.*]] = arith.cmpi ult, %[[REL]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[IN]]
func.func @scatter_add(%u: tensor<8x32x1024xf32>, %i: tensor<8x32xi64>) -> tensor<100x1024xf32> {
  %0 = loom.scatter_add %u[%i] axis = 0 : (tensor<8x32x1024xf32>, tensor<8x32xi64>) -> tensor<100x1024xf32>
  return %0 : tensor<100x1024xf32>
}
