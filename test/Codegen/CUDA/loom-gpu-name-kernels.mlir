// RUN: loom-opt %s --split-input-file --loom-gpu-name-kernels | FileCheck %s

// Each outlined kernel takes its module's name, and its launches follow.
// CHECK-LABEL: func.func @step
// CHECK: gpu.launch_func @step_kernel::@step_kernel
// CHECK: gpu.launch_func @step_kernel_0::@step_kernel_0
// CHECK: gpu.module @step_kernel
// CHECK: gpu.func @step_kernel(
// CHECK: gpu.module @step_kernel_0
// CHECK: gpu.func @step_kernel_0(
module attributes {gpu.container_module} {
  func.func @step(%n: index) {
    gpu.launch_func @step_kernel::@step_kernel blocks in (%n, %n, %n) threads in (%n, %n, %n)
    gpu.launch_func @step_kernel_0::@step_kernel blocks in (%n, %n, %n) threads in (%n, %n, %n)
    return
  }
  gpu.module @step_kernel {
    gpu.func @step_kernel() kernel { gpu.return }
  }
  gpu.module @step_kernel_0 {
    gpu.func @step_kernel() kernel { gpu.return }
  }
}

// -----

// A module with two kernels: each gets a suffix.
// CHECK-LABEL: func.func @two
// CHECK: gpu.launch_func @m::@m_0
// CHECK: gpu.launch_func @m::@m_1
module attributes {gpu.container_module} {
  func.func @two(%n: index) {
    gpu.launch_func @m::@a blocks in (%n, %n, %n) threads in (%n, %n, %n)
    gpu.launch_func @m::@b blocks in (%n, %n, %n) threads in (%n, %n, %n)
    return
  }
  gpu.module @m {
    gpu.func @a() kernel { gpu.return }
    gpu.func @b() kernel { gpu.return }
  }
}
