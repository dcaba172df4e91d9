// loom-freeze-parameters keeps the named parameters out of training; a name
// that is not a parameter is an error.
// RUN: loom-opt %s --loom-freeze-parameters="names=embed,fc.bias" | FileCheck %s
// RUN: not loom-opt %s --loom-freeze-parameters="names=nope" 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK: loom.parameter @embed : tensor<4xf32>{{$}}
// CHECK: loom.parameter @fc.weight : tensor<4xf32> trainable
// CHECK: loom.parameter @fc.bias : tensor<4xf32>{{$}}
// BAD: error: loom-freeze-parameters: 'nope' is not a parameter of the module
loom.parameter @embed : tensor<4xf32> trainable
loom.parameter @fc.weight : tensor<4xf32> trainable
loom.parameter @fc.bias : tensor<4xf32> trainable
