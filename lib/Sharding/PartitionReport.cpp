//===- PartitionReport.cpp - What a partitioned program does, for humans --===//

#include "loom/Sharding/PartitionReport.h"

#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::loom;

static std::string shapeString(RankedTensorType t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t.getElementType() << "[";
  llvm::interleave(t.getShape(), os, "x");
  os << "]";
  return s;
}



void mlir::loom::printPartitionReport(func::FuncOp fn, llvm::raw_ostream &os) {
  auto meshRef =
      fn->getAttrOfType<FlatSymbolRefAttr>(LoomDialect::kPartitionedAttrName);
  if (!meshRef) {
    os << "@" << fn.getSymName() << " runs on one device (not partitioned)\n";
    return;
  }
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(fn, meshRef);
  os << "plan of @" << fn.getSymName() << " on mesh " << meshRef << " [";
  llvm::interleaveComma(mesh.getAxes(), os, [&](Attribute a) {
    auto axis = cast<MeshAxisAttr>(a);
    os << axis.getName().getValue() << "=" << axis.getSize();
  });
  os << "], " << mesh.getNumDevices() << " devices\n\n";

  os << "arguments (global -> per device: sharding)\n";
  size_t width = 8;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    width = std::max(width, loom::argumentName(fn, i).size());
  int64_t argBytes = 0;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto local = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
    auto sharding =
        fn.getArgAttrOfType<ShardingAttr>(i, LoomDialect::kShardingAttrName);
    SmallVector<int64_t> global(local.getShape());
    if (sharding)
      for (int64_t d = 0; d < sharding.getRank(); ++d)
        for (StringRef a : sharding.getDimAxes(d))
          global[d] *= mesh.getAxis(a).getSize();
    std::string name = loom::argumentName(fn, i);
    os << "  " << name << std::string(width - name.size() + 2, ' ')
       << shapeString(local.clone(global)) << " -> " << shapeString(local);
    if (sharding && !sharding.isFullyReplicated()) {
      os << ": [";
      for (int64_t d = 0; d < sharding.getRank(); ++d) {
        os << (d ? ", " : "") << "{";
        llvm::interleaveComma(sharding.getDimAxes(d), os,
                              [&](StringRef a) { os << '"' << a << '"'; });
        os << "}";
      }
      os << "]";
    } else {
      os << ": replicated";
    }
    os << "\n";
    argBytes += loom::tensorBytes(local);
  }
  os << "  per-device arguments: " << loom::humanBytes(argBytes) << "\n\n";

  struct Group {
    int64_t count = 0;
    double bytes = 0;
  };
  llvm::MapVector<std::string, Group, llvm::StringMap<unsigned>> groups;
  double total = 0;
  fn.walk([&](CollectiveOpInterface op) {
    std::string key = collectiveName(op.getCollectiveKind()).str();
    if (auto r = op->getAttrOfType<ReductionKindAttr>("reduction"))
      key += " (" + stringifyReductionKind(r.getValue()).str() + ")";
    key += " over [";
    llvm::raw_string_ostream keyOs(key);
    llvm::interleaveComma(op.getAxes(), keyOs, [&](Attribute a) {
      keyOs << cast<StringAttr>(a).getValue();
    });
    key += "]";
    if (op.getCollectiveKind() == CollectiveKind::AllSlice)
      key += " (no communication)";
    double sent = op.getBytesSent();
    Group &g = groups[key];
    ++g.count;
    g.bytes += sent;
    total += sent;
  });
  os << "collectives per call (ops, bytes each device sends)\n";
  if (groups.empty())
    os << "  none\n";
  for (auto &[key, g] : groups)
    os << llvm::formatv("  {0,-44} {1,3} op{2}  {3}\n", key, g.count,
                        g.count == 1 ? " " : "s", loom::humanBytes(g.bytes));
  os << "  total sent per device per call: " << loom::humanBytes(total) << "\n";
}
