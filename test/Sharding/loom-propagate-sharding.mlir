// RUN: loom-opt %s --split-input-file --loom-propagate-sharding 2>/dev/null | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-propagate-sharding --mlir-print-op-on-diagnostic=false 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// A batch split flows through a matmul, an elementwise op and a reshape that
// splits the feature dimension into heads (the split goes to the major
// factor); a contraction over a split dimension gives a partial sum.
// CHECK-LABEL: func.func @flow
// CHECK: loom.dot_general {{.*}} {loom.sharding = #loom.sharding<@m, [{"dp"}, {"tp"}]>}
// CHECK: loom.gelu {{.*}} {loom.sharding = #loom.sharding<@m, [{"dp"}, {"tp"}]>}
// CHECK: loom.reshape {{.*}} {loom.sharding = #loom.sharding<@m, [{"dp"}, {"tp"}, {}]>} : (tensor<4x16xf32>) -> tensor<4x4x4xf32>
// CHECK: loom.dot_general {{.*}} {loom.sharding = #loom.sharding<@m, [{"dp"}, {}], partial = sum {"tp"}>}
loom.mesh @m ["dp"=2, "tp"=2]
func.func @flow(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>},
                %w: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {"tp"}]>},
                %v: tensor<16x8xf32> {loom.sharding = #loom.sharding<@m, [{"tp"}, {}]>}) -> (tensor<4x4x4xf32>, tensor<4x8xf32>) {
  %h = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %g = loom.gelu %h : tensor<4x16xf32>
  %r = loom.reshape %g : (tensor<4x16xf32>) -> tensor<4x4x4xf32>
  %y = loom.dot_general %g, %v contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %r, %y : tensor<4x4x4xf32>, tensor<4x8xf32>
}

// -----

// Backward: a value constrained later decides an earlier op; a constant
// feeding a split op is split too.
// CHECK-LABEL: func.func @backward
// CHECK: loom.constant {loom.sharding = #loom.sharding<@m, [{"x"}, {}]>} dense
// CHECK: loom.exp {{.*}} {loom.sharding = #loom.sharding<@m, [{"x"}, {}]>}
loom.mesh @m ["x"=2]
func.func @backward(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = loom.constant dense<1.0> : tensor<4x8xf32>
  %e = loom.exp %a : tensor<4x8xf32>
  %s = loom.add %e, %c : tensor<4x8xf32>
  %k = loom.sharding_constraint %s <@m, [{"x"}, {}]> : tensor<4x8xf32>
  return %k : tensor<4x8xf32>
}

// -----

// Operands that disagree: the higher priority (data) wins and the op says
// so; the split weight will be gathered.
// REMARK: :[[@LINE+7]]:8: remark: sharding conflict: operand sharded as #loom.sharding<@m, [{"x"}, {}]> but the op is split as #loom.sharding<@m, [{}, {}]>
// CHECK-LABEL: func.func @conflict
// CHECK: loom.dot_general {{.*}} {loom.sharding = #loom.sharding<@m, [{"x"}, {}]>}
loom.mesh @m ["x"=2]
loom.parameter @w : tensor<8x8xf32> trainable
func.func @conflict(%a: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{"x"}, {}]>},
                    %w: tensor<8x8xf32> {loom.param = @w, loom.sharding = #loom.sharding<@m, [{"x"}, {}]>}) -> tensor<4x8xf32> {
  %y = loom.dot_general %a, %w contracting_dims = [1] x [1] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
