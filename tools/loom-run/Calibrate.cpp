//===- Calibrate.cpp - loom-run --calibrate -------------------------------===//
//
// The planner's cpu-local cluster prices what this machine was measured to
// do: one core (SGEMM, memory bandwidth; lib/Planner/Cluster.cpp) and, per
// rank count, what a collective adds to a step and the share of a core each
// rank gets (runtime/src/calibrate, run here under mpirun).
//
//===----------------------------------------------------------------------===//

#include "Calibrate.h"

#include "loom/Planner/Cluster.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir::loom;

namespace {

/// loom-calibrate's JSON line, run on `ranks` ranks.
bool measureLink(std::vector<std::string> command, int ranks, bool quick,
                 planner::LinkCalibration &link, std::string &error) {
  llvm::SmallString<256> tool(llvm::sys::path::parent_path(
      llvm::sys::fs::getMainExecutable("loom-run", (void *)&measureLink)));
  llvm::sys::path::append(tool, "loom-calibrate");
  command.push_back(std::string(tool));
  if (quick)
    command.push_back("--quick");
  std::string where = "--calibrate -np " + std::to_string(ranks) + ": ";
  auto mpirun = llvm::sys::findProgramByName(command[0]);
  if (!mpirun) {
    error = where + "cannot find " + command[0] + " (install OpenMPI)";
    return false;
  }
  llvm::SmallString<128> out;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("loom-calibrate", "json", out)) {
    error = where + "cannot make a temporary file: " + ec.message();
    return false;
  }
  llvm::FileRemover remove(out);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt,
                                                llvm::StringRef(out),
                                                std::nullopt};
  std::vector<llvm::StringRef> args(command.begin(), command.end());
  std::string why;
  int rc = llvm::sys::ExecuteAndWait(*mpirun, args, std::nullopt, redirects, 0,
                                     0, &why);
  auto text = llvm::MemoryBuffer::getFile(out);
  std::string printed = text ? (*text)->getBuffer().str() : "";
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(printed);
  const llvm::json::Object *o = v ? v->getAsObject() : nullptr;
  if (!v)
    llvm::consumeError(v.takeError());
  if (rc != 0 || !o) {
    error = where + std::string(tool) + " failed" +
            (why.empty() ? "" : ": " + why) +
            (rc > 0 ? " (exit status " + std::to_string(rc) + ")" : "");
    return false;
  }
  link.ranks = ranks;
  link.cores = o->getInteger("cores").value_or(0);
  link.overhead = o->getNumber("overhead").value_or(-1);
  link.bandwidth = o->getNumber("bandwidth").value_or(0);
  link.computeShare = o->getNumber("compute_share").value_or(0);
  link.streamShare = o->getNumber("stream_share").value_or(0);
  if (link.cores < 1 || link.overhead < 0 || link.bandwidth <= 0) {
    error = where + "loom-calibrate printed no usable numbers: " + printed;
    return false;
  }
  llvm::outs() << llvm::formatv(
      "loom-run: {0} ranks on {1} cores: a collective adds {2:f1} us per "
      "call + bytes sent at {3:f2} GB/s (all-reduce between 0.5 ms "
      "stretches of compute); each rank gets {4:f2} of a core's compute "
      "and {5:f2} of its memory bandwidth\n",
      ranks, link.cores, link.overhead * 1e6, link.bandwidth / 1e9,
      link.computeShare, link.streamShare);
  llvm::outs() << "loom-calibrate: " << printed;
  return true;
}

} // namespace

bool calibrateMachine(std::vector<std::string> mpirun, int ranks, bool quick,
                      std::string &error) {
  std::optional<planner::LinkCalibration> link;
  if (ranks > 1) {
    link.emplace();
    if (!measureLink(std::move(mpirun), ranks, quick, *link, error))
      return false;
  }
  llvm::Expected<std::string> kept =
      planner::recalibrateCpu(link ? &*link : nullptr);
  if (!kept) {
    error = "--calibrate: " + llvm::toString(kept.takeError());
    return false;
  }
  llvm::outs() << "loom-run: calibration kept in " << *kept << "\n";
  return true;
}
