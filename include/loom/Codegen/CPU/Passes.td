//===- Passes.td - CPU code generation passes --------------*- tablegen -*-===//
//
// Passes between loom-convert-to-linalg and the LLVM dialect for CPU
// execution: elementwise fusion, a destination-passing entry point, BLAS
// calls for matrix products. buildLoomCpuPipeline (Passes.h) orders them
// with upstream bufferization and lowering.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CPU_PASSES_TD
#define LOOM_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def LoomFuseElementwise : Pass<"loom-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Fuse chains of elementwise linalg.generic ops";
  let description = [{
    Fuses a `linalg.generic` producer whose iterators are all parallel into
    the `linalg.generic` that consumes it, so elementwise chains become one
    loop nest without temporaries. Unlike upstream
    `linalg-fuse-elementwise-ops`, never fuses into named ops
    (`linalg.batch_matmul`, `linalg.transpose`): a matmul must stay a
    matmul to reach BLAS, and a transpose fused into a contraction turns it
    into a slow generic loop nest.

    With `shared-producers` (the CUDA pipelines), a producer that other ops
    read too is fused into an elementwise consumer as one more result of
    it, when those other readers come after the consumer: computed and
    written once, not read back (Adam's moments and the weight update
    become one op: one kernel instead of three; upstream's pattern would
    compute it twice). Into a reduction only a producer read by nothing
    else is fused. Off on the CPU, whose temporaries the planner's memory
    model is measured against (test/e2e/remat.test).
  }];
  let options = [
    Option<"sharedProducers", "shared-producers", "bool", /*default=*/"false",
           "Fuse a producer several elementwise ops read into the first, as "
           "one more result">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def LoomPrepareForExecution : Pass<"loom-prepare-for-execution", "mlir::ModuleOp"> {
  let summary = "Give the entry function a destination-passing interface";
  let description = [{
    Rewrites each public function `@f(args) -> results` so that results are
    written into caller-provided buffers: `@f(args..., outs: memref...)`
    with `bufferization.materialize_in_destination ... restrict writable`,
    returning nothing; inputs are marked read-only; marks it
    `llvm.emit_c_interface`, and removes loom declarations and attributes
    that have no meaning below this point (loom.parameter, loom.mesh,
    loom.param/loom.name/loom.sharding). After bufferization the caller owns
    every buffer.
  }];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect",
                           "mlir::memref::MemRefDialect"];
}

def LoomLowerMatmulToBlas : Pass<"loom-lower-matmul-to-blas", "mlir::ModuleOp"> {
  let summary = "Call BLAS for f32/f64 matrix products on buffers";
  let description = [{
    After bufferization, replaces `linalg.matmul` and `linalg.batch_matmul`
    on f32 and f64 memrefs (plain or with transposed operands) by calls to
    `loom_rt_batch_matmul_{f32,f64}`, which run OpenBLAS gemm per batch
    with the right transpose flags and leading dimensions; a zero fill of
    the output right before is folded into the call (beta = 0). Other
    element types stay for the generic loop lowering. With
    `library=cublas` (the CUDA pipeline) the calls are
    `loom_rt_cublas_batch_matmul_{f32,f64}` on device buffers instead.
  }];
  let options = [
    Option<"library", "library", "std::string", /*default=*/"\"blas\"",
           "blas (OpenBLAS, host buffers) or cublas (device buffers)">,
  ];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::arith::ArithDialect"];
}

def LoomSplitDeallocations : Pass<"loom-split-deallocations", "mlir::ModuleOp"> {
  let summary = "Turn a bufferization.dealloc of distinct allocations into one memref.dealloc each";
  let description = [{
    Ownership-based buffer deallocation ends a straight-line function with
    one `bufferization.dealloc` of every buffer the function touched, each
    with its ownership condition. Upstream's simplification proves the
    buffers distinct with pairwise alias queries: quadratic in their
    number, 9.3 s of a 96-layer GPT's 16 s of lowering. This pass settles
    the common case in one walk: when the op retains nothing, every
    condition is a constant, and every buffer with a true condition comes
    (through `memref.extract_strided_metadata` and view-like ops) from a
    different `memref.alloc`, the op becomes one `memref.dealloc` per
    allocation (buffers with a false condition are dropped). Any other
    `bufferization.dealloc` is left to the upstream passes.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def LoomFreeBuffersEarly : Pass<"loom-free-buffers-early", "mlir::ModuleOp"> {
  let summary = "Move each memref.dealloc to just after the last use of its buffer";
  let description = [{
    Ownership-based buffer deallocation places every `memref.dealloc` of a
    straight-line function at the end of the block, so a training step
    holds all of its temporaries at once and rematerialization saves no
    memory. This pass moves each `memref.dealloc` in a block up to just
    after the last op of that block that uses the buffer or one of its
    aliases (results of ops that take the buffer and return a memref:
    views, casts, reshapes). A buffer with an alias that leaves the block
    (yielded or returned) or that is used outside the block stays where it
    is. Conditional deallocations (`scf.if`) are not touched.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def LoomApproximateMath : Pass<"loom-approximate-math", "mlir::ModuleOp"> {
  let summary = "f32 exp, erf and tanh as polynomials the loop vectorizer can vectorize";
  let description = [{
    A libm call (`expf`, `erff`, `tanhf`) in a loop keeps LLVM's loop
    vectorizer from vectorizing it: softmax, GELU, sigmoid and tanh ran one
    element at a time. This rewrites `math.exp`, `math.erf` and `math.tanh`
    on f32 (after math-extend-to-supported-types: 16-bit ones are f32 by
    then) into MLIR's polynomial approximations, straight-line arithmetic
    that vectorizes. Within 4 ulp of glibc's libm over each function's
    whole f32 range, with libm's special values (the unit test
    ExecutionTest.PolynomialMathIsWithinAFewUlpsOfLibm; docs/training.md).
    The log family stays libm (MLIR's log treats subnormal inputs as
    normal), as do sin and cos. `loom-run --libm` (the CPU pipeline's
    `approximate-math=false`) keeps every libm call. The CPU pipelines
    only: the CUDA pipeline's kernels call libdevice.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

def LoomSplitFunctions : Pass<"loom-split-functions", "mlir::ModuleOp"> {
  let summary = "Outline runs of a long function's ops into functions of bounded size";
  let description = [{
    LLVM's optimizations and code generation cost more than linearly in the
    size of a function (ScalarEvolution, dominator-tree updates, instruction
    selection), and a training step is one function that grows with the
    model's depth. After bufferization, this pass cuts the body of every
    function with more than `max-ops` operations (nested ones counted) into
    consecutive runs of at most about `max-ops` operations and moves each
    run into a private, internal function (`@<name>_part<k>`) called in its
    place with a `no_inline` call: values the run uses from before become
    arguments (constants are cloned instead), values it defines and later
    operations use become results. Cut points are chosen by content (a
    fixed hash of op names and arities over a window of three ops), so a
    repeated layer is cut the same way every time; runs whose functions are
    identical (same type and body) share one function, compiled once. Each
    run keeps its operations' order, so the program computes exactly what
    it did. A run that would return a `memref.alloca` (stack memory) is
    extended until it does not. A split function called through its C
    interface (`llvm.emit_c_interface`) becomes internal, so LLVM need not
    lower a call that passes every descriptor field.
  }];
  let options = [
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"300",
           "Operations (nested ones counted) per outlined function; 0 "
           "disables the pass">,
  ];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect"];
}

def LoomParallelizeLoops : Pass<"loom-parallelize-loops", "mlir::ModuleOp"> {
  let summary = "Run the outermost parallel loops on every core of the rank";
  let description = [{
    Each outermost `scf.parallel` of a function (the elementwise ops,
    normalizations, softmaxes, losses and optimizer updates
    `convert-linalg-to-parallel-loops` lowers; a loop nested in another
    loop stays where it is) whose work (iterations times the operations of
    its body, inner loops' trip counts included) reaches `min-work` or is
    not known
    becomes a call to the runtime's `loom_rt_parallel_for(fn, ctx, n,
    work)`: the loop's body with one of its dimensions restricted to
    `[lo, hi)` is outlined into `@<function>_parallel<k>(ctx, lo, hi)`,
    the values it uses from outside are stored in a stack struct `ctx`
    (memrefs as their LLVM descriptors; constants are cloned instead), and
    the runtime cuts the `n` iterations of that dimension (the first one
    with at least 16 iterations or a dynamic count, else the longest) into
    contiguous chunks for its threads, or calls `fn(ctx, 0, n)` itself when
    `n * work` is below its threshold or it has one thread. Every element
    is computed by the same code whatever the chunks, so results are
    bitwise the same for any thread count. Loops with results (reductions
    in `scf.parallel`) are left alone. The CPU pipeline runs this before
    lowering loops to branches; `loom-run --serial-loops` leaves it out.

    Loops with equal bodies (a recurrence's time steps, a repeated layer's
    elementwise chains) call one outlined function, which LLVM then
    compiles once: bodies are compared as printed, and a memref that a
    body only loads from and stores into is read with a dynamic offset
    (its descriptor's), so loops over different slices of one buffer, or
    over buffers of one shape and strides, share a body. A small loop is
    outlined too when its body is shared (the runtime runs it on the
    calling thread); a small loop with a body of its own stays in place.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"65536",
           "Loops whose work is known to be below this stay in place">,
  ];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::arith::ArithDialect", "mlir::scf::SCFDialect"];
}

#endif // LOOM_CODEGEN_CPU_PASSES_TD
