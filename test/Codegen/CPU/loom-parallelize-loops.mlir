// RUN: loom-opt %s --loom-parallelize-loops --split-input-file | FileCheck %s
// RUN: loom-opt %s --loom-parallelize-loops --convert-scf-to-cf \
// RUN:   --finalize-memref-to-llvm --convert-to-llvm \
// RUN:   --reconcile-unrealized-casts --split-input-file \
// RUN:   | FileCheck %s --check-prefix=LLVM

// An elementwise loop over 1024 x 256 elements becomes a call to the
// runtime: the values it uses from outside (two memrefs as their
// descriptors, a scalar) go into a stack struct allocated in the entry
// block, the loop's body, its first dimension restricted to [lo, hi), into
// a function of its own; constants are cloned, not passed.
// CHECK-LABEL: func.func @scale(
// CHECK-SAME:      %[[X:.*]]: memref<1024x256xf32>, %[[Y:.*]]: memref<1024x256xf32>, %[[S:.*]]: f32)
// CHECK: %[[CTX:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, f32, struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>)>
// CHECK: %[[XD:.*]] = builtin.unrealized_conversion_cast %[[X]]
// CHECK: %[[F0:.*]] = llvm.getelementptr %[[CTX]][0, 0]
// CHECK: llvm.store %[[XD]], %[[F0]]
// CHECK: %[[F1:.*]] = llvm.getelementptr %[[CTX]][0, 1]
// CHECK: llvm.store %[[S]], %[[F1]] : f32
// Work per iteration of the cut dimension: 3 ops x 256 inner iterations.
// CHECK: %[[W:.*]] = arith.muli %c3
// CHECK: %[[FN:.*]] = constant @scale_parallel
// CHECK: %[[FP:.*]] = builtin.unrealized_conversion_cast %[[FN]] {{.*}} to !llvm.ptr
// CHECK: %[[N:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: %[[WI:.*]] = arith.index_cast %[[W]] : index to i64
// CHECK: call @loom_rt_parallel_for(%[[FP]], %[[CTX]], %[[N]], %[[WI]])
// CHECK-NOT: scf.parallel
// CHECK: return
// CHECK: func.func private @scale_parallel(%[[C:.*]]: !llvm.ptr, %[[LO:.*]]: index, %[[HI:.*]]: index)
// CHECK: llvm.load {{.*}} -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// Memrefs the body only loads from and stores into are read with a
// dynamic offset (the descriptor's), so that loops over other slices can
// share the body.
// CHECK: builtin.unrealized_conversion_cast {{.*}} to memref<1024x256xf32, strided<[256, 1], offset: ?>>
// CHECK: llvm.load {{.*}} -> f32
// CHECK: %[[B:.*]] = arith.addi %c0, %{{.*}} : index
// CHECK: %[[E:.*]] = arith.minsi %c1024, %{{.*}} : index
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%[[B]], %c0) to (%[[E]], %c256)
// CHECK: arith.mulf
// CHECK: func.func private @loom_rt_parallel_for(!llvm.ptr, !llvm.ptr, i64, i64)

// The descriptors stored and loaded are the ones the memref lowering
// builds, and the function's address is passed.
// LLVM-LABEL: llvm.func @scale(
// LLVM: %[[CTX:.*]] = llvm.alloca
// LLVM: %[[FP:.*]] = llvm.mlir.addressof @scale_parallel : !llvm.ptr
// LLVM: llvm.call @loom_rt_parallel_for(%[[FP]], %[[CTX]], %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64, i64) -> ()
// LLVM: llvm.func @scale_parallel(%{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64)
// LLVM-NOT: unrealized_conversion_cast
// LLVM: llvm.fmul
func.func @scale(%x: memref<1024x256xf32>, %y: memref<1024x256xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c1024, %c256) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<1024x256xf32>
    %m = arith.mulf %v, %s : f32
    memref.store %m, %y[%i, %j] : memref<1024x256xf32>
    scf.reduce
  }
  return
}

// -----

// Small loops (known work under min-work), loops nested in a serial loop
// whose induction variable bounds them (dispatched once per outer
// iteration) and loops with results stay.
// CHECK-LABEL: func.func @stays(
// CHECK-NOT: loom_rt_parallel_for
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: scf.parallel
// CHECK: scf.parallel {{.*}} init
// CHECK-NOT: loom_rt_parallel_for
// CHECK: return
func.func @stays(%x: memref<64x64xf32>, %big: memref<4096x4096xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
    memref.store %zero, %x[%i, %j] : memref<64x64xf32>
    scf.reduce
  }
  scf.for %r = %c0 to %c4096 step %c1 {
    scf.parallel (%j) = (%c0) to (%r) step (%c1) {
      %v = memref.load %big[%r, %j] : memref<4096x4096xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %big[%r, %j] : memref<4096x4096xf32>
      scf.reduce
    }
  }
  %sum = scf.parallel (%i, %j) = (%c0, %c0) to (%c4096, %c4096) step (%c1, %c1) init (%zero) -> f32 {
    %v = memref.load %big[%i, %j] : memref<4096x4096xf32>
    scf.reduce(%v : f32) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      scf.reduce.return %s : f32
    }
  }
  return %sum : f32
}

// -----

// A short first dimension (2 rows) runs whole in every chunk; the second
// (dynamic: its count is passed at run time, and the bound and the index
// it is computed from are passed in the struct) is cut.
// CHECK-LABEL: func.func @rows(
// CHECK-SAME:      %{{.*}}: memref<2x?xf32>, %[[N:.*]]: index)
// CHECK: llvm.alloca %{{.*}} x !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64)>
// CHECK: %[[NI:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK: llvm.store %[[NI]]
// CHECK: %[[SPAN:.*]] = arith.subi %[[N]], %c0
// CHECK: %[[TRIPS:.*]] = arith.ceildivsi %[[SPAN]], %c1
// CHECK: %[[CUT:.*]] = arith.maxsi %[[TRIPS]]
// CHECK: arith.index_cast %[[CUT]] : index to i64
// CHECK: func.func private @rows_parallel(
// CHECK: %[[BOUND:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[HI:.*]] = arith.minsi %[[BOUND]], %{{.*}} : index
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %{{.*}}) to (%c2, %[[HI]])
func.func @rows(%x: memref<2x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %n) step (%c1, %c1) {
    memref.store %one, %x[%i, %j] : memref<2x?xf32>
    scf.reduce
  }
  return
}

// -----

// A column reduction (rows serial, columns parallel, as linalg lowers a
// bias gradient): the nest is outlined whole, each chunk of columns runs
// every row, and the work of a column counts the rows.
// CHECK-LABEL: func.func @columns(
// CHECK: %[[W:.*]] = arith.muli %c4, %{{.*}} : index
// CHECK: arith.index_cast %[[W]]
// CHECK: call @loom_rt_parallel_for
// CHECK-NOT: scf.for
// CHECK: return
// CHECK: func.func private @columns_parallel(
// CHECK: %[[E:.*]] = arith.minsi %c512, %{{.*}} : index
// CHECK: scf.for %[[R:.*]] = %c0 to %c4096 step %c1 {
// CHECK-NEXT: scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%[[E]]) step (%c1) {
// CHECK-NEXT: memref.load %{{.*}}[%[[R]], %[[J]]]
func.func @columns(%x: memref<4096x512xf32>, %sum: memref<512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %c4096 = arith.constant 4096 : index
  scf.for %r = %c0 to %c4096 step %c1 {
    scf.parallel (%j) = (%c0) to (%c512) step (%c1) {
      %v = memref.load %x[%r, %j] : memref<4096x512xf32>
      %s = memref.load %sum[%j] : memref<512xf32>
      %a = arith.addf %s, %v : f32
      memref.store %a, %sum[%j] : memref<512xf32>
      scf.reduce
    }
  }
  return
}

// -----

// The steps of a recurrence: the same small elementwise loop over
// different rows of a sequence buffer (static offsets 0 and 512) and over a
// whole buffer of the same shape. Small loops stay in place unless their
// body equals another's; equal bodies are outlined once and called from
// each place (LLVM compiles the body once). A small loop whose body is
// unique (the scaling by 3) stays; a memref used other than by loads and
// stores (memref.dim) keeps its static type in the body: the last two
// loops, over slices at offsets 0 and 4096 also read by memref.dim, have
// bodies of their own and, small and unique, stay.
// CHECK-LABEL: func.func @steps(
// CHECK-COUNT-3: constant @steps_parallel : {{.*}}
// CHECK: call @loom_rt_parallel_for
// CHECK-NOT: loom_rt_parallel_for
// CHECK: scf.parallel
// CHECK: arith.mulf
// CHECK: scf.parallel
// CHECK: memref.dim
// CHECK: scf.parallel
// CHECK: memref.dim
// CHECK: return
// CHECK: func.func private @steps_parallel(
// CHECK: to memref<8x512xf32, strided<[512, 1], offset: ?>>
// CHECK: math.tanh
// CHECK-NOT: func.func private @steps_parallel
// CHECK: func.func private @loom_rt_parallel_for

// LLVM-LABEL: llvm.func @steps(
// LLVM-COUNT-3: llvm.mlir.addressof @steps_parallel : !llvm.ptr
// LLVM: llvm.func @steps_parallel(
func.func @steps(%seq: memref<2x8x512xf32>, %h: memref<8x512xf32>, %out: memref<2x8x512xf32>, %g: memref<8x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c512 = arith.constant 512 : index
  %x0 = memref.subview %seq[0, 0, 0] [1, 8, 512] [1, 1, 1] : memref<2x8x512xf32> to memref<8x512xf32, strided<[512, 1]>>
  %x1 = memref.subview %seq[1, 0, 0] [1, 8, 512] [1, 1, 1] : memref<2x8x512xf32> to memref<8x512xf32, strided<[512, 1], offset: 4096>>
  %y0 = memref.subview %out[0, 0, 0] [1, 8, 512] [1, 1, 1] : memref<2x8x512xf32> to memref<8x512xf32, strided<[512, 1]>>
  %y1 = memref.subview %out[1, 0, 0] [1, 8, 512] [1, 1, 1] : memref<2x8x512xf32> to memref<8x512xf32, strided<[512, 1], offset: 4096>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c512) step (%c1, %c1) {
    %v = memref.load %x0[%i, %j] : memref<8x512xf32, strided<[512, 1]>>
    %t = math.tanh %v : f32
    memref.store %t, %y0[%i, %j] : memref<8x512xf32, strided<[512, 1]>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c512) step (%c1, %c1) {
    %v = memref.load %x1[%i, %j] : memref<8x512xf32, strided<[512, 1], offset: 4096>>
    %t = math.tanh %v : f32
    memref.store %t, %y1[%i, %j] : memref<8x512xf32, strided<[512, 1], offset: 4096>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c512) step (%c1, %c1) {
    %v = memref.load %h[%i, %j] : memref<8x512xf32>
    %t = math.tanh %v : f32
    memref.store %t, %g[%i, %j] : memref<8x512xf32>
    scf.reduce
  }
  %three = arith.constant 3.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c512) step (%c1, %c1) {
    %v = memref.load %h[%i, %j] : memref<8x512xf32>
    %t = arith.mulf %v, %three : f32
    memref.store %t, %h[%i, %j] : memref<8x512xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c512) step (%c1, %c1) {
    %n = memref.dim %x0, %c1 : memref<8x512xf32, strided<[512, 1]>>
    %v = memref.load %x0[%i, %j] : memref<8x512xf32, strided<[512, 1]>>
    %d = arith.index_cast %n : index to i32
    %f = arith.sitofp %d : i32 to f32
    %t = arith.addf %v, %f : f32
    memref.store %t, %h[%i, %j] : memref<8x512xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c512) step (%c1, %c1) {
    %n = memref.dim %x1, %c1 : memref<8x512xf32, strided<[512, 1], offset: 4096>>
    %v = memref.load %x1[%i, %j] : memref<8x512xf32, strided<[512, 1], offset: 4096>>
    %d = arith.index_cast %n : index to i32
    %f = arith.sitofp %d : i32 to f32
    %t = arith.addf %v, %f : f32
    memref.store %t, %h[%i, %j] : memref<8x512xf32>
    scf.reduce
  }
  return
}
