// loom-create-mesh declares the mesh of --mesh; a module with a mesh, or a
// specification that does not parse, is an error.
// RUN: loom-opt %s --loom-create-mesh="mesh=dp=2,tp=4" | FileCheck %s
// RUN: not loom-opt %s --loom-create-mesh="mesh=dp=2,tp" 2>&1 | FileCheck %s --check-prefix=BADSPEC
// RUN: not loom-opt %s --loom-create-mesh="mesh=dp=0" 2>&1 | FileCheck %s --check-prefix=BADSPEC
// RUN: loom-opt %s --loom-create-mesh="mesh=dp=2" | not loom-opt --loom-create-mesh="mesh=dp=4" 2>&1 | FileCheck %s --check-prefix=TWICE

// CHECK: loom.mesh @mesh ["dp"=2, "tp"=4]
// CHECK-LABEL: func.func @f
// BADSPEC: error: loom-create-mesh: expected NAME=SIZE[,NAME=SIZE...], got
// TWICE: error: loom-create-mesh: the model already declares a mesh; drop --mesh to use it (and its shardings)
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}
