//===- Passes.td - CUDA code generation passes -------------*- tablegen -*-===//
//
// Passes between bufferization and MLIR's GPU lowering for the CUDA target:
// device buffers, one-dimensional kernels, and a check that the host part of
// a step touches no device memory. buildLoomCudaPipeline (Passes.h) orders
// them with the CPU pipeline's front half and upstream GPU lowering.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CUDA_PASSES_TD
#define LOOM_CODEGEN_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def LoomGpuDeviceBuffers : Pass<"loom-gpu-device-buffers", "mlir::ModuleOp"> {
  let summary = "Allocate a step's temporaries on the device; copies as loops";
  let description = [{
    After bufferization, in every function: `memref.alloc` becomes
    `gpu.alloc` and `memref.dealloc` `gpu.dealloc` (the caller's buffers,
    the step's arguments and results, are device memory too), and
    `memref.copy` becomes a `linalg.copy`, so that it is a kernel like every
    other loop nest rather than a host copy. Constant globals
    (`memref.get_global`) are host memory: loom-gpu-device-constants moves
    them where kernels and device calls read them.
  }];
  let options = [
    Option<"allocations", "allocations", "bool", /*default=*/"true",
           "Move allocations to the device (false: copies only, for "
           "running the kernels' loop structure on the CPU)">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::linalg::LinalgDialect"];
}

def LoomGpuOuterParallelDims : Pass<"loom-gpu-outer-parallel-dims", "mlir::ModuleOp"> {
  let summary = "Order every linalg op's loops parallel dimensions first";
  let description = [{
    `convert-linalg-to-parallel-loops` nests loops in the order of an op's
    iterators, and only the outermost parallel loops become a kernel's
    threads. An op whose reduction dimensions come first (a column sum:
    `reduction, reduction, parallel`, the gradients of layer-norm scales and
    biases) would become serial loops around a parallel one: one block
    whose threads walk every row. This interchanges each `linalg.generic`'s
    loops so that its parallel dimensions come first, in their order, and
    its reductions after them, in theirs: each output element is still
    summed in the same order (results are bit for bit the same), and every
    parallel dimension is a thread dimension.

    Example:

    ```mlir
    linalg.generic {iterator_types = ["reduction", "reduction", "parallel"]}
    // becomes
    linalg.generic {iterator_types = ["parallel", "reduction", "reduction"]}
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def LoomGpuSplitReductions : Pass<"loom-gpu-split-reductions", "mlir::ModuleOp"> {
  let summary = "Long reductions in two deterministic stages of many threads";
  let description = [{
    One GPU thread per output element walks its whole reduction: a softmax
    or cross-entropy row over a vocabulary of 51,200, a column sum over
    8,192 tokens, the loss mean. Few threads, each a long chain of
    dependent, uncoalesced loads. This splits a reduction `linalg.generic`
    (buffers, one output, its body `combine(out, f(ins))` with `combine`
    one of `addf`, `mulf`, `maximumf`, `maxnumf`, `minimumf`, `minnumf`;
    static reduction extents that every input reads as consecutive
    dimensions in loop order, or not at all) in two, as XLA's
    tree-reduction rewriter does:

    ```
    stage 1: partial[p, t] = combine over k of f(x[p, k * T + t])   (T lanes)
    stage 2: out[p] = combine(out[p], partial[p, 0], ..., partial[p, T - 1])
    ```

    `T` is the largest power of two up to `max-lanes` that divides the
    reduction's extent with at least `min-per-lane` elements per lane (no
    split otherwise). The partial results start at the combiner's identity
    (`-0.0` for a sum). For a row reduction (the reduction innermost in the
    first input that reads it) the lanes are the innermost threads, so a
    warp reads consecutive elements; otherwise the output's dimensions are
    (a column sum reads consecutive columns). Both stages are ordinary
    linalg ops with a fixed order per lane: results are deterministic, and
    the CPU emulation of the loop structure (`loom-run --gpu-loops-on-cpu`)
    runs the same sums in the same order. Several reduction dimensions
    (a layer norm's scale gradient over batch and sequence) are split as
    one when the inputs can collapse them. Where the inputs read only the
    trailing reduction dimensions together (a batch norm's statistics over
    (n, h, w), the channel between n and h), those are split and the
    earlier ones stay reductions of stage 1 that every lane walks before
    its steps; lanes then may be any divisor of at least 16 when no power
    of two fits (14 x 14 = 196 pixels).
  }];
  let options = [
    Option<"maxLanes", "max-lanes", "int64_t", /*default=*/"256",
           "The most lanes (threads) per output element">,
    Option<"minPerLane", "min-per-lane", "int64_t", /*default=*/"8",
           "The fewest elements each lane reduces">,
    Option<"minThreads", "min-threads", "int64_t", /*default=*/"32768",
           "With outer reductions: fewer threads than this (outputs x lanes) "
           "make them parallel dimensions of stage 1">,
    Option<"maxThreads", "max-threads", "int64_t", /*default=*/"131072",
           "The most threads of a stage 1 with parallel outer reductions">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect"];
}

def LoomGpuRegisterAccumulators : Pass<"loom-gpu-register-accumulators", "mlir::ModuleOp"> {
  let summary = "Reduction loops carry their output element in a register";
  let description = [{
    `convert-linalg-to-parallel-loops` lowers a reduction as an `scf.for`
    that loads the output element, combines and stores it back on every
    iteration: on a GPU, a load and a store per element on each thread's
    critical path, which LLVM cannot remove (it does not know that the
    inputs' buffers do not alias the output; linalg's semantics say so).
    A loop whose only write is the store of one element, at indices the
    loop does not change, loaded in the same iteration and touched by
    nothing else in the loop, carries that element instead (`iter_args`):
    one load before the loop, one store after. Nested reduction loops are
    rewritten innermost first. The same operations run in the same order,
    so results are bit for bit unchanged.

    ```mlir
    scf.for %k = %c0 to %c64 step %c1 {
      %x = memref.load %in[%i, %k]
      %a = memref.load %out[%i]
      %s = arith.addf %a, %x : f32
      memref.store %s, %out[%i]
    }
    // becomes
    %a0 = memref.load %out[%i]
    %r = scf.for %k = %c0 to %c64 step %c1 iter_args(%a = %a0) -> (f32) {
      %x = memref.load %in[%i, %k]
      %s = arith.addf %a, %x : f32
      scf.yield %s : f32
    }
    memref.store %r, %out[%i]
    ```
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::memref::MemRefDialect"];
}

def LoomGpuSerialKernels : Pass<"loom-gpu-serial-kernels", "mlir::ModuleOp"> {
  let summary = "Serial host code on buffers as one-iteration parallel loops";
  let description = [{
    After `convert-linalg-to-parallel-loops`, a reduction over every
    dimension has no parallel loop, and scalar updates (the step counter,
    the loss) are loads and stores in host code. Each run of such code
    (loads, stores, serial loops and conditionals, the scalar arithmetic
    between them) becomes a one-iteration `scf.parallel`: a one-thread
    kernel. Loops and conditionals that call the host or allocate or free
    stay on the host; pure scalar ops whose results the host uses after the
    run are recomputed in front of it.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect"];
}

def LoomGpuContiguousLanes : Pass<"loom-gpu-contiguous-lanes", "mlir::ModuleOp"> {
  let summary = "Each thread of an elementwise kernel takes 16 contiguous bytes";
  let description = [{
    One thread per element reads a bf16 as one 2-byte load: a warp's
    requests are 64 bytes, and an elementwise kernel over a 16-bit tensor
    moves 1.5 TB/s of an H200's 4.8. An outermost `scf.parallel` whose
    body is straight-line code (no loops, no conditionals) and whose every
    access either ends with the innermost loop's index, with unit stride
    and 16-byte aligned rows, or does not use it at all (or is a load that
    uses it otherwise: a transposed read, an im2col kernel's window read
    x[.., ow + kw], made once per element with the thread's other index
    arithmetic shared), gets `V` elements per thread instead: the innermost dimension `E` becomes `E / V`
    iterations of `V` copies of the body (`V` = 16 bytes over the smallest
    element read or written that way, halved until it divides `E`). Each
    contiguous load becomes one `vector.load` of `V` elements before the
    copies, which read their element of it, and each contiguous store one
    `vector.store` after them (explicit, rather than left to LLVM's
    load/store vectorizer, which its SLP vectorizer defeats by pairing
    lanes 1-6 first). With `assume-alignment` the vector accesses carry
    `alignment = 16` (every device buffer comes from cuMemAllocAsync, and
    views qualify only when their static offset and strides keep the
    alignment): one 16-byte access each in PTX. The same operations compute
    every element: results are bit for bit unchanged.
  }];
  let options = [
    Option<"assumeAlignment", "assume-alignment", "bool", /*default=*/"true",
           "Declare the buffers 16-byte aligned (false: the loop structure "
           "only, for running the kernels' loops on the CPU)">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect", "mlir::vector::VectorDialect"];
}

def LoomGpuFlattenParallelLoops : Pass<"loom-gpu-flatten-parallel-loops", "mlir::ModuleOp"> {
  let summary = "Collapse each outermost scf.parallel into one dimension";
  let description = [{
    A loop nest from `convert-linalg-to-parallel-loops` has one parallel
    dimension per parallel iterator, of any sizes (`1 x 8 x 64`). Collapsed
    into one dimension and tiled by the block size, every thread of every
    block has an element, whatever the shape; the reduction loops inside
    (`scf.for`) stay per thread.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect"];
}

def LoomGpuOrderedReductions : Pass<"loom-gpu-ordered-reductions", "mlir::ModuleOp"> {
  let summary = "Drop reassociation from floating-point ops (sums in order)";
  let description = [{
    Loom's lowering marks reductions `fastmath<reassoc>` so that the CPU
    vectorizer may reorder sums. A GPU thread sums its reduction in order;
    run on the CPU (`loom-run --gpu-loops-on-cpu`), reassociated reductions
    would take a vector or a scalar path depending on a run-time alias check
    of buffer addresses, and round differently from run to run. This pass
    clears `reassoc` so that the check is deterministic.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def LoomGpuCheckHost : Pass<"loom-gpu-check-host", "mlir::ModuleOp"> {
  let summary = "Fail if host code reads or writes device memory";
  let description = [{
    After kernel outlining, every load and store of a buffer must be inside
    a GPU module: a `memref.load`, `memref.store` or `memref.copy` left in a
    host function would read device memory from the host (or need a copy
    inside the step). Reports each one with its location.
  }];
}

def LoomGpuDeviceConstants : Pass<"loom-gpu-device-constants", "mlir::ModuleOp"> {
  let summary = "Constant globals where kernels and device calls can read them";
  let description = [{
    A constant tensor of the step (`memref.get_global` of a constant
    `memref.global`) is host memory: a kernel or a cuBLAS call given its
    address would read the host's address space. Run before kernel
    outlining: every `memref.get_global` used inside a `gpu.launch` is sunk
    into it (outlining then clones the global into the kernel's GPU module,
    where it is device memory); what host code still passes elsewhere (a
    cuBLAS call, a collective) is copied to a device buffer
    (`gpu.alloc` + `gpu.memcpy`) where the global was read, freed before
    each return.

    Example:

    ```mlir
    %g = memref.get_global @c : memref<10xi64>
    gpu.launch ... { ... memref.load %g[%i] ... }
    // becomes
    gpu.launch ... { %g = memref.get_global @c : memref<10xi64>
                     ... memref.load %g[%i] ... }
    ```
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

def LoomGpuNameKernels : Pass<"loom-gpu-name-kernels", "mlir::ModuleOp"> {
  let summary = "Give every outlined kernel its module's unique name";
  let description = [{
    `gpu-kernel-outlining` puts each kernel of `@step` in its own
    `gpu.module @step_kernel_N` as `gpu.func @step_kernel`: every kernel of
    the step has the same function name, which is all the runtime sees
    (`mgpuModuleGetFunction(module, "step_kernel")`). This renames each
    module's kernels after the module (`@step_kernel_N::@step_kernel_N`,
    with a suffix when a module holds several) and updates the launches, so
    that the runtime's errors and profiles name the kernel.

    Example:

    ```mlir
    gpu.launch_func @f_kernel_3::@f_kernel ...
    gpu.module @f_kernel_3 { gpu.func @f_kernel(...) kernel { ... } }
    // becomes
    gpu.launch_func @f_kernel_3::@f_kernel_3 ...
    gpu.module @f_kernel_3 { gpu.func @f_kernel_3(...) kernel { ... } }
    ```
  }];
}

#endif // LOOM_CODEGEN_CUDA_PASSES_TD
