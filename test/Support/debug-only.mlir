// LLVM_DEBUG output works in Loom's tools although Debian's LLVM is a
// release build (loom/Support/Debug.h): -debug-only names the pass.
// RUN: loom-opt %s --loom-apply-strategy=strategy=dp-tp -debug-only=loom-apply-strategy -o /dev/null 2>&1 | FileCheck %s
// RUN: loom-opt %s --loom-apply-strategy=strategy=dp-tp -o /dev/null 2>&1 | FileCheck %s --check-prefix=QUIET --allow-empty

// CHECK: tp: splitting w1 by columns makes a Megatron pair: yes
// CHECK: dp-tp: x #loom.sharding<@m, [{"dp"}, {}]>
// QUIET-NOT: Megatron pair

loom.mesh @m ["dp"=2, "tp"=2]
loom.parameter @w1 : tensor<8x16xf32> trainable
loom.parameter @w2 : tensor<16x8xf32> trainable
func.func @train_step(%x: tensor<4x8xf32> {loom.name = "x"},
                      %w1: tensor<8x16xf32> {loom.param = @w1},
                      %w2: tensor<16x8xf32> {loom.param = @w2}) -> tensor<f32> {
  %h = loom.dot_general %x, %w1 contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = loom.relu %h : tensor<4x16xf32>
  %o = loom.dot_general %a, %w2 contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %l = loom.reduce_sum %o dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
