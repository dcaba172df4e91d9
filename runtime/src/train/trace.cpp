//===- trace.cpp - Traces, profiles, memory and faults of training --------===//

#include "loom/train.h"

#include "../program/internal.h"
#include "json.h"
#include "mesh.h"

#include <algorithm>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <unistd.h>

using namespace loom::program;
using JValue = loom::json::Value;

void MemoryUse::merge(const MemoryUse &o) {
  parameters = std::max(parameters, o.parameters);
  optimizerState = std::max(optimizerState, o.optimizerState);
  inputs = std::max(inputs, o.inputs);
  results = std::max(results, o.results);
  temporaries = std::max(temporaries, o.temporaries);
}

std::string loom::program::parseFault(const std::string &spec,
                                      TrainOptions &options) {
  std::string bad = "LOOM_FAULT: expected RANK:STEP:kill|stop|exit|save, got '" +
                    spec + "'";
  size_t a = spec.find(':'), b = a == std::string::npos
                                     ? a
                                     : spec.find(':', a + 1);
  if (b == std::string::npos)
    return bad;
  auto number = [](const std::string &s, int64_t &out) {
    char *end = nullptr;
    out = std::strtoll(s.c_str(), &end, 10);
    return !s.empty() && *end == 0;
  };
  std::string mode = spec.substr(b + 1);
  if (!number(spec.substr(0, a), options.faultRank) ||
      !number(spec.substr(a + 1, b - a - 1), options.faultStep) ||
      (mode != "kill" && mode != "stop" && mode != "exit" && mode != "save"))
    return bad;
  options.faultMode = mode;
  return "";
}

namespace loom::program::detail {

void injectFault(const TrainOptions &options, int rank, int64_t step) {
  if (options.faultMode.empty() || options.faultMode == "save" ||
      rank != options.faultRank || step != options.faultStep)
    return;
  // One write: mpirun interleaves the ranks' output and a line written in
  // pieces can be split by another rank's.
  char line[160];
  std::snprintf(line, sizeof(line), "loom: LOOM_FAULT: rank %lld %s before "
                                    "step %lld\n",
                (long long)options.faultRank, options.faultMode.c_str(),
                (long long)step);
  ssize_t unused = ::write(2, line, std::strlen(line));
  (void)unused;
  if (options.faultMode == "kill")
    std::raise(SIGKILL);
  else if (options.faultMode == "stop")
    std::raise(SIGSTOP);
  else
    _exit(3);
}

/// Events travel as fixed-size records (kind, axes, bytes, step, start and
/// duration in nanoseconds, stage, micro-batch, started), padded to the
/// longest rank's count.
bool gatherTrace(loom_mesh_t m, std::vector<TraceEvent> &events,
                 std::string &error) {
  static const char *const kinds[] = {
      "",          "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
      "send_recv", "barrier",    "F",          "B",              "I",
      "W",         "U",          "wait",       "isend",          "irecv",
      "collective_wait"};
  constexpr int kKinds = int(sizeof(kinds) / sizeof(kinds[0])), kFields = 9;
  std::vector<int64_t> counts;
  if (!mesh::allGather(m, {int64_t(events.size())}, counts, error))
    return false;
  int64_t most = *std::max_element(counts.begin(), counts.end());
  std::vector<int64_t> mine(size_t(most * kFields), -1), all;
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent &e = events[i];
    int64_t kind = 0;
    for (int k = 1; k < kKinds; ++k)
      if (e.op == kinds[k])
        kind = k;
    int64_t *r = &mine[i * kFields];
    r[0] = kind;
    r[1] = int64_t(e.mask);
    r[2] = e.bytes;
    r[3] = e.step;
    r[4] = int64_t(e.start * 1e3);
    r[5] = int64_t(e.duration * 1e3);
    r[6] = e.stage;
    r[7] = e.micro;
    r[8] = e.started;
  }
  if (!mesh::allGather(m, mine, all, error))
    return false;
  if (mesh::rank(m) != 0)
    return true;
  events.clear();
  for (int rank = 0; rank < mesh::size(m); ++rank)
    for (int64_t i = 0; i < most; ++i) {
      const int64_t *r = &all[size_t((rank * most + i) * kFields)];
      if (r[0] < 0)
        continue;
      bool collective = r[0] > 0 && r[6] < 0;
      TraceEvent e;
      e.rank = rank;
      e.step = r[3];
      e.op = kinds[r[0]];
      e.axes = collective ? mesh::axesNamed(m, uint64_t(r[1])) : "";
      e.mask = uint64_t(r[1]);
      e.bytes = r[2];
      e.start = double(r[4]) * 1e-3;
      e.duration = double(r[5]) * 1e-3;
      e.stage = int(r[6]);
      e.micro = int(r[7]);
      e.started = r[8] != 0;
      events.push_back(std::move(e));
    }
  return true;
}

} // namespace loom::program::detail

std::string loom::program::chromeTrace(const std::vector<TraceEvent> &events) {
  JValue out = JValue::array();
  std::set<int> ranks;
  for (const TraceEvent &e : events)
    ranks.insert(e.rank);
  auto meta = [&](const char *name, int pid, int tid, const std::string &value) {
    JValue v = JValue::object();
    v["name"] = name;
    v["ph"] = "M";
    v["pid"] = pid;
    v["tid"] = tid;
    v["args"]["name"] = value;
    out.push_back(std::move(v));
  };
  for (int r : ranks) {
    meta("process_name", r, 0, "rank " + std::to_string(r));
    meta("thread_name", r, 0, "steps");
    meta("thread_name", r, 1, "collectives");
    meta("thread_name", r, 2, "pipeline");
  }
  for (const TraceEvent &e : events) {
    bool step = e.op.empty(), action = e.isPipelineAction();
    JValue args = JValue::object();
    args["step"] = e.step;
    std::string name =
        step ? "step " + std::to_string(e.step) : e.op + " " + e.axes;
    if (action) {
      args["stage"] = e.stage;
      args["micro_batch"] = e.micro;
      name = e.op + " s" + std::to_string(e.stage) + " m" +
             std::to_string(e.micro);
    } else if (!step) {
      args["bytes"] = e.bytes;
      if (e.started)
        args["started"] = true;
    }
    JValue v = JValue::object();
    v["name"] = name;
    v["cat"] = step                ? "step"
               : action            ? "pipeline"
               : e.isWait()        ? "wait"
                                   : "collective";
    v["ph"] = "X";
    v["pid"] = e.rank;
    v["tid"] = step || e.isWait() ? 0 : action ? 2 : 1;
    v["ts"] = e.start;
    v["dur"] = e.duration;
    v["args"] = std::move(args);
    out.push_back(std::move(v));
  }
  JValue doc = JValue::object();
  doc["traceEvents"] = std::move(out);
  doc["displayTimeUnit"] = "ms";
  return doc.print(2) + "\n";
}

namespace {
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  return buf;
}
} // namespace

std::string loom::program::profileText(const std::vector<TraceEvent> &events,
                                       int ranks) {
  // Per step and rank: the step's time and the time its thread spent in
  // collectives (blocking ones and waits for started ones); the started
  // ones' count and time on the lane.
  std::map<int64_t, std::map<int, std::pair<double, double>>> steps;
  std::map<int64_t, std::map<int, int>> calls, startedCalls;
  std::map<int64_t, std::map<int, double>> lane;
  std::map<std::string, std::tuple<double, int64_t, double>> kinds;
  std::map<std::pair<int, std::string>, double> actions;
  for (const TraceEvent &e : events) {
    if (e.op.empty()) {
      steps[e.step][e.rank].first = e.duration;
      continue;
    }
    if (e.isPipelineAction()) {
      if (e.op != "U")
        actions[{e.rank, e.op}] += e.duration;
      continue;
    }
    if (e.isWait()) {
      if (e.step >= 0)
        steps[e.step][e.rank].second += e.duration;
      continue;
    }
    if (e.step >= 0) {
      if (e.started) {
        lane[e.step][e.rank] += e.duration;
        ++startedCalls[e.step][e.rank];
      } else {
        steps[e.step][e.rank].second += e.duration;
      }
      ++calls[e.step][e.rank];
    }
    auto &[count, bytes, time] = kinds[e.op + " over " + e.axes];
    count += 1;
    bytes += e.bytes;
    time += e.duration;
  }
  std::string os =
      format("profile: %d rank(s); per step, the slowest rank\n", ranks);
  double total = 0, comm = 0;
  for (auto &[s, perRank] : steps) {
    int slowest = perRank.begin()->first;
    for (auto &[r, t] : perRank)
      if (t.first > perRank[slowest].first)
        slowest = r;
    auto [step, coll] = perRank[slowest];
    total += step;
    comm += coll;
    std::string overlapped;
    if (int n = startedCalls[s][slowest])
      overlapped = format(" (%d started: %.3f ms on the lane, the rest of "
                          "the time waited)",
                          n, lane[s][slowest] * 1e-3);
    os += format("  step %lld: %.3f ms (rank %d), collectives %.3f ms in %d "
                 "calls%s (%.1f%%), other %.3f ms\n",
                 (long long)s, step * 1e-3, slowest, coll * 1e-3,
                 calls[s][slowest], overlapped.c_str(),
                 step > 0 ? 100 * coll / step : 0.0, (step - coll) * 1e-3);
  }
  if (!steps.empty())
    os += format("  mean: %.3f ms per step, %.3f ms in collectives\n",
                 total / double(steps.size()) * 1e-3,
                 comm / double(steps.size()) * 1e-3);
  if (!kinds.empty()) {
    os += "  collectives, all ranks and steps (calls, buffer bytes, time):\n";
    for (auto &[name, k] : kinds)
      os += format("    %-36s %6.0f calls %12lld B %10.3f ms\n", name.c_str(),
                   std::get<0>(k), (long long)std::get<1>(k),
                   std::get<2>(k) * 1e-3);
  }
  if (actions.empty())
    return os;
  os += "  pipeline actions, all steps (F forward, B backward, I/W its "
        "input/weight halves, wait: receives):\n";
  int rank = -1;
  for (auto &[key, time] : actions) {
    if (key.first != rank) {
      os += format("%s    rank %d:", rank < 0 ? "" : "\n", key.first);
      rank = key.first;
    }
    os += format(" %s %.3f ms", key.second.c_str(), time * 1e-3);
  }
  os += "\n";
  double bubble = pipelineBubble(events, steps.size() > 1 ? 1 : 0);
  os += format("  measured bubble fraction %.3f (steps %d..%lld)\n", bubble,
               steps.size() > 1 ? 1 : 0, (long long)steps.size() - 1);
  return os;
}

double loom::program::pipelineBubble(const std::vector<TraceEvent> &events,
                                     int64_t skip) {
  // Per step: the span of every rank's actions, each rank's busy time.
  std::map<int64_t, std::pair<double, double>> span;
  std::map<int64_t, std::map<int, double>> busy;
  for (const TraceEvent &e : events) {
    if (!e.isPipelineAction() || e.step < skip || e.op == "wait" ||
        e.op == "U")
      continue;
    auto [it, fresh] = span.try_emplace(e.step, e.start, e.start + e.duration);
    if (!fresh) {
      it->second.first = std::min(it->second.first, e.start);
      it->second.second = std::max(it->second.second, e.start + e.duration);
    }
    busy[e.step][e.rank] += e.duration;
  }
  double sum = 0;
  int n = 0;
  for (auto &[step, perRank] : busy) {
    double length = span[step].second - span[step].first;
    for (auto &[rank, time] : perRank) {
      sum += length > 0 ? 1 - time / length : 0;
      ++n;
    }
  }
  return n ? sum / n : -1;
}

double loom::program::meanActionTime(const std::vector<TraceEvent> &events,
                                     const std::string &op, int stage) {
  int64_t steps = 0;
  for (const TraceEvent &e : events)
    steps = std::max(steps, e.step + 1);
  double total = 0;
  int n = 0;
  for (const TraceEvent &e : events)
    if (e.isPipelineAction() && e.op == op && e.stage == stage &&
        (e.step > 0 || steps == 1)) {
      total += e.duration;
      ++n;
    }
  return n ? total / n : 0.0;
}
