// A small model for loom-run's command-line contract: one input, one
// parameter held in a dense_resource, two outputs.
loom.parameter @w : tensor<3x2xf32> = dense_resource<w_blob> : tensor<3x2xf32> trainable
func.func @main(%x: tensor<2x3xf32> {loom.name = "x"}, %w: tensor<3x2xf32> {loom.param = @w})
    -> (tensor<2x2xf32> {loom.name = "y"}, tensor<2xf32> {loom.name = "rowsum"}) {
  %y = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %s = loom.reduce_sum %y dims = [1] : (tensor<2x2xf32>) -> tensor<2xf32>
  return %y, %s : tensor<2x2xf32>, tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w_blob: "0x04000000000080BF0000004000000040000000000000803F0000C03F"
    }
  }
#-}
