// RUN: loom-opt %s --loom-convert-to-linalg="scatter-threads=256" | FileCheck %s
// RUN: loom-opt %s --loom-convert-to-linalg | FileCheck %s --check-prefix=LINES

// An embedding's gradient (10 tokens into 12 rows of 16) with
// scatter-threads=256: the rows are cut into 12 chunks of 1 (the largest
// divisor of 12 with chunks x 16 <= 256), one forall iteration per (chunk,
// hidden element), each walking every token and adding those whose row is
// its chunk. Without the option (the CPU): one iteration per hidden
// element, owning the whole column.
// CHECK-LABEL: func.func @embedding_grad
// CHECK: scf.forall (%[[C:.*]], %[[H:.*]]) in (12, 16) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<12x16xf32>)
// CHECK: %[[START:.*]] = arith.muli %[[C]], %c1
// CHECK: tensor.extract_slice %[[OUT]][%[[START]], %[[H]]] [1, 1] [1, 1] : tensor<12x16xf32> to tensor<1xf32>
// CHECK: scf.for
// CHECK: %[[REL:.*]] = arith.subi %{{.*}}, %[[START]] : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[REL]], %c1{{.*}} : index
// CHECK: scf.if %[[IN]] -> (tensor<1xf32>)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[OUT]][%[[START]], %[[H]]] [1, 1] [1, 1]
// LINES-LABEL: func.func @embedding_grad
// LINES: scf.forall (%[[H:.*]]) in (16) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<12x16xf32>)
// LINES: tensor.extract_slice %[[OUT]][0, %[[H]]] [12, 1] [1, 1] : tensor<12x16xf32> to tensor<12xf32>
// LINES-NOT: scf.if
func.func @embedding_grad(%u: tensor<10x16xf32>, %i: tensor<10xi64>) -> tensor<12x16xf32> {
  %0 = loom.scatter_add %u[%i] axis = 0 : (tensor<10x16xf32>, tensor<10xi64>) -> tensor<12x16xf32>
  return %0 : tensor<12x16xf32>
}
