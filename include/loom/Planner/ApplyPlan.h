//===- ApplyPlan.h - Writing the chosen plan into the IR --------*- C++ -*-===//
//
// The plan becomes shardings: a loom.mesh (created when the planner chose
// the shape), `loom.sharding` on every argument (optimizer state as its
// weight, split further where ZeRO-style splits pay nothing) and on every
// planned op's results. loom-partition then produces the program.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_APPLYPLAN_H
#define LOOM_PLANNER_APPLYPLAN_H

#include "loom/Planner/Graph.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::loom::planner {

/// Writes `choice` for `g` (on `mesh`, axes named) into `module`. With
/// `fixed`, the module's mesh is used; otherwise a mesh of the axes in
/// `keep` is created. Returns the mesh.
MeshOp applyPlan(ModuleOp module, const Graph &g, ArrayRef<int> choice,
                 const MeshShape &mesh, MeshOp fixed, ArrayRef<int> keep);

/// Marks the ops of the first `fraction` of `g`'s repeated layers with
/// `loom.remat = <layer>` (loom-rematerialize recomputes them); with
/// `others`, also the forward ops before the layers (segment `layers`) and
/// after them (segment `layers + 1`). Returns the number of layers marked.
int markRematerializedLayers(const Graph &g, double fraction,
                             bool others = false);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_APPLYPLAN_H
