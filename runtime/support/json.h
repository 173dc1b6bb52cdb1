// A small strict JSON reader and writer for the runtime's own file headers (safetensors headers,
// checkpoint manifests). It covers exactly what those need: objects, arrays, strings, integers,
// true/false/null. Numbers with a fraction or exponent are rejected (no file we read stores
// one), as are duplicate object keys, invalid UTF-8, lone surrogates, control characters in
// strings, trailing text and nesting deeper than kMaxJsonDepth. Errors are one line and never
// a crash, whatever the bytes.
#pragma once

#include "runtime/support/status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace shardc::runtime {

constexpr int kMaxJsonDepth = 64;

class JsonValue {
public:
  enum class Kind { Null, Bool, Integer, String, Array, Object };
  using Members = std::vector<std::pair<std::string, JsonValue>>;

  JsonValue() = default; // null
  static JsonValue boolean(bool value);
  static JsonValue integer(int64_t value);
  static JsonValue unsignedInteger(uint64_t value);
  static JsonValue string(std::string value);
  static JsonValue array();
  static JsonValue object();

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isInteger() const { return kind_ == Kind::Integer; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  bool boolValue() const { return bool_; }
  const std::string &stringValue() const { return string_; }
  // The integer if it fits the target type; false for non-integers and out-of-range values.
  bool asInt64(int64_t *out) const;
  bool asUint64(uint64_t *out) const;

  // Array elements / object members in document order (members keep their order so that a
  // writer's output is reproducible byte for byte).
  const std::vector<JsonValue> &elements() const { return elements_; }
  const Members &members() const { return members_; }
  // The member named `key`, or nullptr (also when this is not an object).
  const JsonValue *find(const std::string &key) const;

  // Builders. push() on an array, add() on an object; add() does not check for duplicates
  // (writers build from sorted or unique keys).
  JsonValue &push(JsonValue value);
  JsonValue &add(std::string key, JsonValue value);

private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  bool negative_ = false; // Integer: value = negative_ ? -magnitude_ : magnitude_
  uint64_t magnitude_ = 0;
  std::string string_;
  std::vector<JsonValue> elements_;
  Members members_;
};

// Parses exactly one JSON value spanning all of text (surrounding whitespace allowed). Errors
// read "malformed JSON at byte N: why" (the caller prepends the file name).
Status parseJson(const char *text, size_t size, JsonValue *out);
inline Status parseJson(const std::string &text, JsonValue *out) {
  return parseJson(text.data(), text.size(), out);
}

// Compact JSON with no whitespace, strings escaped as serde_json (Rust) and Python's
// json.dumps(ensure_ascii=False) do: \" \\ \b \f \n \r \t, other control bytes as \u00XX,
// everything else (UTF-8 included) as is.
std::string writeJson(const JsonValue &value);
// The same with newlines and two-space indentation, for files people read (manifests).
std::string writeJsonPretty(const JsonValue &value);

} // namespace shardc::runtime
