//===- Distributed.cpp - Running partitioned programs on a mesh -----------===//

#include "loom/Execution/Distributed.h"

#include "loom/kernels.h"
#include "loom/program.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>

using namespace mlir;
using namespace mlir::loom;

loom_dtype_t mlir::loom::runtimeType(Type t) {
  if (t.isF32())
    return LOOM_DTYPE_F32;
  if (t.isF64())
    return LOOM_DTYPE_F64;
  if (t.isF16())
    return LOOM_DTYPE_F16;
  if (t.isBF16())
    return LOOM_DTYPE_BF16;
  if (t.isInteger(1))
    return LOOM_DTYPE_BOOL;
  auto i = cast<IntegerType>(t);
  bool u = i.isUnsigned();
  switch (i.getWidth()) {
  case 8:
    return u ? LOOM_DTYPE_U8 : LOOM_DTYPE_I8;
  case 16:
    return u ? LOOM_DTYPE_U16 : LOOM_DTYPE_I16;
  case 32:
    return u ? LOOM_DTYPE_U32 : LOOM_DTYPE_I32;
  default:
    return u ? LOOM_DTYPE_U64 : LOOM_DTYPE_I64;
  }
}

Type mlir::loom::elementTypeOf(loom_dtype_t dtype, MLIRContext *ctx) {
  auto unsignedInt = [ctx](unsigned width) {
    return IntegerType::get(ctx, width, IntegerType::Unsigned);
  };
  switch (dtype) {
  case LOOM_DTYPE_F32:
    return Float32Type::get(ctx);
  case LOOM_DTYPE_F64:
    return Float64Type::get(ctx);
  case LOOM_DTYPE_F16:
    return Float16Type::get(ctx);
  case LOOM_DTYPE_BF16:
    return BFloat16Type::get(ctx);
  case LOOM_DTYPE_I8:
    return IntegerType::get(ctx, 8);
  case LOOM_DTYPE_I16:
    return IntegerType::get(ctx, 16);
  case LOOM_DTYPE_I32:
    return IntegerType::get(ctx, 32);
  case LOOM_DTYPE_I64:
    return IntegerType::get(ctx, 64);
  case LOOM_DTYPE_U8:
    return unsignedInt(8);
  case LOOM_DTYPE_U16:
    return unsignedInt(16);
  case LOOM_DTYPE_U32:
    return unsignedInt(32);
  case LOOM_DTYPE_U64:
    return unsignedInt(64);
  case LOOM_DTYPE_BOOL:
    return IntegerType::get(ctx, 1);
  }
  return {};
}

DistributedContext::~DistributedContext() {
  loom_rt_set_mesh(nullptr);
  loom_mesh_destroy(mesh);
  loom_runtime_destroy(runtime);
}

std::unique_ptr<DistributedContext>
DistributedContext::create(ModuleOp module, MeshOp meshOp,
                           const DistributedOptions &options,
                           std::string &error) {
  if (!meshOp) {
    auto meshes = llvm::to_vector(module.getOps<MeshOp>());
    if (meshes.size() != 1) {
      error = llvm::formatv("the module declares {0} meshes; a distributed "
                            "run needs exactly one",
                            meshes.size())
                  .str();
      return nullptr;
    }
    meshOp = meshes.front();
  }
  std::unique_ptr<DistributedContext> ctx(new DistributedContext());
  ctx->meshOp = meshOp;
  loom_runtime_options_t opts;
  loom_runtime_options_init(&opts);
  opts.timeout_seconds = options.timeoutSeconds;
  if (loom_status_t s = loom_runtime_create(&opts, &ctx->runtime)) {
    error = std::string("cannot start the runtime: ") + loom_status_message(s);
    loom_status_free(s);
    return nullptr;
  }
  SmallVector<int64_t> sizes;
  SmallVector<std::string> names;
  for (Attribute a : meshOp.getAxes()) {
    auto axis = cast<MeshAxisAttr>(a);
    sizes.push_back(axis.getSize());
    names.push_back(axis.getName().str());
  }
  SmallVector<const char *> namePtrs;
  for (const std::string &n : names)
    namePtrs.push_back(n.c_str());
  if (loom_status_t s =
          loom_mesh_create(ctx->runtime, static_cast<int32_t>(sizes.size()),
                           sizes.data(), namePtrs.data(), &ctx->mesh)) {
    error = "mesh @" + meshOp.getSymName().str() + ": " +
            loom_status_message(s) +
            " (launch as many ranks as the mesh has devices)";
    loom_status_free(s);
    return nullptr;
  }
  loom_rt_set_mesh(ctx->mesh);
  return ctx;
}

int DistributedContext::rank() const { return loom_runtime_rank(runtime); }
int DistributedContext::size() const { return loom_runtime_size(runtime); }

std::optional<std::vector<int64_t>>
DistributedContext::allGather(ArrayRef<int64_t> values,
                              std::string &error) const {
  // Over every axis in declaration order: group order is rank order.
  SmallVector<int32_t> axes;
  for (int32_t a = 0; a < loom_mesh_num_axes(mesh); ++a)
    axes.push_back(a);
  std::vector<int64_t> all(values.size() * size());
  if (loom_status_t s = loom_all_gather(
          mesh, axes.data(), static_cast<int32_t>(axes.size()), LOOM_DTYPE_I64,
          values.data(), all.data(), static_cast<int64_t>(values.size()))) {
    error = loom_status_message(s);
    loom_status_free(s);
    return std::nullopt;
  }
  return all;
}

RankedTensorType DistributedContext::globalType(RankedTensorType local,
                                                ShardingAttr sharding) const {
  if (!sharding)
    return local;
  SmallVector<int64_t> shape(local.getShape());
  for (int64_t d = 0, e = shape.size(); d < e && d < sharding.getRank(); ++d)
    for (StringRef axis : sharding.getDimAxes(d))
      shape[d] *= meshOp.getAxis(axis).getSize();
  return local.clone(shape);
}

void mlir::loom::copyBlock(const char *src, ArrayRef<int64_t> srcShape,
                           ArrayRef<int64_t> srcOffset, char *dst,
                           ArrayRef<int64_t> dstShape,
                           ArrayRef<int64_t> dstOffset, ArrayRef<int64_t> shape,
                           int64_t bytes) {
  ::loom::program::copyBlock(src, srcShape.vec(), srcOffset.vec(), dst,
                             dstShape.vec(), dstOffset.vec(), shape.vec(),
                             bytes);
}

::loom::program::Sharding mlir::loom::toProgramSharding(ShardingAttr sharding,
                                                       MeshOp mesh) {
  ::loom::program::Sharding out;
  if (!sharding)
    return out;
  for (int64_t d = 0; d < sharding.getRank(); ++d) {
    out.dims.emplace_back();
    for (StringRef axis : sharding.getDimAxes(d))
      out.dims.back().push_back(int32_t(mesh.getAxisIndex(axis)));
  }
  for (StringRef axis : sharding.getPartialAxisNames())
    out.partial.push_back(int32_t(mesh.getAxisIndex(axis)));
  out.partialKind = static_cast<loom_reduction_t>(sharding.getPartialKind());
  return out;
}

SmallVector<int64_t>
DistributedContext::blockOffset(ArrayRef<int64_t> shape,
                                ShardingAttr sharding) const {
  std::vector<int64_t> offset = ::loom::program::blockOffset(
      mesh, shape.vec(), toProgramSharding(sharding, meshOp));
  return SmallVector<int64_t>(offset.begin(), offset.end());
}

bool DistributedContext::isFirstCopy(ShardingAttr sharding,
                                     int32_t ignoredAxis) const {
  llvm::SmallDenseSet<int64_t> split;
  if (sharding)
    for (int64_t d = 0; d < sharding.getRank(); ++d)
      for (StringRef axis : sharding.getDimAxes(d))
        split.insert(meshOp.getAxisIndex(axis));
  for (int32_t a = 0; a < loom_mesh_num_axes(mesh); ++a)
    if (a != ignoredAxis && !split.count(a) &&
        loom_mesh_coordinate(mesh, a) != 0)
      return false;
  return true;
}

bool DistributedContext::agree(bool ok, StringRef what,
                               std::string &error) const {
  std::string mine = error;
  std::optional<std::vector<int64_t>> all = allGather({ok ? 0 : 1}, error);
  if (!all)
    return false;
  for (auto [r, failed] : llvm::enumerate(*all))
    if (failed) {
      error = ok ? llvm::formatv("rank {0} failed to {1}", r, what).str()
                 : mine;
      return false;
    }
  return true;
}

HostTensor DistributedContext::localShard(const HostTensor &global,
                                          ShardingAttr sharding) const {
  if (!sharding)
    return global;
  ArrayRef<int64_t> shape = global.getShape();
  SmallVector<int64_t> local(shape);
  SmallVector<int64_t> offset = blockOffset(shape, sharding);
  for (int64_t d = 0, e = shape.size(); d < e && d < sharding.getRank(); ++d) {
    int64_t parts = 1;
    for (StringRef axis : sharding.getDimAxes(d))
      parts *= meshOp.getAxis(axis).getSize();
    local[d] = shape[d] / parts;
  }
  HostTensor out(global.getType().clone(local));
  SmallVector<int64_t> zeros(shape.size(), 0);
  copyBlock(global.data(), shape, offset, out.data(), local, zeros, local,
            HostTensor::elementBytes(global.getElementType()));
  return out;
}

std::optional<HostTensor>
DistributedContext::gatherGlobal(const HostTensor &local,
                                 ShardingAttr sharding,
                                 std::string &error) const {
  if (!sharding)
    return local;
  HostTensor value = local.clone();
  HostTensor global(globalType(local.getType(), sharding));
  if (loom_status_t s = ::loom::program::gatherGlobal(
          mesh, toProgramSharding(sharding, meshOp),
          runtimeType(local.getElementType()), local.getShape().vec(),
          global.getShape().vec(), value.data(), global.data())) {
    error = loom_status_message(s);
    loom_status_free(s);
    return std::nullopt;
  }
  return global;
}
