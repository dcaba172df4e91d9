// RUN: loom-opt %s --split-input-file --loom-gpu-split-reductions | FileCheck %s

// A row maximum over 1024 (a softmax's): 128 lanes per row, innermost, each
// taking every 128th element (x[p, k * 128 + t]), starting from its first
// (no fill of the partial maxima: the first step yields the element as it
// is, which max(-inf, x) would have given); the row's index rebuilt from
// (k, t); then each row combines its 128 partial maxima with what the
// output held, in lane order.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-DAG: #[[PART:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @row_max
// CHECK: %[[X:.*]] = memref.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [4, 8, 128] : memref<4x1024xf32> into memref<4x8x128xf32>
// CHECK: %[[P:.*]] = memref.alloc() : memref<4x128xf32>
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[PART]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] : memref<4x8x128xf32>) outs(%[[P]] : memref<4x128xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[K:.*]] = linalg.index 2 : index
// CHECK: %[[T:.*]] = linalg.index 1 : index
// CHECK: %[[KT:.*]] = arith.muli %[[K]], %c128
// CHECK: arith.addi %[[KT]], %[[T]]
// CHECK: %[[B:.*]] = arith.addf %[[A]]
// CHECK: %[[M:.*]] = arith.maxnumf %[[B]], %[[ACC]]
// CHECK: %[[STEP:.*]] = linalg.index 2 : index
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[STEP]], %c0
// CHECK: %[[Y:.*]] = arith.select %[[FIRST]], %[[B]], %[[M]] : f32
// CHECK: linalg.yield %[[Y]] : f32
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[P]] : memref<4x128xf32>) outs(%arg1 : memref<4xf32>)
// CHECK-NEXT: ^bb0(%[[IN2:.*]]: f32, %[[OUT2:.*]]: f32):
// CHECK-NEXT: arith.maxnumf %[[IN2]], %[[OUT2]] : f32
// CHECK: memref.dealloc %[[P]]
// CHECK-NOT: linalg.generic
func.func @row_max(%x: memref<4x1024xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x1024xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i64
    %f = arith.sitofp %c : i64 to f32
    %b = arith.addf %a, %f : f32
    %s = arith.maxnumf %b, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A column sum over two dimensions (a layer norm's scale gradient over
// batch and sequence, 512 rows): the rows collapsed and split into 64
// lanes of 8, the lanes outermost so that a warp reads 32 adjacent
// columns; partial sums in [lane, column], added to the output in lane
// order (the operands of the original add kept in their order).
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d2, d0, d1)>
// CHECK-DAG: #[[PART:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[PART2:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @column_sum
// CHECK: memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : memref<8x64x32xbf16> into memref<512x32xbf16>
// CHECK: %[[X:.*]] = memref.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [8, 64, 32] : memref<512x32xbf16> into memref<8x64x32xbf16>
// CHECK: %[[P:.*]] = memref.alloc() : memref<64x32xf32>
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[PART]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] : memref<8x64x32xbf16>) outs(%[[P]] : memref<64x32xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[PART2]], #{{.*}}], iterator_types = ["parallel", "reduction"]} ins(%[[P]] : memref<64x32xf32>) outs(%arg1 : memref<32xf32>)
// CHECK-NEXT: ^bb0(%[[IN2:.*]]: f32, %[[OUT2:.*]]: f32):
// CHECK-NEXT: arith.addf %[[OUT2]], %[[IN2]] : f32
func.func @column_sum(%x: memref<8x64x32xbf16>, %out: memref<32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                   affine_map<(d0, d1, d2) -> (d2)>],
                  iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x : memref<8x64x32xbf16>) outs(%out : memref<32xf32>) {
  ^bb0(%a: bf16, %acc: f32):
    %e = arith.extf %a : bf16 to f32
    %s = arith.addf %acc, %e : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left as they are: a reduction too short for 16 lanes of 8 (64), one whose
// combiner is not a known associative op (a subtraction), and one whose
// input reads the reduction dimension through an expression (a window).
// CHECK-LABEL: func.func @short
// CHECK-NOT: memref.alloc
// CHECK: iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<4x64xf32>)
// CHECK-LABEL: func.func @subtract
// CHECK-NOT: memref.alloc
// CHECK: iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<4x1024xf32>)
// CHECK-LABEL: func.func @window
// CHECK-NOT: memref.alloc
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : memref<4x2048xf32>, memref<1024xf32>)
func.func @short(%x: memref<4x64xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x64xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}
func.func @subtract(%x: memref<4x1024xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x1024xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.subf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}
func.func @window(%x: memref<4x2048xf32>, %w: memref<1024xf32>, %out: memref<4x1024xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1 + d2)>,
                                   affine_map<(d0, d1, d2) -> (d2)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x2048xf32>, memref<1024xf32>) outs(%out : memref<4x1024xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A batch norm's channel statistics: a sum over (n, h, w) per channel, the
// channel between n and h. The trailing group (h, w) = 12544 could take 256
// lanes with n walked by every lane, but 64 channels x 256 lanes are only
// 16,384 threads: n becomes a parallel dimension of stage 1 instead, with
// 64 lanes (64 x 32 x 64 = 131,072 threads, at most max-threads), each
// summing 196 pixels; the lanes innermost (a warp reads adjacent pixels),
// the partial sums [channel, n, lane]. Their 2048 per channel are combined
// in two more stages: 64 lanes of 32 (the steps over (n, lane) in order),
// then each channel's 64 partial sums. No stage fills its partial sums.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d0, d3, d2)>
// CHECK-DAG: #[[PART:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[IN2:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-DAG: #[[PART2:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @channel_sum
// CHECK-NOT: linalg.fill
// CHECK: %[[C:.*]] = memref.collapse_shape %arg0 {{\[\[}}0], [1], [2, 3]] : memref<32x64x112x112xf32> into memref<32x64x12544xf32>
// CHECK: %[[X:.*]] = memref.expand_shape %[[C]] {{\[\[}}0], [1], [2, 3]] output_shape [32, 64, 196, 64]
// CHECK: %[[P:.*]] = memref.alloc() : memref<64x32x64xf32>
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[PART]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[X]] : memref<32x64x196x64xf32>) outs(%[[P]] : memref<64x32x64xf32>)
// CHECK: memref.collapse_shape %[[P]] {{\[\[}}0], [1, 2]] : memref<64x32x64xf32> into memref<64x2048xf32>
// CHECK: %[[P1:.*]] = memref.expand_shape %{{.*}} output_shape [64, 32, 64] : memref<64x2048xf32> into memref<64x32x64xf32>
// CHECK: %[[Q:.*]] = memref.alloc() : memref<64x64xf32>
// CHECK: linalg.generic {indexing_maps = [#[[IN2]], #[[PART2]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[P1]] : memref<64x32x64xf32>) outs(%[[Q]] : memref<64x64xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[Q]] : memref<64x64xf32>) outs(%arg1 : memref<64xf32>)
// CHECK-NOT: linalg.generic
func.func @channel_sum(%x: memref<32x64x112x112xf32>, %out: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d1)>],
                  iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x : memref<32x64x112x112xf32>) outs(%out : memref<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// 14 x 14 = 196 per image has no power-of-two divisor of 16 or more: with
// the batch (4) walked by every lane, the largest divisor leaving 8
// elements per lane, 98 (2 steps x 4 images). Too small for the batch to
// be parallel (8 x 4 x 4 lanes would be 128 threads): two kernels, the
// first element of a lane being its first image's first step.
// CHECK-LABEL: func.func @channel_sum_196
// CHECK: memref.expand_shape %{{.*}} output_shape [4, 8, 2, 98]
// CHECK: memref.alloc() : memref<8x98xf32>
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: %[[N:.*]] = linalg.index 2 : index
// CHECK: %[[N0:.*]] = arith.cmpi eq, %[[N]], %c0
// CHECK: %[[S:.*]] = linalg.index 3 : index
// CHECK: %[[S0:.*]] = arith.cmpi eq, %[[S]], %c0
// CHECK: %[[FIRST:.*]] = arith.andi %[[N0]], %[[S0]] : i1
// CHECK: arith.select %[[FIRST]]
// CHECK: iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : memref<8x98xf32>)
// CHECK-NOT: linalg.generic
func.func @channel_sum_196(%x: memref<4x8x14x14xf32>, %out: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d1)>],
                  iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x : memref<4x8x14x14xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// An outer reduction read inside an expression (a window) is not split.
// CHECK-LABEL: func.func @outer_in_expression
// CHECK-NOT: memref.alloc
func.func @outer_in_expression(%x: memref<8x64x256xf32>, %y: memref<4x256xf32>, %out: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                   affine_map<(d0, d1, d2) -> (d0 floordiv 2, d2)>,
                                   affine_map<(d0, d1, d2) -> (d1)>],
                  iterator_types = ["reduction", "parallel", "reduction"]}
      ins(%x, %y : memref<8x64x256xf32>, memref<4x256xf32>) outs(%out : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
