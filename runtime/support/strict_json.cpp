#include "runtime/support/strict_json.h"

#include "runtime/support/quote.h"

#include <fmt/format.h>

#include <limits>
#include <unordered_set>
#include <vector>

namespace shardc::runtime {

namespace {

// Thrown by the parser callback to stop at input nlohmann accepts but the runtime does not.
struct Rejection {
  std::string why;
};

// nlohmann's what() is "[json.exception.parse_error.101] parse error at line 1, column 5:
// syntax error while parsing ..."; the message keeps the part after the location (the byte
// offset replaces line and column: the files are one line, or nearly). The part may quote
// the bytes last read, which can be anything: they are escaped to printable ASCII.
std::string parseErrorReason(const char *what) {
  std::string text = what;
  size_t at = text.find("parse error");
  size_t colon = at == std::string::npos ? std::string::npos : text.find(": ", at);
  if (colon != std::string::npos)
    text = text.substr(colon + 2);
  std::string printable;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f)
      printable += c;
    else
      printable += fmt::format("\\x{:02x}", byte);
  }
  return printable;
}

// nlohmann's DOM builder with the runtime's checks on the way: at most kMaxJsonDepth open
// containers, no key twice in one object. (Not nlohmann's callback parser: after each object
// it scans the enclosing array for discarded values, which is quadratic in the array's length;
// a manifest listing 100,000 checkpoints took a minute to read.)
class StrictDomBuilder {
public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  explicit StrictDomBuilder(Json &result) : dom_(result, /*allow_exceptions=*/true) {}

  bool null() { return dom_.null(); }
  bool boolean(bool value) { return dom_.boolean(value); }
  bool number_integer(number_integer_t value) { return dom_.number_integer(value); }
  bool number_unsigned(number_unsigned_t value) { return dom_.number_unsigned(value); }
  bool number_float(number_float_t value, const string_t &text) {
    return dom_.number_float(value, text);
  }
  bool string(string_t &value) { return dom_.string(value); }
  bool binary(binary_t &value) { return dom_.binary(value); }
  bool start_object(std::size_t elements) {
    open();
    return dom_.start_object(elements);
  }
  bool key(string_t &key) {
    if (!keys_.back().insert(key).second) {
      std::string quoted = quoteForMessage(key); // 'key', escaped to one printable line
      throw Rejection{"duplicate key \"" + quoted.substr(1, quoted.size() - 2) + "\""};
    }
    return dom_.key(key);
  }
  bool end_object() {
    keys_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t elements) {
    open();
    return dom_.start_array(elements);
  }
  bool end_array() {
    keys_.pop_back();
    return dom_.end_array();
  }
  // Throws the error as its own type (nlohmann's DOM builder would throw the base class): a
  // parse error's byte offset goes into the message.
  bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &error) {
    if (const auto *parseError = dynamic_cast<const Json::parse_error *>(&error))
      throw *parseError;
    throw Rejection{error.what()};
  }

private:
  void open() {
    if (static_cast<int>(keys_.size()) >= kMaxJsonDepth)
      throw Rejection{"nested deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
    // One set of keys per open container (an array's stays empty).
    keys_.emplace_back();
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::vector<std::unordered_set<std::string>> keys_;
};

} // namespace

Status parseJson(const char *text, size_t size, Json *out) {
  try {
    Json parsed;
    StrictDomBuilder builder(parsed);
    Json::sax_parse(text, text + size, &builder);
    *out = std::move(parsed);
    return Status::ok();
  } catch (const Rejection &rejection) {
    return Status::error("malformed JSON: " + rejection.why);
  } catch (const Json::parse_error &e) {
    // e.byte counts the bytes read, the offending one included.
    const size_t byte = e.byte > 0 ? e.byte - 1 : 0;
    return Status::error("malformed JSON at byte " + std::to_string(byte) + ": " +
                         parseErrorReason(e.what()));
  } catch (const Json::exception &e) {
    return Status::error(std::string("malformed JSON: ") + e.what());
  } catch (const std::bad_alloc &) {
    return Status::error("malformed JSON: out of memory while parsing");
  }
}

bool asInt64(const Json &value, int64_t *out) {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return false;
    *out = static_cast<int64_t>(v);
    return true;
  }
  if (value.is_number_integer()) {
    *out = value.get<int64_t>();
    return true;
  }
  return false;
}

bool asUint64(const Json &value, uint64_t *out) {
  if (value.is_number_unsigned()) {
    *out = value.get<uint64_t>();
    return true;
  }
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    *out = static_cast<uint64_t>(value.get<int64_t>());
    return true;
  }
  return false;
}

} // namespace shardc::runtime
