//===- json.cpp - The JSON the runtime reads and writes -------------------===//

#include "json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace loom::json;

Value Value::array(std::vector<Value> items) {
  Value v;
  v.kind = Array;
  v.items = std::move(items);
  return v;
}

Value Value::object(std::map<std::string, Value> members) {
  Value v;
  v.kind = Object;
  v.members = std::move(members);
  return v;
}

std::optional<bool> Value::getBool() const {
  if (kind == Bool)
    return boolean;
  return std::nullopt;
}

std::optional<int64_t> Value::getInteger() const {
  if (kind == Integer)
    return integer;
  if (kind == Number && std::isfinite(number) && number == std::floor(number) &&
      std::fabs(number) < 9.2e18)
    return int64_t(number);
  return std::nullopt;
}

std::optional<double> Value::getNumber() const {
  if (kind == Number)
    return number;
  if (kind == Integer)
    return double(integer);
  return std::nullopt;
}

const std::string *Value::getString() const {
  return kind == String ? &string : nullptr;
}
const std::vector<Value> *Value::getArray() const {
  return kind == Array ? &items : nullptr;
}
std::vector<Value> *Value::getArray() { return kind == Array ? &items : nullptr; }
const std::map<std::string, Value> *Value::getObject() const {
  return kind == Object ? &members : nullptr;
}
std::map<std::string, Value> *Value::getObject() {
  return kind == Object ? &members : nullptr;
}

const Value *Value::get(const std::string &key) const {
  if (kind != Object)
    return nullptr;
  auto it = members.find(key);
  return it == members.end() ? nullptr : &it->second;
}

Value &Value::operator[](const std::string &key) {
  if (kind != Object) {
    *this = object();
  }
  return members[key];
}

void Value::push_back(Value v) {
  if (kind != Array)
    *this = array();
  items.push_back(std::move(v));
}

namespace {

void quote(const std::string &s, std::string &out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += char(c);
      }
    }
  }
  out += '"';
}

} // namespace

void Value::printTo(std::string &out, int indent, int depth) const {
  auto newline = [&](int level) {
    if (!indent)
      return;
    out += '\n';
    out.append(size_t(indent * level), ' ');
  };
  switch (kind) {
  case Null:
    out += "null";
    return;
  case Bool:
    out += boolean ? "true" : "false";
    return;
  case Integer:
    out += std::to_string(integer);
    return;
  case Number: {
    // As LLVM's printer: 17 significant digits, %g form.
    char buf[64];
    if (!std::isfinite(number)) {
      out += "null";
      return;
    }
    std::snprintf(buf, sizeof(buf), "%.*g", 17, number);
    out += buf;
    return;
  }
  case String:
    quote(string, out);
    return;
  case Array:
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i)
        out += ',';
      newline(depth + 1);
      items[i].printTo(out, indent, depth + 1);
    }
    if (!items.empty())
      newline(depth);
    out += ']';
    return;
  case Object: {
    out += '{';
    bool first = true;
    for (const auto &[key, value] : members) {
      if (!first)
        out += ',';
      first = false;
      newline(depth + 1);
      quote(key, out);
      out += indent ? ": " : ":";
      value.printTo(out, indent, depth + 1);
    }
    if (!members.empty())
      newline(depth);
    out += '}';
    return;
  }
  }
}

std::string Value::print(int indent) const {
  std::string out;
  printTo(out, indent, 0);
  return out;
}

namespace {

class Parser {
public:
  Parser(const std::string &text, std::string &error)
      : text(text), error(error) {}

  bool parseDocument(Value &out) {
    skipSpace();
    if (!parseValue(out, 0))
      return false;
    skipSpace();
    if (at != text.size())
      return fail("text after the value");
    return true;
  }

private:
  static constexpr int kMaxDepth = 64;

  bool fail(const std::string &what) {
    error = "at byte " + std::to_string(at) + ": " + what;
    return false;
  }
  void skipSpace() {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\n' ||
                                text[at] == '\r' || text[at] == '\t'))
      ++at;
  }
  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if (text.compare(at, n, word) != 0)
      return false;
    at += n;
    return true;
  }

  bool parseValue(Value &out, int depth) {
    if (depth > kMaxDepth)
      return fail("nested deeper than " + std::to_string(kMaxDepth));
    if (at >= text.size())
      return fail("a value was expected");
    char c = text[at];
    if (c == '{')
      return parseObject(out, depth);
    if (c == '[')
      return parseArray(out, depth);
    if (c == '"') {
      std::string s;
      if (!parseString(s))
        return false;
      out = Value(std::move(s));
      return true;
    }
    if (literal("true")) {
      out = Value(true);
      return true;
    }
    if (literal("false")) {
      out = Value(false);
      return true;
    }
    if (literal("null")) {
      out = Value();
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(out);
    return fail(std::string("unexpected '") + c + "'");
  }

  bool parseObject(Value &out, int depth) {
    ++at; // {
    out = Value::object();
    skipSpace();
    if (at < text.size() && text[at] == '}') {
      ++at;
      return true;
    }
    for (;;) {
      skipSpace();
      if (at >= text.size() || text[at] != '"')
        return fail("a member name was expected");
      std::string key;
      if (!parseString(key))
        return false;
      skipSpace();
      if (at >= text.size() || text[at] != ':')
        return fail("':' was expected");
      ++at;
      skipSpace();
      Value v;
      if (!parseValue(v, depth + 1))
        return false;
      (*out.getObject())[key] = std::move(v);
      skipSpace();
      if (at < text.size() && text[at] == ',') {
        ++at;
        continue;
      }
      if (at < text.size() && text[at] == '}') {
        ++at;
        return true;
      }
      return fail("',' or '}' was expected");
    }
  }

  bool parseArray(Value &out, int depth) {
    ++at; // [
    out = Value::array();
    skipSpace();
    if (at < text.size() && text[at] == ']') {
      ++at;
      return true;
    }
    for (;;) {
      skipSpace();
      Value v;
      if (!parseValue(v, depth + 1))
        return false;
      out.getArray()->push_back(std::move(v));
      skipSpace();
      if (at < text.size() && text[at] == ',') {
        ++at;
        continue;
      }
      if (at < text.size() && text[at] == ']') {
        ++at;
        return true;
      }
      return fail("',' or ']' was expected");
    }
  }

  bool hex4(uint32_t &v) {
    if (at + 4 > text.size())
      return fail("a \\u escape is cut short");
    v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[at++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= uint32_t(c - 'A' + 10);
      else
        return fail("a \\u escape holds a non-hex digit");
    }
    return true;
  }

  static void utf8(uint32_t cp, std::string &out) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xc0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += char(0xe0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    } else {
      out += char(0xf0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3f));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    }
  }

  bool parseString(std::string &out) {
    ++at; // "
    for (;;) {
      if (at >= text.size())
        return fail("a string is not closed");
      char c = text[at++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at >= text.size())
        return fail("an escape is cut short");
      char e = text[at++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp))
          return false;
        if (cp >= 0xd800 && cp < 0xdc00 && at + 6 <= text.size() &&
            text[at] == '\\' && text[at + 1] == 'u') {
          at += 2;
          uint32_t low;
          if (!hex4(low))
            return false;
          if (low >= 0xdc00 && low < 0xe000)
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          else
            return fail("a high surrogate without its low half");
        }
        utf8(cp, out);
        break;
      }
      default:
        return fail(std::string("an unknown escape '\\") + e + "'");
      }
    }
  }

  bool parseNumber(Value &out) {
    size_t start = at;
    if (text[at] == '-')
      ++at;
    auto digits = [&] {
      size_t from = at;
      while (at < text.size() && text[at] >= '0' && text[at] <= '9')
        ++at;
      return at > from;
    };
    if (!digits())
      return fail("a number has no digits");
    bool integral = true;
    if (at < text.size() && text[at] == '.') {
      ++at;
      integral = false;
      if (!digits())
        return fail("a number has no digits after its point");
    }
    if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
      ++at;
      integral = false;
      if (at < text.size() && (text[at] == '+' || text[at] == '-'))
        ++at;
      if (!digits())
        return fail("a number has no exponent digits");
    }
    std::string number = text.substr(start, at - start);
    if (integral) {
      errno = 0;
      char *end = nullptr;
      long long v = std::strtoll(number.c_str(), &end, 10);
      if (errno == 0 && *end == 0) {
        out = Value(int64_t(v));
        return true;
      }
    }
    char *end = nullptr;
    double d = std::strtod(number.c_str(), &end);
    if (*end != 0 || !std::isfinite(d))
      return fail("a number out of range");
    out = Value(d);
    return true;
  }

  const std::string &text;
  std::string &error;
  size_t at = 0;
};

} // namespace

bool loom::json::parse(const std::string &text, Value &out,
                       std::string &error) {
  return Parser(text, error).parseDocument(out);
}
