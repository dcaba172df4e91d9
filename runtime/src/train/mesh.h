//===- mesh.h - What the training loop asks of a mesh -----------*- C++ -*-===//

#ifndef LOOM_RUNTIME_TRAIN_MESH_H
#define LOOM_RUNTIME_TRAIN_MESH_H

#include "loom/program.h"
#include "loom/runtime.h"

#include <string>
#include <vector>

namespace loom::program::mesh {

/// This rank's index (row-major over the axes) and the number of ranks.
int rank(loom_mesh_t mesh);
int size(loom_mesh_t mesh);
/// Every rank's `values` (the same count on each), in rank order; false
/// with `error`.
bool allGather(loom_mesh_t mesh, const std::vector<int64_t> &values,
               std::vector<int64_t> &all, std::string &error);
/// Returns when every rank has called it; false (with `error`) when a rank
/// failed (`ok` false on some rank: "rank R failed to <what>") or the
/// collective did. A rank that failed keeps its own error, and prints it
/// at once (before the agreement: rank 0 may end the job right after).
bool agree(loom_mesh_t mesh, bool ok, const std::string &what,
           std::string &error);
/// Whether this rank holds the first copy of its block: its coordinate is
/// 0 on every axis `sharding` does not split (but `ignoredAxis`, e.g. a
/// pipeline axis, whose members hold different tensors).
bool isFirstCopy(loom_mesh_t mesh, const Sharding *sharding,
                 int32_t ignoredAxis = -1);
/// "[dp, tp]": the axes whose bits `mask` sets.
std::string axesNamed(loom_mesh_t mesh, uint64_t mask);

} // namespace loom::program::mesh

#endif // LOOM_RUNTIME_TRAIN_MESH_H
