//===- mesh.cpp - What the training loop asks of a mesh -------------------===//

#include "mesh.h"

#include <cstdio>

#include <set>

using namespace loom::program;

int mesh::rank(loom_mesh_t m) {
  std::vector<int64_t> coords;
  for (int32_t a = 0; a < loom_mesh_num_axes(m); ++a)
    coords.push_back(loom_mesh_coordinate(m, a));
  return loom_mesh_rank_at(m, coords.data());
}

int mesh::size(loom_mesh_t m) {
  int64_t n = 1;
  for (int32_t a = 0; a < loom_mesh_num_axes(m); ++a)
    n *= loom_mesh_axis_size(m, a);
  return int(n);
}

bool mesh::allGather(loom_mesh_t m, const std::vector<int64_t> &values,
                     std::vector<int64_t> &all, std::string &error) {
  // Over every axis in declaration order: group order is rank order.
  std::vector<int32_t> axes;
  for (int32_t a = 0; a < loom_mesh_num_axes(m); ++a)
    axes.push_back(a);
  all.assign(values.size() * size_t(size(m)), 0);
  if (loom_status_t s = loom_all_gather(
          m, axes.data(), int32_t(axes.size()), LOOM_DTYPE_I64, values.data(),
          all.data(), int64_t(values.size()))) {
    error = loom_status_message(s);
    loom_status_free(s);
    return false;
  }
  return true;
}

bool mesh::agree(loom_mesh_t m, bool ok, const std::string &what,
                 std::string &error) {
  std::string mine = error;
  // A rank that failed says why now, before the ranks agree: once rank 0
  // learns of the failure it exits, the launcher ends the job, and a
  // message printed after the agreement was often lost (only "rank R
  // failed to ..." was left).
  if (!ok && size(m) > 1) {
    std::fprintf(stderr, "loom: rank %d: %s\n", int(rank(m)), mine.c_str());
    std::fflush(stderr);
  }
  std::vector<int64_t> all;
  if (!allGather(m, {ok ? 0 : 1}, all, error))
    return false;
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r]) {
      error = ok ? "rank " + std::to_string(r) + " failed to " + what : mine;
      return false;
    }
  return true;
}

bool mesh::isFirstCopy(loom_mesh_t m, const Sharding *sharding,
                       int32_t ignoredAxis) {
  std::set<int32_t> split;
  if (sharding)
    for (const auto &dim : sharding->dims)
      split.insert(dim.begin(), dim.end());
  for (int32_t a = 0; a < loom_mesh_num_axes(m); ++a)
    if (a != ignoredAxis && !split.count(a) && loom_mesh_coordinate(m, a) != 0)
      return false;
  return true;
}

std::string mesh::axesNamed(loom_mesh_t m, uint64_t mask) {
  std::string axes;
  for (int32_t a = 0; a < loom_mesh_num_axes(m); ++a)
    if (mask >> a & 1)
      axes += (axes.empty() ? "" : ", ") + std::string(loom_mesh_axis_name(m, a));
  return "[" + axes + "]";
}
