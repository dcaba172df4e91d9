//===- Schedule.cpp - Pipeline schedules as action lists ------------------===//
//
// The orders follow their sources: GPipe (Huang et al. 2019) runs every
// forward, then every backward; 1F1B is PipeDream-Flush / Megatron-LM's
// non-interleaved schedule (rank r warms up with P - r - 1 forwards);
// interleaved is Megatron-LM's virtual-pipeline order (Narayanan et al.
// 2021: forwards of micro-batch groups of P cycle through the rank's
// stages, warm-up (P - r - 1) * 2 + (V - 1) * P); ZB-H1 (Qi et al. 2023)
// is 1F1B with the backward split into its input half, which the previous
// stage waits for, and its weight half, of which rank r defers r into the
// cool-down: the gradients then travel back at the pace of the input
// halves alone, and every rank holds at most P micro-batches (1F1B's peak,
// on its first rank). With unit F, I and W its bubble is the paper's
// (P - 1) / (3M + P - 1) against 1F1B's 3(P - 1) / (3M + 3(P - 1)).
//
//===----------------------------------------------------------------------===//

#include "loom/Stages/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <cmath>
#include <map>

using namespace mlir::loom::stages;
using llvm::StringRef;

static const char *kindName(ActionKind k) {
  switch (k) {
  case ActionKind::Forward:
    return "F";
  case ActionKind::Backward:
    return "B";
  case ActionKind::BackwardInput:
    return "I";
  case ActionKind::BackwardWeight:
    return "W";
  case ActionKind::SendForward:
    return "SEND_F";
  case ActionKind::RecvForward:
    return "RECV_F";
  case ActionKind::SendBackward:
    return "SEND_B";
  case ActionKind::RecvBackward:
    return "RECV_B";
  case ActionKind::Update:
    return "U";
  }
  return "?";
}

std::string mlir::loom::stages::toString(const Action &a) {
  if (a.kind == ActionKind::Update)
    return llvm::formatv("U({0})", a.stage).str();
  return llvm::formatv("{0}({1},{2})", kindName(a.kind), a.stage, a.micro)
      .str();
}

std::optional<Action> mlir::loom::stages::parseAction(StringRef text) {
  auto [name, rest] = text.split('(');
  if (!rest.consume_back(")"))
    return std::nullopt;
  for (int k = 0; k <= int(ActionKind::Update); ++k) {
    if (name != kindName(ActionKind(k)))
      continue;
    Action a{ActionKind(k), 0, 0};
    auto [s, m] = rest.split(',');
    if (s.trim().getAsInteger(10, a.stage) || a.stage < 0)
      return std::nullopt;
    if (a.kind == ActionKind::Update)
      return m.empty() ? std::optional<Action>(a) : std::nullopt;
    if (m.trim().getAsInteger(10, a.micro) || a.micro < 0)
      return std::nullopt;
    return a;
  }
  return std::nullopt;
}

llvm::ArrayRef<StringRef> mlir::loom::stages::scheduleNames() {
  static const StringRef names[] = {"gpipe", "1f1b", "interleaved", "zb-h1"};
  return names;
}

Durations Durations::uniform(int stages, double f, double b) {
  Durations d;
  d.forward.assign(stages, f);
  d.backwardInput.assign(stages, b / 2);
  d.backwardWeight.assign(stages, b / 2);
  return d;
}

namespace {

/// Adds the transfers around compute actions and the updates at the end.
std::vector<Action> withTransfers(const std::vector<Action> &compute,
                                  const PipelineShape &shape, int rank) {
  int last = shape.stages() - 1;
  std::vector<Action> out;
  for (const Action &a : compute) {
    bool fwd = a.kind == ActionKind::Forward;
    bool needsGrad =
        a.kind == ActionKind::Backward || a.kind == ActionKind::BackwardInput;
    if (fwd && a.stage > 0)
      out.push_back({ActionKind::RecvForward, a.stage, a.micro});
    if (needsGrad && a.stage < last)
      out.push_back({ActionKind::RecvBackward, a.stage, a.micro});
    out.push_back(a);
    if (fwd && a.stage < last)
      out.push_back({ActionKind::SendForward, a.stage, a.micro});
    if (needsGrad && a.stage > 0)
      out.push_back({ActionKind::SendBackward, a.stage, a.micro});
  }
  for (int v = 0; v < shape.virtualStages; ++v)
    out.push_back({ActionKind::Update, rank + v * shape.ranks, 0});
  return out;
}

std::vector<Action> oneFOneB(const PipelineShape &shape, int r, bool split) {
  int p = shape.ranks, m = shape.microBatches;
  int warm = std::min(p - r - 1, m);
  std::vector<Action> c;
  for (int i = 0; i < warm; ++i)
    c.push_back({ActionKind::Forward, r, i});
  // ZB-H1: rank r defers this many weight halves into the cool-down (the
  // last rank the most: its input halves pace the whole cool-down).
  int defer = split ? std::min(r, m) : 0;
  int nextW = 0;
  auto backward = [&](int i) {
    if (!split) {
      c.push_back({ActionKind::Backward, r, i});
      return;
    }
    c.push_back({ActionKind::BackwardInput, r, i});
    if (i - nextW >= defer)
      c.push_back({ActionKind::BackwardWeight, r, nextW++});
  };
  for (int i = 0; i < m - warm; ++i) {
    c.push_back({ActionKind::Forward, r, warm + i});
    backward(i);
  }
  for (int i = m - warm; i < m; ++i) {
    if (!split) {
      c.push_back({ActionKind::Backward, r, i});
      continue;
    }
    // In the cool-down each input half is followed by a deferred weight
    // half, which runs while the next gradient is on its way.
    c.push_back({ActionKind::BackwardInput, r, i});
    c.push_back({ActionKind::BackwardWeight, r, nextW++});
  }
  while (split && nextW < m)
    c.push_back({ActionKind::BackwardWeight, r, nextW++});
  return c;
}

std::vector<Action> interleaved(const PipelineShape &shape, int r) {
  int p = shape.ranks, v = shape.virtualStages, m = shape.microBatches;
  int total = m * v;
  auto forwardAt = [&](int k) {
    int chunk = (k % (p * v)) / p;
    int micro = (k / (p * v)) * p + k % p;
    return Action{ActionKind::Forward, chunk * p + r, micro};
  };
  auto backwardAt = [&](int k) {
    int chunk = v - 1 - (k % (p * v)) / p;
    int micro = (k / (p * v)) * p + k % p;
    return Action{ActionKind::Backward, chunk * p + r, micro};
  };
  int warm = std::min((p - r - 1) * 2 + (v - 1) * p, total);
  std::vector<Action> c;
  for (int k = 0; k < warm; ++k)
    c.push_back(forwardAt(k));
  for (int k = 0; k < total - warm; ++k) {
    c.push_back(forwardAt(warm + k));
    c.push_back(backwardAt(k));
  }
  for (int k = total - warm; k < total; ++k)
    c.push_back(backwardAt(k));
  return c;
}

} // namespace

std::optional<Schedule>
mlir::loom::stages::buildSchedule(StringRef name, const PipelineShape &shape,
                                  std::string &error) {
  int p = shape.ranks, v = shape.virtualStages, m = shape.microBatches;
  if (p < 1 || v < 1 || m < 1) {
    error = "a pipeline needs at least one rank, stage and micro-batch";
    return std::nullopt;
  }
  if (!llvm::is_contained(scheduleNames(), name)) {
    error = llvm::formatv("unknown schedule '{0}' (expected gpipe, 1f1b, "
                          "interleaved or zb-h1)",
                          name)
                .str();
    return std::nullopt;
  }
  if (name == "interleaved") {
    if (v < 2) {
      error = "the interleaved schedule needs 2 or more virtual stages per "
              "rank (--virtual-stages)";
      return std::nullopt;
    }
    if (m % p != 0) {
      error = llvm::formatv("the interleaved schedule runs micro-batches in "
                            "groups of the {0} pipeline ranks; {1} "
                            "micro-batches are not a multiple of {0}",
                            p, m)
                  .str();
      return std::nullopt;
    }
  } else if (v != 1) {
    error = llvm::formatv("virtual stages ({0} per rank) need the "
                          "interleaved schedule, not {1}",
                          v, name)
                .str();
    return std::nullopt;
  }
  Schedule s(p);
  for (int r = 0; r < p; ++r) {
    std::vector<Action> c;
    if (name == "gpipe") {
      for (int i = 0; i < m; ++i)
        c.push_back({ActionKind::Forward, r, i});
      for (int i = 0; i < m; ++i)
        c.push_back({ActionKind::Backward, r, i});
    } else if (name == "1f1b" || name == "zb-h1") {
      c = oneFOneB(shape, r, name == "zb-h1");
    } else {
      c = interleaved(shape, r);
    }
    s[r] = withTransfers(c, shape, r);
  }
  return s;
}

std::optional<Timeline>
mlir::loom::stages::simulate(const Schedule &schedule,
                             const PipelineShape &shape,
                             const Durations &d, std::string &error) {
  int p = shape.ranks, m = shape.microBatches, stages = shape.stages();
  if (int(schedule.size()) != p) {
    error = llvm::formatv("the schedule has {0} ranks, the pipeline {1}",
                          schedule.size(), p)
                .str();
    return std::nullopt;
  }
  // Per (stage, micro): what ran, for order checks.
  enum { kF = 1, kI = 2, kW = 4 };
  std::vector<std::vector<int>> done(stages, std::vector<int>(m, 0));
  std::map<std::tuple<int, int, int>, double> sent; // (dir, stage, micro)
  std::vector<size_t> next(p, 0);
  std::vector<double> now(p, 0);
  Timeline t;
  t.ranks.assign(p, {});
  t.inFlight.assign(p, 0);
  std::vector<int> holding(p, 0);
  auto fail = [&](const Action &a, int r, const std::string &why) {
    error = llvm::formatv("rank {0}: {1}: {2}", r, toString(a), why).str();
    return std::nullopt;
  };
  bool progress = true;
  size_t remaining = 0;
  for (auto &list : schedule)
    remaining += list.size();
  while (remaining > 0 && progress) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      while (next[r] < schedule[r].size()) {
        const Action &a = schedule[r][next[r]];
        if (a.stage < 0 || a.stage >= stages || shape.rankOf(a.stage) != r)
          return fail(a, r, llvm::formatv("stage {0} is not on this rank",
                                          a.stage)
                                .str());
        if (a.kind != ActionKind::Update && (a.micro < 0 || a.micro >= m))
          return fail(a, r, "no such micro-batch");
        int unused = 0;
        int &state =
            a.kind == ActionKind::Update ? unused : done[a.stage][a.micro];
        double dur = 0;
        switch (a.kind) {
        case ActionKind::RecvForward:
        case ActionKind::RecvBackward: {
          int dir = a.kind == ActionKind::RecvForward ? 0 : 1;
          int from = dir == 0 ? a.stage - 1 : a.stage + 1;
          auto it = sent.find({dir, from, a.micro});
          if (it == sent.end())
            goto blocked;
          double transfer =
              d.transfers.empty() ? d.transfer : d.transfers[from];
          now[r] = std::max(now[r], it->second + transfer);
          break;
        }
        case ActionKind::SendForward:
          if (!(state & kF))
            return fail(a, r, "sends before its forward ran");
          sent[{0, a.stage, a.micro}] = now[r];
          break;
        case ActionKind::SendBackward:
          if (!(state & kI))
            return fail(a, r, "sends before its backward ran");
          sent[{1, a.stage, a.micro}] = now[r];
          break;
        case ActionKind::Forward:
          if (state & kF)
            return fail(a, r, "runs twice");
          state |= kF;
          dur = d.forward[a.stage];
          ++holding[r];
          t.inFlight[r] = std::max(t.inFlight[r], holding[r]);
          break;
        case ActionKind::Backward:
        case ActionKind::BackwardInput:
          if (!(state & kF) || (state & kI))
            return fail(a, r, (state & kI) ? "runs twice"
                                            : "runs before its forward");
          state |= kI;
          dur = d.backwardInput[a.stage];
          if (a.kind == ActionKind::Backward) {
            state |= kW;
            dur += d.backwardWeight[a.stage];
            --holding[r];
          }
          break;
        case ActionKind::BackwardWeight:
          if (!(state & kI) || (state & kW))
            return fail(a, r, (state & kW) ? "runs twice"
                                            : "runs before its input half");
          state |= kW;
          dur = d.backwardWeight[a.stage];
          --holding[r];
          break;
        case ActionKind::Update:
          for (int i = 0; i < m; ++i)
            if (done[a.stage][i] != (kF | kI | kW))
              return fail(a, r,
                          llvm::formatv("micro-batch {0} has not finished "
                                        "its backward",
                                        i)
                              .str());
          now[r] += d.updates.empty() ? d.update : d.updates[a.stage];
          break;
        }
        if (dur > 0) {
          t.ranks[r].push_back({a, now[r], now[r] + dur});
          now[r] += dur;
        }
        ++next[r];
        --remaining;
        progress = true;
      }
    blocked:;
    }
  }
  if (remaining > 0) {
    std::string blocked;
    for (int r = 0; r < p; ++r)
      if (next[r] < schedule[r].size())
        blocked += llvm::formatv("{0}rank {1} waits at {2}",
                                 blocked.empty() ? "" : "; ", r,
                                 toString(schedule[r][next[r]]))
                       .str();
    error = "the schedule cannot finish (deadlock): " + blocked;
    return std::nullopt;
  }
  for (int s = 0; s < stages; ++s)
    for (int i = 0; i < m; ++i)
      if (done[s][i] != (kF | kI | kW)) {
        error = llvm::formatv("the schedule never finishes micro-batch {0} "
                              "of stage {1}",
                              i, s)
                    .str();
        return std::nullopt;
      }
  double busy = 0;
  for (auto &spans : t.ranks)
    for (const Span &s : spans) {
      busy += s.end - s.start;
      t.makespan = std::max(t.makespan, s.end);
    }
  t.bubble = t.makespan > 0 ? 1.0 - busy / (p * t.makespan) : 0;
  t.end = *std::max_element(now.begin(), now.end());
  return t;
}

void mlir::loom::stages::printTimeline(const Timeline &t,
                                       const PipelineShape &shape,
                                       llvm::raw_ostream &os) {
  double unit = 1e30;
  for (auto &spans : t.ranks)
    for (const Span &s : spans)
      unit = std::min(unit, s.end - s.start);
  if (unit <= 0 || unit > 1e29)
    return;
  unit = std::max(unit, t.makespan / 160);
  int cols = int(std::ceil(t.makespan / unit - 1e-9));
  os << "timeline (one column = " << llvm::format("%.3g", unit)
     << " time units; F forward, B backward, I/W its input/weight halves, "
        "digits the micro-batch mod 10, . idle):\n";
  for (auto [r, spans] : llvm::enumerate(t.ranks)) {
    std::string kinds(cols, '.'), micros(cols, ' ');
    for (const Span &s : spans) {
      int from = int(std::lround(s.start / unit));
      int to = std::max(from + 1, int(std::lround(s.end / unit)));
      for (int c = from; c < to && c < cols; ++c) {
        kinds[c] = kindName(s.action.kind)[0];
        micros[c] = char('0' + s.action.micro % 10);
      }
    }
    os << llvm::formatv("  rank {0,-2} |{1}|\n", r, kinds);
    os << llvm::formatv("          |{0}|\n", micros);
  }
  os << llvm::formatv("bubble fraction {0:f3} ({1} ranks, {2} stages, {3} "
                      "micro-batches)\n",
                      t.bubble, shape.ranks, shape.stages(),
                      shape.microBatches);
}

void mlir::loom::stages::writeSvg(const Timeline &t,
                                  const PipelineShape &shape,
                                  llvm::raw_ostream &os) {
  double scale = t.makespan > 0 ? 900.0 / t.makespan : 1;
  int rowH = 28, left = 70, top = 30;
  int height = top + rowH * int(t.ranks.size()) + 30;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + 920
     << "\" height=\"" << height << "\" font-family=\"monospace\" "
     << "font-size=\"11\">\n";
  os << llvm::formatv("<text x=\"{0}\" y=\"18\">bubble fraction {1:f3}: {2} "
                      "ranks, {3} stages, {4} micro-batches</text>\n",
                      left, t.bubble, shape.ranks, shape.stages(),
                      shape.microBatches);
  for (auto [r, spans] : llvm::enumerate(t.ranks)) {
    int y = top + int(r) * rowH;
    os << llvm::formatv("<text x=\"4\" y=\"{0}\">rank {1}</text>\n",
                        y + rowH / 2 + 4, r);
    for (const Span &s : spans) {
      const char *fill = "#4c78a8";
      if (s.action.kind == ActionKind::Backward ||
          s.action.kind == ActionKind::BackwardInput)
        fill = "#f58518";
      else if (s.action.kind == ActionKind::BackwardWeight)
        fill = "#54a24b";
      double x = left + s.start * scale, w = (s.end - s.start) * scale;
      os << llvm::formatv("<rect x=\"{0:f1}\" y=\"{1}\" width=\"{2:f1}\" "
                          "height=\"{3}\" fill=\"{4}\" stroke=\"white\"/>\n",
                          x, y, w, rowH - 4, fill);
      os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1}\" fill=\"white\">{2}{3}"
                          "</text>\n",
                          x + 2, y + rowH / 2 + 2, kindName(s.action.kind),
                          s.action.micro);
    }
  }
  os << "</svg>\n";
}
