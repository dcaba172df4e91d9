// Every collective, as compiled code, on a 2x2 mesh: checked against numpy by
// check_collectives.py with per-rank inputs.
loom.mesh @m ["dp"=2, "tp"=2]
func.func @main(%x: tensor<4x6xf32> {loom.name = "x"}, %h: tensor<3x4xbf16> {loom.name = "h"},
                %i: tensor<5xi64> {loom.name = "i"})
    -> (tensor<4x6xf32>, tensor<8x6xf32>, tensor<4x3xf32>, tensor<8x3xf32>, tensor<4x3xf32>,
        tensor<4x24xf32>, tensor<3x4xbf16>, tensor<5xi64>, tensor<2x12xf32>, tensor<4x6xf32>, tensor<5xi64>,
        tensor<4x6xf32>, tensor<5xi64>, tensor<4x6xf32>) {
  %0 = loom.all_reduce %x over @m ["tp"] reduction = sum : tensor<4x6xf32>
  %1 = loom.all_gather %x over @m ["dp"] dim = 0 : (tensor<4x6xf32>) -> tensor<8x6xf32>
  %2 = loom.reduce_scatter %x over @m ["tp"] dim = 1 reduction = sum : (tensor<4x6xf32>) -> tensor<4x3xf32>
  %3 = loom.all_to_all %x over @m ["tp"] split_dim = 1 concat_dim = 0 : (tensor<4x6xf32>) -> tensor<8x3xf32>
  %4 = loom.all_slice %x over @m ["dp"] dim = 1 : (tensor<4x6xf32>) -> tensor<4x3xf32>
  %5 = loom.all_gather %x over @m ["tp", "dp"] dim = 1 : (tensor<4x6xf32>) -> tensor<4x24xf32>
  %6 = loom.all_reduce %h over @m ["dp", "tp"] reduction = max : tensor<3x4xbf16>
  %7 = loom.all_reduce %i over @m ["dp"] reduction = min : tensor<5xi64>
  %8 = loom.all_to_all %x over @m ["dp"] split_dim = 0 concat_dim = 1 : (tensor<4x6xf32>) -> tensor<2x12xf32>
  %9, %10 = loom.all_reduce %x, %i over @m ["dp"] reduction = sum : tensor<4x6xf32>, tensor<5xi64>
  %11 = loom.send_recv %x over @m ["tp"] offset = 1 : tensor<4x6xf32>
  %12 = loom.send_recv %i over @m ["dp", "tp"] offset = -1 cyclic : tensor<5xi64>
  %13 = loom.send_recv %x over @m ["tp", "dp"] offset = 2 : tensor<4x6xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13
      : tensor<4x6xf32>, tensor<8x6xf32>, tensor<4x3xf32>, tensor<8x3xf32>, tensor<4x3xf32>,
        tensor<4x24xf32>, tensor<3x4xbf16>, tensor<5xi64>, tensor<2x12xf32>, tensor<4x6xf32>, tensor<5xi64>,
        tensor<4x6xf32>, tensor<5xi64>, tensor<4x6xf32>
}
