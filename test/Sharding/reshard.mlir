// The resharding library (Sharding/Reshard.h), the one place that decides
// how a value moves between two shardings: loom-partition emits its steps
// and the planner prices them. Each function moves its argument from the
// argument's sharding to the result's; the remark lists the steps and the
// bytes each device sends (ring formulas), which is what the planner pays.

// RUN: loom-opt %s --split-input-file --loom-test-reshard -verify-diagnostics | FileCheck %s

loom.mesh @m ["x"=2, "y"=2]

// Axes appear: a slice, no communication.
// CHECK-LABEL: func.func @split
// CHECK-SAME: (%[[A:.*]]: tensor<8x2xf32>
// CHECK: %[[S:.*]] = loom.all_slice %[[A]] over @m ["y"] dim = 1 : (tensor<8x2xf32>) -> tensor<8x1xf32>
// CHECK: return %[[S]] : tensor<8x1xf32>
// expected-remark @+1 {{reshard [{}, {"x"}] -> [{}, {"x", "y"}]: all_slice [y] dim 1; 0.00 bytes sent per device}}
func.func @split(%a: tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{}, {"x"}]>})
    -> (tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{}, {"x", "y"}]>}) {
  return %a : tensor<8x4xf32>
}

// Axes go away: one all_gather of the axes past the common prefix.
// CHECK-LABEL: func.func @unsplit
// CHECK: loom.all_gather %{{.*}} over @m ["y"] dim = 0 : (tensor<2x4xf32>) -> tensor<4x4xf32>
// CHECK-NOT: loom.
// expected-remark @+1 {{reshard [{"x", "y"}, {}] -> [{"x"}, {}]: all_gather [y] dim 0; 32.00 bytes sent per device}}
func.func @unsplit(%a: tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{"x", "y"}, {}]>})
    -> (tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{"x"}, {}]>}) {
  return %a : tensor<8x4xf32>
}

// The order of axes inside a dimension matters: [x, y] and [y, x] put
// different rows on a device, so the value is gathered and sliced again.
// (The planner used to price this as free; it now pays these 96 bytes.)
// CHECK-LABEL: func.func @axis_order
// CHECK: %[[G:.*]] = loom.all_gather %{{.*}} over @m ["x", "y"] dim = 0 : (tensor<2x4xf32>) -> tensor<8x4xf32>
// CHECK: loom.all_slice %[[G]] over @m ["y", "x"] dim = 0 : (tensor<8x4xf32>) -> tensor<2x4xf32>
// expected-remark @+1 {{reshard [{"x", "y"}, {}] -> [{"y", "x"}, {}]: all_gather [x, y] dim 0, all_slice [y, x] dim 0; 96.00 bytes sent per device}}
func.func @axis_order(%a: tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{"x", "y"}, {}]>})
    -> (tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{"y", "x"}, {}]>}) {
  return %a : tensor<8x4xf32>
}

// An axis moves from the end of one dimension to the end of another.
// CHECK-LABEL: func.func @move
// CHECK: loom.all_to_all %{{.*}} over @m ["x"] split_dim = 1 concat_dim = 0 : (tensor<4x4xf32>) -> tensor<8x2xf32>
// expected-remark @+1 {{reshard [{"x"}, {}] -> [{}, {"x"}]: all_to_all [x] split 1 concat 0; 32.00 bytes sent per device}}
func.func @move(%a: tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{"x"}, {}]>})
    -> (tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{}, {"x"}]>}) {
  return %a : tensor<8x4xf32>
}

// Swapping the axes of two dimensions: two all_to_alls would need a free
// intermediate dimension; the library gathers and slices.
// CHECK-LABEL: func.func @swap
// CHECK: loom.all_gather %{{.*}} over @m ["x"] dim = 0
// CHECK: loom.all_gather %{{.*}} over @m ["y"] dim = 1
// CHECK: loom.all_slice %{{.*}} over @m ["y"] dim = 0
// CHECK: loom.all_slice %{{.*}} over @m ["x"] dim = 1
// expected-remark @+1 {{reshard [{"x"}, {"y"}] -> [{"y"}, {"x"}]: all_gather [x] dim 0, all_gather [y] dim 1, all_slice [y] dim 0, all_slice [x] dim 1; 96.00 bytes sent per device}}
func.func @swap(%a: tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{"x"}, {"y"}]>})
    -> (tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{"y"}, {"x"}]>}) {
  return %a : tensor<8x4xf32>
}

// A partial sum that becomes split is reduce-scattered; the partial axes
// nothing splits are all-reduced.
// CHECK-LABEL: func.func @partial
// CHECK: %[[R:.*]] = loom.reduce_scatter %{{.*}} over @m ["y"] dim = 1 reduction = sum : (tensor<8x4xf32>) -> tensor<8x2xf32>
// CHECK: loom.all_reduce %[[R]] over @m ["x"] reduction = sum : tensor<8x2xf32>
// expected-remark @+1 {{reshard [{}, {}] partial sum {"x", "y"} -> [{}, {"y"}]: reduce_scatter [y] dim 1, all_reduce [x]; 128.00 bytes sent per device}}
func.func @partial(%a: tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = sum {"x", "y"}>})
    -> (tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{}, {"y"}]>}) {
  return %a : tensor<8x4xf32>
}

// Partial over two axes that one dimension wants next: one reduce_scatter
// over both (the group is ordered as the dimension lists them); an axis
// wanted after them is sliced.
// CHECK-LABEL: func.func @partial_two_axes
// CHECK: %[[R:.*]] = loom.reduce_scatter %{{.*}} over @m ["y", "x"] dim = 0 reduction = sum : (tensor<8x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: return %[[R]]
// expected-remark @+1 {{reshard [{}, {}] partial sum {"x", "y"} -> [{"y", "x"}, {}]: reduce_scatter [y, x] dim 0; 96.00 bytes sent per device}}
func.func @partial_two_axes(%a: tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = sum {"x", "y"}>})
    -> (tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{"y", "x"}, {}]>}) {
  return %a : tensor<8x4xf32>
}

// A partial max stays a max.
// CHECK-LABEL: func.func @partial_max
// CHECK: loom.all_reduce %{{.*}} over @m ["x"] reduction = max
// expected-remark @+1 {{reshard [{}] partial max {"x"} -> [{}]: all_reduce [x]; 64.00 bytes sent per device}}
func.func @partial_max(%a: tensor<16xf32> {loom.sharding = #loom.sharding<@m, [{}], partial = max {"x"}>})
    -> (tensor<16xf32> {loom.sharding = #loom.sharding<@m, [{}]>}) {
  return %a : tensor<16xf32>
}

// The same sharding: nothing to do.
// CHECK-LABEL: func.func @same
// CHECK-NEXT: return %arg0 : tensor<4x4xf32>
// expected-remark @+1 {{reshard [{"x"}, {}] -> [{"x"}, {}]: nothing; 0.00 bytes sent per device}}
func.func @same(%a: tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{"x"}, {}]>})
    -> (tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{"x"}, {}]>}) {
  return %a : tensor<8x4xf32>
}

// -----

// A 2x2x2 mesh: the middle axis moves, the outer one stays.
loom.mesh @m3 ["a"=2, "b"=2, "c"=2]
// CHECK-LABEL: func.func @mesh3
// CHECK: loom.all_to_all %{{.*}} over @m3 ["b"] split_dim = 1 concat_dim = 0 : (tensor<2x8xf32>) -> tensor<4x4xf32>
// CHECK: loom.all_slice %{{.*}} over @m3 ["c"] dim = 1 : (tensor<4x4xf32>) -> tensor<4x2xf32>
// expected-remark @+1 {{reshard [{"a", "b"}, {}] -> [{"a"}, {"b", "c"}]: all_to_all [b] split 1 concat 0, all_slice [c] dim 1; 32.00 bytes sent per device}}
func.func @mesh3(%a: tensor<8x8xf32> {loom.sharding = #loom.sharding<@m3, [{"a", "b"}, {}]>})
    -> (tensor<8x8xf32> {loom.sharding = #loom.sharding<@m3, [{"a"}, {"b", "c"}]>}) {
  return %a : tensor<8x8xf32>
}

// -----

// A whole value cannot become a partial one.
loom.mesh @m ["x"=2]
// expected-error @+1 {{cannot reshard: a value cannot become partial}}
func.func @to_partial(%a: tensor<8xf32> {loom.sharding = #loom.sharding<@m, [{}]>})
    -> (tensor<8xf32> {loom.sharding = #loom.sharding<@m, [{}], partial = sum {"x"}>}) {
  return %a : tensor<8xf32>
}
