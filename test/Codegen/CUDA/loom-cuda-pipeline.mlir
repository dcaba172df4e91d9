// RUN: loom-opt %s --loom-cuda-pipeline="chip=sm_90 format=isa" | FileCheck %s
// RUN: loom-opt %s --loom-cuda-pipeline="chip=sm_90 format=bin" | FileCheck %s --check-prefix=BIN
// RUN: not loom-opt %s --loom-cuda-pipeline="chip=sm_90 format=bin ptxas-options=--no-such-option" 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: loom-opt %s --loom-cuda-pipeline="chip=sm_90 format=bin" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM
// RUN: loom-opt %s --loom-cuda-loops-on-cpu-pipeline --mlir-print-ir-before=convert-scf-to-cf -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOOPS

// A matmul, bias, GELU and a mean: the product is a cuBLAS call on device
// buffers, the elementwise chain one fused kernel of 256-thread blocks, the
// full reduction a one-thread kernel; every kernel is PTX for sm_90 in a
// gpu.binary; the host code launches them and allocates on the device.
// CHECK: llvm.func @step(
// CHECK-NOT: llvm.call @malloc
// CHECK: llvm.call @mgpuStreamCreate()
// CHECK: llvm.call @mgpuMemAlloc(
// CHECK: llvm.call @mgpuStreamSynchronize(
// CHECK: llvm.call @loom_rt_cublas_batch_matmul_f32(
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @step_kernel::@step_kernel blocks in
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @step_kernel_0::@step_kernel_0 blocks in
// CHECK-NOT: llvm.call @malloc
// CHECK: llvm.func @_mlir_ciface_step(
// CHECK: gpu.binary @step_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx86", flags = {"ptxas-cmd-options" = ["--warn-on-spills", "-Werror"]}>{{.*}}.target sm_90
// CHECK: gpu.binary @step_kernel_0 [#gpu.object<#nvvm.target<O = 3, chip = "sm_90"{{.*}}.target sm_90
// BIN: gpu.binary @step_kernel {{.*}}bin =
// PTXAS: `ptxas` invocation failed

// The host code translates to LLVM IR: kernels, device memory and streams
// through the mgpu* functions the GPU runtime is to provide, the cubins
// embedded.
// LLVM-DAG: declare ptr @mgpuStreamCreate()
// LLVM-DAG: declare ptr @mgpuMemAlloc(i64, ptr, i8)
// LLVM-DAG: declare void @mgpuMemFree(ptr, ptr)
// LLVM-DAG: declare ptr @mgpuModuleLoad(ptr, i64)
// LLVM-DAG: declare ptr @mgpuModuleGetFunction(ptr, ptr)
// LLVM-DAG: declare void @mgpuLaunchKernel(ptr, i64, i64, i64, i64, i64, i64, i32, ptr, ptr, ptr, i64)
// LLVM-DAG: declare void @_mlir_ciface_loom_rt_cublas_batch_matmul_f32(ptr, ptr, ptr, i64, i64, i64)

// The kernels' loop structure, as loom-run --gpu-loops-on-cpu runs it: the
// 16 x 64 elementwise chain is one block of 256 guarded iterations, each 4
// contiguous floats (loom-gpu-contiguous-lanes); the mean one guarded
// iteration.
// LOOPS: scf.parallel (%[[B:.*]]) = (%c0) to (%c256) step (%c256) {
// LOOPS-NEXT: scf.parallel (%[[T:.*]]) = (%c0) to (%c256) step (%c1) {
// LOOPS: scf.if
// LOOPS: scf.parallel (%{{.*}}) = (%c0) to (%c1) step (%c256) {
func.func @step(%x: tensor<16x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> (tensor<16x64xf32>, tensor<f32>) {
  %y = loom.dot_general %x, %w contracting_dims = [1] x [1] : (tensor<16x32xf32>, tensor<64x32xf32>) -> tensor<16x64xf32>
  %z = loom.add %y, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %g = loom.gelu %z approximate = tanh : tensor<16x64xf32>
  %m = loom.reduce_mean %g dims = [0, 1] : (tensor<16x64xf32>) -> tensor<f32>
  return %g, %m : tensor<16x64xf32>, tensor<f32>
}
