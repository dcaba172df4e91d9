//===- manifest.cpp - The text form of a rank program's manifest ----------===//
//
//   loom-program 1
//   function train_step
//   device cuda                (a GPU program; absent: host)
//   micro-batches 1
//   mesh dp=2 tp=2
//   arg name=fc1.weight param=fc1.weight trainable=1 dtype=f32 shape=16,8
//       global=32,8 split=0/- init=params.bin@1024
//   result name=loss dtype=f32 shape=
//
// (one line per argument and result). Shapes are comma-separated (empty
// for a scalar); `split` lists per dimension the mesh axes that split it
// ('.'-separated indices, '-' for none); `partial=sum:1` names partial
// axes; `splat=` is one element's bytes in hex. Names are percent-encoded.
//
// A pipelined step has no function line; instead
//
//   pipeline ranks=2 virtual-stages=1
//   actions 0 RECV_F(0,0) F(0,0) SEND_F(0,0) ...
//   program stage=0 kind=forward function=stage0_forward
//   arg ... port=recv:0
//
// one `actions` line per pipeline rank, and per stage program a `program`
// line whose arguments and results follow it.
//
//===----------------------------------------------------------------------===//

#include "loom/program.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sstream>

using namespace loom::program;

namespace {

std::string encode(const std::string &s) {
  static const char *hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || std::string("._-:/[]").find(char(c)) != std::string::npos) {
      out += char(c);
      continue;
    }
    out += '%';
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

bool decode(const std::string &s, std::string &out) {
  out.clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size())
      return false;
    char *end = nullptr;
    std::string two = s.substr(i + 1, 2);
    long v = std::strtol(two.c_str(), &end, 16);
    if (two.size() != 2 || *end)
      return false;
    out += char(v);
    i += 2;
  }
  return true;
}

std::string join(const std::vector<int64_t> &v, char sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? std::string(1, sep) : "") + std::to_string(v[i]);
  return out;
}

/// A whole decimal integer that fits in int64_t.
bool parseInt(const std::string &s, int64_t &out) {
  if (s.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (*end || errno == ERANGE)
    return false;
  out = v;
  return true;
}

bool parseInts(const std::string &s, char sep, std::vector<int64_t> &out) {
  out.clear();
  if (s.empty())
    return true;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep)) {
    int64_t v = 0;
    if (!parseInt(part, v))
      return false;
    out.push_back(v);
  }
  return true;
}

std::string toHex(const std::string &bytes) {
  static const char *hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

bool fromHex(const std::string &s, std::string &out) {
  if (s.size() % 2)
    return false;
  out.clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    char *end = nullptr;
    std::string two = s.substr(i, 2);
    long v = std::strtol(two.c_str(), &end, 16);
    if (*end)
      return false;
    out += char(v);
  }
  return true;
}

void printValue(std::ostream &os, const char *kind, const Value &v,
                bool meshed) {
  os << kind << " name=" << encode(v.name);
  if (!v.parameter.empty())
    os << " param=" << encode(v.parameter)
       << " trainable=" << (v.trainable ? 1 : 0);
  if (v.indexBound > 0)
    os << " bound=" << v.indexBound;
  if (v.wholeBatch)
    os << " whole-batch=1";
  os << " dtype=" << loom_dtype_name(v.dtype) << " shape=" << join(v.shape, ',');
  if (meshed) {
    os << " global=" << join(v.global, ',') << " split=";
    for (size_t d = 0; d < v.sharding.dims.size(); ++d) {
      std::vector<int64_t> axes(v.sharding.dims[d].begin(),
                                v.sharding.dims[d].end());
      os << (d ? "/" : "") << (axes.empty() ? "-" : join(axes, '.'));
    }
    if (!v.sharding.partial.empty())
      os << " partial=" << loom_reduction_name(v.sharding.partialKind) << ":"
         << join(std::vector<int64_t>(v.sharding.partial.begin(),
                                      v.sharding.partial.end()),
                 '.');
  }
  if (!v.initFile.empty())
    os << " init=" << encode(v.initFile) << "@" << v.initOffset;
  if (!v.splat.empty())
    os << " splat=" << toHex(v.splat);
  if (!v.port.empty())
    os << " port=" << encode(v.port);
  os << "\n";
}

bool parseDtype(const std::string &s, loom_dtype_t &out) {
  for (int i = 0; i <= LOOM_DTYPE_BOOL; ++i)
    if (s == loom_dtype_name(static_cast<loom_dtype_t>(i))) {
      out = static_cast<loom_dtype_t>(i);
      return true;
    }
  return false;
}

bool parseSharding(const std::string &split, const std::string &partial,
                   Sharding &out) {
  out = Sharding();
  std::stringstream in(split);
  std::string dim;
  while (!split.empty() && std::getline(in, dim, '/')) {
    std::vector<int64_t> axes;
    if (dim != "-" && !parseInts(dim, '.', axes))
      return false;
    out.dims.emplace_back(axes.begin(), axes.end());
  }
  if (partial.empty())
    return true;
  size_t colon = partial.find(':');
  if (colon == std::string::npos)
    return false;
  std::string kind = partial.substr(0, colon);
  const loom_reduction_t kinds[] = {LOOM_REDUCTION_SUM, LOOM_REDUCTION_MAX,
                                    LOOM_REDUCTION_MIN, LOOM_REDUCTION_PROD};
  bool known = false;
  for (loom_reduction_t k : kinds)
    if (kind == loom_reduction_name(k)) {
      out.partialKind = k;
      known = true;
    }
  std::vector<int64_t> axes;
  if (!known || !parseInts(partial.substr(colon + 1), '.', axes))
    return false;
  out.partial.assign(axes.begin(), axes.end());
  return true;
}

/// One `arg`/`result` line's fields into `v`.
bool parseValue(std::istringstream &fields, Value &v, std::string &error) {
  std::string field, split, partial;
  while (fields >> field) {
    size_t eq = field.find('=');
    std::string key = field.substr(0, eq),
                val = eq == std::string::npos ? "" : field.substr(eq + 1);
    bool ok = eq != std::string::npos;
    if (key == "name")
      ok = ok && decode(val, v.name);
    else if (key == "param")
      ok = ok && decode(val, v.parameter);
    else if (key == "trainable")
      v.trainable = val == "1";
    else if (key == "bound")
      ok = ok && parseInt(val, v.indexBound) && v.indexBound >= 0;
    else if (key == "whole-batch")
      v.wholeBatch = val == "1";
    else if (key == "dtype")
      ok = ok && parseDtype(val, v.dtype);
    else if (key == "shape")
      ok = ok && parseInts(val, ',', v.shape);
    else if (key == "global")
      ok = ok && parseInts(val, ',', v.global);
    else if (key == "split")
      split = val;
    else if (key == "partial")
      partial = val;
    else if (key == "init") {
      size_t at = val.rfind('@');
      ok = ok && at != std::string::npos && decode(val.substr(0, at), v.initFile) &&
           parseInt(val.substr(at + 1), v.initOffset) && v.initOffset >= 0;
    } else if (key == "splat")
      ok = ok && fromHex(val, v.splat);
    else if (key == "port")
      ok = ok && decode(val, v.port);
    else
      ok = false;
    if (!ok) {
      error = "bad field '" + field + "'";
      return false;
    }
  }
  if (!parseSharding(split, partial, v.sharding)) {
    error = "bad sharding split=" + split + " partial=" + partial;
    return false;
  }
  if (v.global.empty())
    v.global = v.shape;
  return true;
}

/// What the program will index and allocate by: sizes in range, a block
/// within its tensor, mesh axes that exist, a splat of one element.
bool checkValue(const Manifest &m, const Value &v, std::string &error) {
  auto fail = [&](const std::string &why) {
    error = "value '" + v.name + "': " + why;
    return false;
  };
  if (v.shape.size() != v.global.size() || v.shape.size() > 16)
    return fail("its shape and global shape differ in rank (or exceed 16)");
  double elements = 1;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.global[d] < 0 || v.global[d] > (int64_t(1) << 31) - 1 ||
        v.shape[d] < 0 || v.shape[d] > v.global[d])
      return fail("dimension " + std::to_string(d) + " is " +
                  std::to_string(v.shape[d]) + " of " +
                  std::to_string(v.global[d]));
    elements *= double(v.global[d]);
  }
  if (elements > double(int64_t(1) << 40))
    return fail("more than 2^40 elements");
  if (v.sharding.dims.size() > v.shape.size())
    return fail("its sharding splits more dimensions than it has");
  auto axisOk = [&](int32_t a) {
    return a >= 0 && size_t(a) < m.axisNames.size();
  };
  for (const auto &axes : v.sharding.dims)
    for (int32_t a : axes)
      if (!axisOk(a))
        return fail("its sharding names mesh axis " + std::to_string(a) +
                    ", which the mesh does not have");
  for (int32_t a : v.sharding.partial)
    if (!axisOk(a))
      return fail("it is partial over mesh axis " + std::to_string(a) +
                  ", which the mesh does not have");
  if (!v.splat.empty() && v.splat.size() != loom_dtype_size(v.dtype))
    return fail("its splat is not one element");
  return true;
}

bool checkValues(const Manifest &m, std::string &error) {
  int64_t devices = 1;
  for (int64_t s : m.axisSizes) {
    devices *= s;
    if (devices > (int64_t(1) << 20)) {
      error = "the mesh has more than 2^20 devices";
      return false;
    }
  }
  auto all = [&](const std::vector<Value> &values) {
    for (const Value &v : values)
      if (!checkValue(m, v, error))
        return false;
    return true;
  };
  if (!all(m.arguments) || !all(m.results))
    return false;
  for (const StageProgram &p : m.programs)
    if (!all(p.arguments) || !all(p.results))
      return false;
  return true;
}

} // namespace

bool Sharding::splits() const {
  if (!partial.empty())
    return true;
  for (const auto &d : dims)
    if (!d.empty())
      return true;
  return false;
}

std::string loom::program::printManifest(const Manifest &m) {
  std::ostringstream os;
  os << "loom-program 1\n";
  if (!m.pipelined())
    os << "function " << encode(m.function) << "\n";
  if (m.device != "host")
    os << "device " << encode(m.device) << "\n";
  os << "micro-batches " << m.microBatches << "\n";
  if (m.splitBatch)
    os << "batch-split 1\n";
  bool meshed = !m.axisNames.empty();
  if (meshed) {
    os << "mesh";
    for (size_t a = 0; a < m.axisNames.size(); ++a)
      os << " " << encode(m.axisNames[a]) << "=" << m.axisSizes[a];
    os << "\n";
  }
  for (const Value &v : m.arguments)
    printValue(os, "arg", v, meshed);
  for (const Value &v : m.results)
    printValue(os, "result", v, meshed);
  if (m.pipelined()) {
    os << "pipeline ranks=" << m.pipelineRanks
       << " virtual-stages=" << m.virtualStages << "\n";
    for (size_t r = 0; r < m.actions.size(); ++r) {
      os << "actions " << r;
      for (const std::string &a : m.actions[r])
        os << " " << a;
      os << "\n";
    }
    for (const StageProgram &p : m.programs) {
      os << "program stage=" << p.stage << " kind=" << p.kind
         << " function=" << encode(p.function) << "\n";
      for (const Value &v : p.arguments)
        printValue(os, "arg", v, meshed);
      for (const Value &v : p.results)
        printValue(os, "result", v, meshed);
    }
  }
  return os.str();
}

bool loom::program::parseManifest(const std::string &text, Manifest &m,
                                  std::string &error) {
  m = Manifest();
  std::istringstream in(text);
  std::string line;
  int64_t number = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++number;
    std::istringstream fields(line);
    std::string kind, word;
    if (!(fields >> kind))
      continue;
    bool ok = true;
    std::string why;
    if (kind == "loom-program") {
      ok = (fields >> word) && word == "1";
      header = ok;
      why = "unsupported version (this program reads version 1)";
    } else if (kind == "function") {
      ok = (fields >> word) && decode(word, m.function);
    } else if (kind == "device") {
      ok = (fields >> word) && decode(word, m.device) &&
           (m.device == "host" || m.device == "cuda");
      why = "unknown device (this program knows host and cuda)";
    } else if (kind == "micro-batches") {
      ok = (fields >> word) && parseInt(word, m.microBatches) &&
           m.microBatches >= 1 && m.microBatches <= (int64_t(1) << 20);
    } else if (kind == "batch-split") {
      ok = (fields >> word) && (word == "0" || word == "1");
      m.splitBatch = word == "1";
    } else if (kind == "mesh") {
      while (ok && fields >> word) {
        size_t eq = word.find('=');
        std::string name;
        ok = eq != std::string::npos && decode(word.substr(0, eq), name);
        int64_t size = 0;
        ok = ok && parseInt(word.substr(eq + 1), size) && size >= 1 &&
             size <= (int64_t(1) << 20);
        m.axisNames.push_back(name);
        m.axisSizes.push_back(size);
      }
    } else if (kind == "arg" || kind == "result") {
      Value v;
      ok = parseValue(fields, v, why);
      // Inside a pipelined manifest, a value belongs to the last program.
      StageProgram *p = m.programs.empty() ? nullptr : &m.programs.back();
      auto &list = kind == "arg" ? (p ? p->arguments : m.arguments)
                                 : (p ? p->results : m.results);
      list.push_back(std::move(v));
    } else if (kind == "pipeline") {
      int64_t ranks = 0, virtualStages = 0;
      while (ok && fields >> word) {
        if (word.rfind("ranks=", 0) == 0)
          ok = parseInt(word.substr(6), ranks);
        else if (word.rfind("virtual-stages=", 0) == 0)
          ok = parseInt(word.substr(15), virtualStages);
        else
          ok = false;
      }
      ok = ok && ranks >= 1 && ranks <= 4096 && virtualStages >= 1 &&
           virtualStages <= 4096;
      m.pipelineRanks = int(ranks);
      m.virtualStages = int(virtualStages);
    } else if (kind == "actions") {
      size_t r = 0;
      ok = (fields >> r) && r == m.actions.size();
      why = ok ? "" : "actions lines must come in rank order";
      m.actions.emplace_back();
      while (ok && fields >> word)
        m.actions.back().push_back(word);
    } else if (kind == "program") {
      StageProgram p;
      p.stage = -1;
      while (ok && fields >> word) {
        size_t eq = word.find('=');
        std::string key = word.substr(0, eq),
                    val = eq == std::string::npos ? "" : word.substr(eq + 1);
        int64_t stage = -1;
        if (key == "stage") {
          ok = parseInt(val, stage) && stage >= 0 && stage < (1 << 20);
          p.stage = int(stage);
        }
        else if (key == "kind")
          p.kind = val;
        else if (key == "function")
          ok = decode(val, p.function);
        else
          ok = false;
      }
      ok = ok && p.stage >= 0 && !p.function.empty() &&
           (p.kind == "forward" || p.kind == "backward_input" ||
            p.kind == "backward_weight" || p.kind == "update");
      m.programs.push_back(std::move(p));
    } else {
      ok = false;
      why = "unknown line";
    }
    if (!ok) {
      error = "line " + std::to_string(number) + ": " +
              (why.empty() ? "malformed" : why) + ": " + line;
      return false;
    }
  }
  if (!header) {
    error = "not a Loom program manifest (no 'loom-program 1' line)";
    return false;
  }
  if (m.pipelined() && (m.pipelineRanks < 1 ||
                        int(m.actions.size()) != m.pipelineRanks)) {
    error = "a pipelined manifest needs a 'pipeline' line and one 'actions' "
            "line per pipeline rank";
    return false;
  }
  return checkValues(m, error);
}
