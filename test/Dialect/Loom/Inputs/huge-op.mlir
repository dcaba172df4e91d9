// Input of size-limits.test: one dimension of 2^31 (one more than allowed).
func.func @f(%x: tensor<2147483648xf32>) -> tensor<2147483648xf32> {
  %e = loom.exp %x : tensor<2147483648xf32>
  return %e : tensor<2147483648xf32>
}
