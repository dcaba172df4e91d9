// The factor rule of every loom op, checked against the op's types.
// RUN: loom-opt %s --split-input-file --loom-print-sharding-rules --mlir-print-op-on-diagnostic=false --verify-diagnostics -o /dev/null

// Elementwise ops: one parallel factor per result dimension; size-1 and
// broadcast dimensions get none.
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>, %c: tensor<4x1xi1>) {
  // expected-remark @+1 {{sharding rule: () -> ([i]) {i=8}}}
  %k = loom.constant dense<1.0> : tensor<8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %0 = loom.neg %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %1 = loom.abs %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %2 = loom.exp %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %3 = loom.log %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %4 = loom.sqrt %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %5 = loom.rsqrt %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %6 = loom.tanh %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %7 = loom.sigmoid %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %8 = loom.relu %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %9 = loom.erf %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %f0 = loom.floor %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %f1 = loom.ceil %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %f2 = loom.round %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %f3 = loom.sin %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %f4 = loom.cos %a : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %10 = loom.gelu %a approximate = tanh : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %11 = loom.cast %a : tensor<4x8xf32> to tensor<4x8xf16>
  // expected-remark @+1 {{sharding rule: ([i, j], [j]) -> ([i, j]) {i=4, j=8}}}
  %12 = loom.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j], [j]) -> ([i, j]) {i=4, j=8}}}
  %13 = loom.sub %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j], [j]) -> ([i, j]) {i=4, j=8}}}
  %14 = loom.mul %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j], [j]) -> ([i, j]) {i=4, j=8}}}
  %15 = loom.div %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j], [j]) -> ([i, j]) {i=4, j=8}}}
  %16 = loom.pow %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j], [j]) -> ([i, j]) {i=4, j=8}}}
  %17 = loom.max %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j], [j]) -> ([i, j]) {i=4, j=8}}}
  %18 = loom.min %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j], []) -> ([i, j]) {i=4, j=8}}}
  %19 = loom.compare ge, %a, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
  // expected-remark @+1 {{sharding rule: ([i, 1], [i, j], [j]) -> ([i, j]) {i=4, j=8}}}
  %20 = loom.select %c, %a, %b : (tensor<4x1xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Contractions reduce over contracting factors; reductions over reduced
// dimensions, with their combiner.
func.func @contraction_and_reduction(%x: tensor<2x8x16xf32>, %w: tensor<16x32xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j, k], [k, l]) -> ([i, j, l]) {i=2, j=8, k=16, l=32} reduction={k:sum}}}
  %0 = loom.dot_general %x, %w contracting_dims = [2] x [0] : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, k]) -> ([i, k]) {i=2, j=8, k=16} reduction={j:sum}}}
  %1 = loom.reduce_sum %x dims = [1] : (tensor<2x8x16xf32>) -> tensor<2x16xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, k]) -> ([i, 1, k]) {i=2, j=8, k=16} reduction={j:sum}}}
  %2 = loom.reduce_mean %x dims = [1] keepdims : (tensor<2x8x16xf32>) -> tensor<2x1x16xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, k]) -> ([]) {i=2, j=8, k=16} reduction={i:max, j:max, k:max}}}
  %3 = loom.reduce_max %x dims = [0, 1, 2] : (tensor<2x8x16xf32>) -> tensor<f32>
  // expected-remark @+1 {{sharding rule: ([i, j, k]) -> ([j, k]) {i=2, j=8, k=16} reduction={i:min}}}
  %4 = loom.reduce_min %x dims = [0] : (tensor<2x8x16xf32>) -> tensor<8x16xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, k]) -> ([i, j]) {i=2, j=8, k=16} reduction={k:prod}}}
  %5 = loom.reduce_prod %x dims = [2] : (tensor<2x8x16xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Windows overlap: spatial dimensions stay whole.
func.func @windows(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %g: tensor<4x2x3x3xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, k, l, m], [j, k, n, o]) -> ([i, j, p, q]) {i=2, j=6, k=4, l=8, m=8, n=3, o=3, p=8, q=8} reduction={k:sum} replicated={l, m, n, o, p, q}}}
  %0 = loom.conv %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x8x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, k, m, n], [j, l, o, p]) -> ([i, j, q, r]) {i=2, j=4, k=4, l=2, m=8, n=8, o=3, p=3, q=8, r=8} replicated={j, k, l, m, n, o, p, q, r}}}
  %1 = loom.conv %x, %g strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 2
      : (tensor<2x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<2x4x8x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, k, l]) -> ([i, j, m, n]) {i=2, j=4, k=8, l=8, m=4, n=4} replicated={k, l, m, n}}}
  %2 = loom.max_pool %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : (tensor<2x4x8x8xf32>) -> tensor<2x4x4x4xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, k, l]) -> ([i, j, m, n]) {i=2, j=4, k=8, l=8, m=4, n=4} replicated={k, l, m, n}}}
  %i = loom.max_pool_indices %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : (tensor<2x4x8x8xf32>) -> tensor<2x4x4x4xi64>
  // expected-remark @+1 {{sharding rule: ([i, j, k, l]) -> ([i, j, m, n]) {i=2, j=4, k=8, l=8, m=4, n=4} replicated={k, l, m, n}}}
  %3 = loom.avg_pool %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0]
      : (tensor<2x4x8x8xf32>) -> tensor<2x4x4x4xf32>
  return
}

// -----

// Data movement.
func.func @shapes(%x: tensor<2x3x4xf32>, %b: tensor<4xf32>, %t: tensor<10x4xf32>, %i: tensor<2x3xi64>) {
  // expected-remark @+1 {{sharding rule: ([i, j, k]) -> ([i*j, k]) {i=2, j=3, k=4}}}
  %0 = loom.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, k]) -> ([k, i, j]) {i=2, j=3, k=4}}}
  %1 = loom.transpose %x permutation = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // expected-remark @+1 {{sharding rule: ([k]) -> ([i, j, k]) {i=2, j=3, k=4}}}
  %2 = loom.broadcast %b dims = [2] : (tensor<4xf32>) -> tensor<2x3x4xf32>
  // expected-remark @+1 {{sharding rule: ([k, i, j], [l, i, j]) -> ([m, i, j]) {i=3, j=4, k=2, l=2, m=4} replicated={k, l, m}}}
  %3 = loom.concat %x, %2 axis = 0 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<4x3x4xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, l]) -> ([i, k, m]) {i=2, j=3, k=2, l=4, m=2} replicated={j, k, l, m}}}
  %4 = loom.slice %x [0:2, 1:3, 0:4:3] : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  // expected-remark @+1 {{sharding rule: ([i, l], [j, k]) -> ([j, k, l]) {i=10, j=2, k=3, l=4} replicated={i}}}
  %5 = loom.gather %t[%i] axis = 0 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  // Scatter-add: index dimensions are reductions (partial sums).
  // expected-remark @+1 {{sharding rule: ([j, k, l], [j, k]) -> ([i, l]) {i=10, j=2, k=3, l=4} reduction={j:sum, k:sum} replicated={i}}}
  %7 = loom.scatter_add %5[%i] axis = 0 : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, l]) -> ([i, k, m]) {i=2, j=3, k=4, l=4, m=6} replicated={j, k, l, m}}}
  %6 = loom.pad %x low = [0, 1, 0] high = [0, 0, 2] value = 0.0 : f32 : (tensor<2x3x4xf32>) -> tensor<2x4x6xf32>
  return
}

// -----

// Normalization, dropout, losses.
func.func @nn(%x: tensor<2x3x4xf32>, %g: tensor<3x4xf32>, %img: tensor<2x3x5x5xf32>, %c: tensor<3xf32>,
              %seed: tensor<i64>, %logits: tensor<4x10xf32>, %labels: tensor<4xi64>, %p: tensor<4x2xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j, k]) -> ([i, j, k]) {i=2, j=3, k=4} replicated={k}}}
  %0 = loom.softmax %x axis = 2 : tensor<2x3x4xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, k]) -> ([i, j, k]) {i=2, j=3, k=4} replicated={i}}}
  %1 = loom.log_softmax %x axis = 0 : tensor<2x3x4xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, k], [j, k], [j, k]) -> ([i, j, k]) {i=2, j=3, k=4} replicated={j, k}}}
  %2 = loom.layer_norm %x, %g, %g axis = 1 epsilon = 1.0e-5 : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, k, l], [j], [j], [j], [j]) -> ([i, j, k, l]) {i=2, j=3, k=5, l=5}}}
  %3 = loom.batch_norm_inference %img, %c, %c, %c, %c epsilon = 1.0e-5
      : (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x5x5xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, k, l], [j], [j]) -> ([i, j, k, l], [j], [j]) {i=2, j=3, k=5, l=5} replicated={i, k, l}}}
  %4:3 = loom.batch_norm_training %img, %c, %c epsilon = 1.0e-5
      : (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>)
  // expected-remark @+1 {{sharding rule: ([i, j, k], []) -> ([i, j, k], [i, j, k]) {i=2, j=3, k=4}}}
  %5:2 = loom.dropout %x, %seed ratio = 0.1 : (tensor<2x3x4xf32>, tensor<i64>) -> (tensor<2x3x4xf32>, tensor<2x3x4xi1>)
  // expected-remark @+1 {{sharding rule: ([i, j], [i]) -> ([]) {i=4, j=10} reduction={i:sum} replicated={j}}}
  %6 = loom.cross_entropy %logits, %labels reduction = mean : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  // expected-remark @+1 {{sharding rule: ([i, j], [i]) -> ([i]) {i=4, j=10} replicated={j}}}
  %7 = loom.nll_loss %logits, %labels reduction = none : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
  // expected-remark @+1 {{sharding rule: ([i, j], [i, j]) -> ([]) {i=4, j=2} reduction={i:sum, j:sum}}}
  %8 = loom.mse_loss %p, %p reduction = mean : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<f32>
  // expected-remark @+1 {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=2}}}
  %9 = loom.mse_loss %p, %p reduction = none : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

// Constraints are identities; meshes and parameters have no values and get
// no remark.
loom.mesh @m ["dp"=2]
loom.parameter @w : tensor<4xf32> trainable
func.func @annotations(%x: tensor<4x8xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %0 = loom.sharding_constraint %x <@m, [{"dp"}, {}]> : tensor<4x8xf32>
  return
}

// -----

// Nothing is known about an opaque op: every dimension stays whole.
func.func @opaque(%b: tensor<2x4xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([k]) {i=2, j=4, k=3} replicated={i, j, k}}}
  %0 = loom.opaque "Foo"(%b) {} : (tensor<2x4xf32>) -> tensor<3xi64>
  return
}
