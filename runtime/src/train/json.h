//===- json.h - The JSON the runtime reads and writes -----------*- C++ -*-===//
//
// A small JSON value, parser and printer for the runtime's files
// (checkpoint manifests and indexes, Chrome traces), which links no LLVM.
// The parser takes untrusted input (a checkpoint's manifest.json is fuzzed):
// nesting is bounded, numbers are checked, errors say where. Objects keep
// their keys sorted and print as LLVM's JSON printer does, so files read
// the same whichever Loom wrote them.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_TRAIN_JSON_H
#define LOOM_RUNTIME_TRAIN_JSON_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loom::json {

class Value {
public:
  enum Kind { Null, Bool, Integer, Number, String, Array, Object };

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool b) : kind(Bool), boolean(b) {}
  Value(int v) : kind(Integer), integer(v) {}
  Value(int64_t v) : kind(Integer), integer(v) {}
  Value(uint64_t v) = delete; // say which
  Value(double v) : kind(Number), number(v) {}
  Value(const char *s) : kind(String), string(s) {}
  Value(std::string s) : kind(String), string(std::move(s)) {}

  static Value array(std::vector<Value> items = {});
  static Value object(std::map<std::string, Value> members = {});

  Kind getKind() const { return kind; }
  bool isNull() const { return kind == Null; }

  std::optional<bool> getBool() const;
  /// An integer, or a number with an integral value that fits.
  std::optional<int64_t> getInteger() const;
  std::optional<double> getNumber() const;
  const std::string *getString() const;
  const std::vector<Value> *getArray() const;
  std::vector<Value> *getArray();
  const std::map<std::string, Value> *getObject() const;
  std::map<std::string, Value> *getObject();

  /// Object members (null when not an object or absent).
  const Value *get(const std::string &key) const;
  Value &operator[](const std::string &key); // makes this an object
  void push_back(Value v);                   // makes this an array

  /// Compact ("[1,2]") or, with `indent` > 0, one member per line.
  std::string print(int indent = 0) const;

private:
  void printTo(std::string &out, int indent, int depth) const;
  Kind kind = Null;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  std::string string;
  std::vector<Value> items;
  std::map<std::string, Value> members;
};

/// Parses `text`; false with `error` ("at byte N: what") on anything that
/// is not one JSON value.
bool parse(const std::string &text, Value &out, std::string &error);

} // namespace loom::json

#endif // LOOM_RUNTIME_TRAIN_JSON_H
