// loom.top_k_indices on f32 (i32 and i64 positions), f64 and bf16: the
// selection top-k gradient compression sends (checked by check_top_k.py).
func.func @main(%a: tensor<1000xf32> {loom.name = "a"}, %b: tensor<64xf64> {loom.name = "b"},
                %c: tensor<300xf32> {loom.name = "c"})
    -> (tensor<37xi32>, tensor<1000xi64>, tensor<5xi64>, tensor<20xi32>) {
  %0 = loom.top_k_indices %a k = 37 : (tensor<1000xf32>) -> tensor<37xi32>
  %1 = loom.top_k_indices %a k = 1000 : (tensor<1000xf32>) -> tensor<1000xi64>
  %2 = loom.top_k_indices %b k = 5 : (tensor<64xf64>) -> tensor<5xi64>
  %h = loom.cast %c : tensor<300xf32> to tensor<300xbf16>
  %3 = loom.top_k_indices %h k = 20 : (tensor<300xbf16>) -> tensor<20xi32>
  return %0, %1, %2, %3 : tensor<37xi32>, tensor<1000xi64>, tensor<5xi64>, tensor<20xi32>
}
