// RUN: loom-opt %s --split-input-file --loom-gpu-contiguous-lanes | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-gpu-contiguous-lanes="assume-alignment=false" | FileCheck %s --check-prefix=NOALIGN

// bf16 in, f32 out, a row broadcast: 8 contiguous elements per thread (16
// bytes of bf16): one vector load of the input (aligned to 16 bytes),
// the body once per element reading its lane, the broadcast row loaded
// as before (the repeated loads are one for LLVM), and one vector store of
// the 8 results after everything else.
// CHECK-LABEL: func.func @widen_add
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%c0, %c0) to (%c4, %[[C16:.*]]) step
// CHECK: %[[J0:.*]] = arith.muli %[[J]], %c8{{.*}} overflow<nsw, nuw>
// CHECK: %[[X:.*]] = vector.load %arg0[%[[I]], %[[J0]]] {alignment = 16 : i64} : memref<4x128xbf16>, vector<8xbf16>
// CHECK: vector.extract %[[X]][0]
// CHECK: memref.load %arg1[%[[I]]] : memref<4xf32>
// CHECK: arith.extf
// CHECK: arith.addf
// CHECK: vector.extract %[[X]][7]
// CHECK-NOT: memref.store
// CHECK: %[[Y:.*]] = vector.from_elements %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NEXT: vector.store %[[Y]], %arg2[%[[I]], %[[J0]]] {alignment = 16 : i64} : memref<4x128xf32>, vector<8xf32>
// CHECK-NEXT: scf.reduce
// NOALIGN-LABEL: func.func @widen_add
// NOALIGN-NOT: alignment
// NOALIGN: to (%c4, %{{.*}}) step
// NOALIGN: vector.load %arg0{{.*}} : memref<4x128xbf16>, vector<8xbf16>
// NOALIGN: vector.store %{{.*}}, %arg2{{.*}} : memref<4x128xf32>, vector<8xf32>
func.func @widen_add(%x: memref<4x128xbf16>, %r: memref<4xf32>, %y: memref<4x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c128) step (%c1, %c1) {
    %a = memref.load %x[%i, %j] : memref<4x128xbf16>
    %b = memref.load %r[%i] : memref<4xf32>
    %e = arith.extf %a : bf16 to f32
    %s = arith.addf %e, %b : f32
    memref.store %s, %y[%i, %j] : memref<4x128xf32>
  }
  return
}

// -----

// f32 rows of 12: 4 lanes (16 bytes); bf16 rows of 12 (in rows of 16): 4
// lanes, 8 bytes, aligned to 8 (not 16); rows of 6 floats, 24 bytes apart:
// 2 lanes, 8-byte vectors aligned to 8 (a batch norm's 14 x 14 images).
// CHECK-LABEL: func.func @lanes_divide
// CHECK: to (%c3) step
// CHECK: vector.store %{{.*}} : memref<12xf32>, vector<4xf32>
// CHECK-LABEL: func.func @bf16_rows_of_12
// CHECK: to (%c2, %c3) step
// CHECK: vector.load %arg0{{.*}} {alignment = 8 : i64} : memref<2x16xbf16>, vector<4xbf16>
// CHECK: vector.store %{{.*}} {alignment = 8 : i64} : memref<2x16xbf16>, vector<4xbf16>
// CHECK-LABEL: func.func @rows_of_6
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c2, %c3) step
// CHECK: vector.store %{{.*}} {alignment = 8 : i64} : memref<2x6xf32>, vector<2xf32>
func.func @lanes_divide(%y: memref<12xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%j) = (%c0) to (%c12) step (%c1) {
    memref.store %z, %y[%j] : memref<12xf32>
  }
  return
}
func.func @bf16_rows_of_12(%x: memref<2x16xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c12 = arith.constant 12 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c12) step (%c1, %c1) {
    %a = memref.load %x[%i, %j] : memref<2x16xbf16>
    %b = arith.addf %a, %a : bf16
    memref.store %b, %x[%i, %j] : memref<2x16xbf16>
  }
  return
}
func.func @rows_of_6(%y: memref<2x6xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c6) step (%c1, %c1) {
    memref.store %z, %y[%i, %j] : memref<2x6xf32>
  }
  return
}

// -----

// Left as they are: a transposed store (the innermost index is not the
// store's last), a view whose static offset (one float) breaks even 8-byte
// alignment, a per-thread loop (a reduction's partial sums), and a store
// every lane would repeat.
// CHECK-LABEL: func.func @transpose
// CHECK: to (%c8, %c8) step
// CHECK-LABEL: func.func @offset_view
// CHECK: to (%c8) step
// CHECK-LABEL: func.func @per_thread_loop
// CHECK: to (%c8, %c8) step
// CHECK-LABEL: func.func @repeated_store
// CHECK: to (%c8, %c8) step
// CHECK-NOT: vector
func.func @transpose(%x: memref<8x8xf32>, %y: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    %a = memref.load %x[%i, %j] : memref<8x8xf32>
    memref.store %a, %y[%j, %i] : memref<8x8xf32>
  }
  return
}
func.func @offset_view(%y: memref<8xf32, strided<[1], offset: 1>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%j) = (%c0) to (%c8) step (%c1) {
    memref.store %z, %y[%j] : memref<8xf32, strided<[1], offset: 1>>
  }
  return
}
func.func @per_thread_loop(%x: memref<8x8x4xf32>, %y: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    %s = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %z) -> (f32) {
      %a = memref.load %x[%i, %j, %k] : memref<8x8x4xf32>
      %n = arith.addf %acc, %a : f32
      scf.yield %n : f32
    }
    memref.store %s, %y[%i, %j] : memref<8x8xf32>
  }
  return
}
func.func @repeated_store(%x: memref<8x8xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    %a = memref.load %x[%i, %j] : memref<8x8xf32>
    memref.store %a, %y[%i] : memref<8xf32>
  }
  return
}

// -----

// Loads that use the innermost index otherwise are made once per lane, the
// stores still one vector: a transposed read, and an im2col kernel's window
// read (x[i, j + 1]: not aligned, so not one vector load).
// CHECK-LABEL: func.func @transposed_load
// CHECK: scf.parallel (%[[I:.*]], %[[JV:.*]]) = (%c0, %c0) to (%c8, %c2) step
// CHECK: %[[J:.*]] = arith.muli %[[JV]], %c4
// CHECK-COUNT-4: memref.load %arg0[%{{.*}}, %[[I]]] : memref<8x8xf32>
// CHECK: vector.store %{{.*}}, %arg1[%[[I]], %[[J]]] {alignment = 16 : i64} : memref<8x8xf32>, vector<4xf32>
// CHECK-LABEL: func.func @window_read
// CHECK: to (%c8, %c2) step
// CHECK-COUNT-4: memref.load %arg0
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<8x8xf32>, vector<4xf32>
func.func @transposed_load(%x: memref<8x8xf32>, %y: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    %a = memref.load %x[%j, %i] : memref<8x8xf32>
    memref.store %a, %y[%i, %j] : memref<8x8xf32>
  }
  return
}
func.func @window_read(%x: memref<8x10xf32>, %y: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    %k = arith.addi %j, %c1 : index
    %a = memref.load %x[%i, %k] : memref<8x10xf32>
    memref.store %a, %y[%i, %j] : memref<8x8xf32>
  }
  return
}
