#include "runtime/support/json.h"

#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_set>

namespace shardc::runtime {

JsonValue JsonValue::boolean(bool value) {
  JsonValue v;
  v.kind_ = Kind::Bool;
  v.bool_ = value;
  return v;
}

JsonValue JsonValue::integer(int64_t value) {
  JsonValue v;
  v.kind_ = Kind::Integer;
  v.negative_ = value < 0;
  // Negating through uint64 keeps INT64_MIN well defined.
  v.magnitude_ = v.negative_ ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  return v;
}

JsonValue JsonValue::unsignedInteger(uint64_t value) {
  JsonValue v;
  v.kind_ = Kind::Integer;
  v.magnitude_ = value;
  return v;
}

JsonValue JsonValue::string(std::string value) {
  JsonValue v;
  v.kind_ = Kind::String;
  v.string_ = std::move(value);
  return v;
}

JsonValue JsonValue::array() {
  JsonValue v;
  v.kind_ = Kind::Array;
  return v;
}

JsonValue JsonValue::object() {
  JsonValue v;
  v.kind_ = Kind::Object;
  return v;
}

bool JsonValue::asInt64(int64_t *out) const {
  if (kind_ != Kind::Integer)
    return false;
  const uint64_t maxPositive = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (!negative_) {
    if (magnitude_ > maxPositive)
      return false;
    *out = static_cast<int64_t>(magnitude_);
    return true;
  }
  if (magnitude_ > maxPositive + 1)
    return false;
  *out = magnitude_ == maxPositive + 1 ? std::numeric_limits<int64_t>::min()
                                       : -static_cast<int64_t>(magnitude_);
  return true;
}

bool JsonValue::asUint64(uint64_t *out) const {
  if (kind_ != Kind::Integer || (negative_ && magnitude_ != 0))
    return false;
  *out = magnitude_;
  return true;
}

const JsonValue *JsonValue::find(const std::string &key) const {
  for (const auto &member : members_)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

JsonValue &JsonValue::push(JsonValue value) {
  elements_.push_back(std::move(value));
  return elements_.back();
}

JsonValue &JsonValue::add(std::string key, JsonValue value) {
  members_.emplace_back(std::move(key), std::move(value));
  return members_.back().second;
}

namespace {

class JsonParser {
public:
  JsonParser(const char *text, size_t size) : text_(text), size_(size) {}

  Status parseDocument(JsonValue *out) {
    skipSpace();
    SHARDC_RETURN_IF_ERROR(parseValue(out, 0));
    skipSpace();
    if (pos_ != size_)
      return error("unexpected text after the value");
    return Status::ok();
  }

private:
  // End of input reads as '\0', which no grammar rule accepts there.
  char peek() const { return pos_ < size_ ? text_[pos_] : '\0'; }

  Status error(const std::string &why) const {
    return Status::error("malformed JSON at byte " + std::to_string(pos_) + ": " + why);
  }

  void skipSpace() {
    while (pos_ < size_ && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                            text_[pos_] == '\r'))
      ++pos_;
  }

  bool consumeWord(const char *word, size_t length) {
    if (size_ - pos_ < length || std::memcmp(text_ + pos_, word, length) != 0)
      return false;
    pos_ += length;
    return true;
  }

  Status parseValue(JsonValue *out, int depth) {
    if (depth >= kMaxJsonDepth)
      return error("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    char c = peek();
    if (c == '{')
      return parseObject(out, depth);
    if (c == '[')
      return parseArray(out, depth);
    if (c == '"') {
      std::string s;
      SHARDC_RETURN_IF_ERROR(parseString(&s));
      *out = JsonValue::string(std::move(s));
      return Status::ok();
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseInteger(out);
    if (consumeWord("true", 4)) {
      *out = JsonValue::boolean(true);
      return Status::ok();
    }
    if (consumeWord("false", 5)) {
      *out = JsonValue::boolean(false);
      return Status::ok();
    }
    if (consumeWord("null", 4)) {
      *out = JsonValue();
      return Status::ok();
    }
    return error(pos_ == size_ ? "unexpected end of input, expected a value" : "expected a value");
  }

  Status parseObject(JsonValue *out, int depth) {
    ++pos_; // '{'
    *out = JsonValue::object();
    // Duplicates are rejected: a reader that kept either copy could see a different file than
    // another tool does. A set keeps this linear for headers with very many keys.
    std::unordered_set<std::string> keys;
    skipSpace();
    if (peek() == '}') {
      ++pos_;
      return Status::ok();
    }
    while (true) {
      skipSpace();
      if (peek() != '"')
        return error("expected a string key");
      size_t keyStart = pos_;
      std::string key;
      SHARDC_RETURN_IF_ERROR(parseString(&key));
      if (!keys.insert(key).second) {
        pos_ = keyStart;
        return error("duplicate key \"" + printable(key) + "\"");
      }
      skipSpace();
      if (peek() != ':')
        return error("expected ':' after a key");
      ++pos_;
      skipSpace();
      JsonValue value;
      SHARDC_RETURN_IF_ERROR(parseValue(&value, depth + 1));
      out->add(std::move(key), std::move(value));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return Status::ok();
      }
      return error("expected ',' or '}' in an object");
    }
  }

  Status parseArray(JsonValue *out, int depth) {
    ++pos_; // '['
    *out = JsonValue::array();
    skipSpace();
    if (peek() == ']') {
      ++pos_;
      return Status::ok();
    }
    while (true) {
      skipSpace();
      JsonValue value;
      SHARDC_RETURN_IF_ERROR(parseValue(&value, depth + 1));
      out->push(std::move(value));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return Status::ok();
      }
      return error("expected ',' or ']' in an array");
    }
  }

  Status parseInteger(JsonValue *out) {
    bool negative = false;
    if (peek() == '-') {
      negative = true;
      ++pos_;
    }
    if (peek() < '0' || peek() > '9')
      return error("expected a digit");
    if (peek() == '0' && pos_ + 1 < size_ && text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '9')
      return error("leading zero in a number");
    uint64_t magnitude = 0;
    while (peek() >= '0' && peek() <= '9') {
      unsigned digit = static_cast<unsigned>(peek() - '0');
      if (magnitude > (std::numeric_limits<uint64_t>::max() - digit) / 10)
        return error("integer out of range");
      magnitude = magnitude * 10 + digit;
      ++pos_;
    }
    if (peek() == '.' || peek() == 'e' || peek() == 'E')
      return error("only integers are supported");
    const uint64_t minMagnitude = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1;
    if (negative && magnitude > minMagnitude)
      return error("integer out of range");
    *out = negative
               ? JsonValue::integer(magnitude == minMagnitude ? std::numeric_limits<int64_t>::min()
                                                              : -static_cast<int64_t>(magnitude))
               : JsonValue::unsignedInteger(magnitude);
    return Status::ok();
  }

  Status parseHex4(uint32_t *out) {
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = peek();
      uint32_t digit;
      if (c >= '0' && c <= '9')
        digit = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        digit = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        digit = static_cast<uint32_t>(c - 'A' + 10);
      else
        return error("expected 4 hex digits after \\u");
      value = value * 16 + digit;
      ++pos_;
    }
    *out = value;
    return Status::ok();
  }

  static void appendUtf8(uint32_t cp, std::string *out) {
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xC0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xE0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // Length of the well-formed UTF-8 sequence starting at pos_ (no overlongs, no surrogates,
  // nothing above U+10FFFF), or 0.
  size_t utf8SequenceLength() const {
    auto byte = [&](size_t i) -> uint8_t {
      return pos_ + i < size_ ? static_cast<uint8_t>(text_[pos_ + i]) : 0;
    };
    uint8_t b0 = byte(0);
    auto cont = [&](size_t i) { return (byte(i) & 0xC0) == 0x80; };
    if (b0 >= 0xC2 && b0 <= 0xDF)
      return cont(1) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
      uint8_t b1 = byte(1);
      if ((b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 > 0x9F))
        return 0;
      return cont(1) && cont(2) ? 3 : 0;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
      uint8_t b1 = byte(1);
      if ((b0 == 0xF0 && b1 < 0x90) || (b0 == 0xF4 && b1 > 0x8F))
        return 0;
      return cont(1) && cont(2) && cont(3) ? 4 : 0;
    }
    return 0;
  }

  Status parseString(std::string *out) {
    ++pos_; // opening quote
    out->clear();
    while (true) {
      if (pos_ >= size_)
        return error("unterminated string");
      uint8_t c = static_cast<uint8_t>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return Status::ok();
      }
      if (c < 0x20)
        return error("control character in a string");
      if (c == '\\') {
        ++pos_;
        char e = peek();
        ++pos_;
        switch (e) {
        case '"':
          *out += '"';
          break;
        case '\\':
          *out += '\\';
          break;
        case '/':
          *out += '/';
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case 'u': {
          uint32_t cp;
          SHARDC_RETURN_IF_ERROR(parseHex4(&cp));
          if (cp >= 0xDC00 && cp <= 0xDFFF)
            return error("unpaired surrogate in \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (!consumeWord("\\u", 2))
              return error("unpaired surrogate in \\u escape");
            uint32_t low;
            SHARDC_RETURN_IF_ERROR(parseHex4(&low));
            if (low < 0xDC00 || low > 0xDFFF)
              return error("unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          appendUtf8(cp, out);
          break;
        }
        default:
          --pos_;
          return error("invalid escape in a string");
        }
        continue;
      }
      if (c < 0x80) {
        *out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      size_t length = utf8SequenceLength();
      if (length == 0)
        return error("invalid UTF-8 in a string");
      out->append(text_ + pos_, length);
      pos_ += length;
    }
  }

  // Keys go into messages; keep them to one printable line.
  static std::string printable(const std::string &key) {
    std::string s;
    for (char c : key) {
      uint8_t b = static_cast<uint8_t>(c);
      if (b >= 0x20 && b < 0x7F && c != '\\' && c != '"') {
        s += c;
      } else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", b);
        s += buf;
      }
    }
    return s;
  }

  const char *text_;
  size_t size_;
  size_t pos_ = 0;
};

void writeString(const std::string &s, std::string *out) {
  *out += '"';
  for (char c : s) {
    switch (c) {
    case '"':
      *out += "\\\"";
      break;
    case '\\':
      *out += "\\\\";
      break;
    case '\b':
      *out += "\\b";
      break;
    case '\f':
      *out += "\\f";
      break;
    case '\n':
      *out += "\\n";
      break;
    case '\r':
      *out += "\\r";
      break;
    case '\t':
      *out += "\\t";
      break;
    default:
      if (static_cast<uint8_t>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<uint8_t>(c)));
        *out += buf;
      } else {
        *out += c;
      }
    }
  }
  *out += '"';
}

// indent < 0: compact. Otherwise the current indentation level in the pretty form.
void writeValue(const JsonValue &value, int indent, std::string *out) {
  auto newline = [&](int level) {
    if (indent < 0)
      return;
    *out += '\n';
    out->append(static_cast<size_t>(2 * level), ' ');
  };
  switch (value.kind()) {
  case JsonValue::Kind::Null:
    *out += "null";
    return;
  case JsonValue::Kind::Bool:
    *out += value.boolValue() ? "true" : "false";
    return;
  case JsonValue::Kind::Integer: {
    uint64_t u;
    int64_t i;
    if (value.asUint64(&u))
      *out += std::to_string(u);
    else if (value.asInt64(&i))
      *out += std::to_string(i);
    return;
  }
  case JsonValue::Kind::String:
    writeString(value.stringValue(), out);
    return;
  case JsonValue::Kind::Array: {
    *out += '[';
    const auto &elements = value.elements();
    for (size_t i = 0; i < elements.size(); ++i) {
      if (i)
        *out += ',';
      // Arrays of scalars (shapes, offsets) stay on one line in the pretty form too.
      bool nested = elements[i].isArray() || elements[i].isObject();
      if (nested)
        newline(indent + 1);
      else if (indent >= 0 && i)
        *out += ' ';
      writeValue(elements[i], nested && indent >= 0 ? indent + 1 : indent, out);
    }
    *out += ']';
    return;
  }
  case JsonValue::Kind::Object: {
    *out += '{';
    const auto &members = value.members();
    for (size_t i = 0; i < members.size(); ++i) {
      if (i)
        *out += ',';
      newline(indent + 1);
      writeString(members[i].first, out);
      *out += indent >= 0 ? ": " : ":";
      writeValue(members[i].second, indent >= 0 ? indent + 1 : indent, out);
    }
    if (!members.empty())
      newline(indent);
    *out += '}';
    return;
  }
  }
}

} // namespace

Status parseJson(const char *text, size_t size, JsonValue *out) {
  JsonParser parser(text, size);
  return parser.parseDocument(out);
}

std::string writeJson(const JsonValue &value) {
  std::string out;
  writeValue(value, -1, &out);
  return out;
}

std::string writeJsonPretty(const JsonValue &value) {
  std::string out;
  writeValue(value, 0, &out);
  out += '\n';
  return out;
}

} // namespace shardc::runtime
