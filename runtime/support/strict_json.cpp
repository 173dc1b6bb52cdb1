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

} // namespace

Status parseJson(const char *text, size_t size, Json *out) {
  // One set of keys per open container (arrays get an unused one: it keeps the stack aligned
  // with nlohmann's depth without tracking which kind each level is).
  std::vector<std::unordered_set<std::string>> keys;
  Json::parser_callback_t check = [&keys](int depth, Json::parse_event_t event, Json &parsed) {
    switch (event) {
    case Json::parse_event_t::object_start:
    case Json::parse_event_t::array_start:
      if (depth >= kMaxJsonDepth)
        throw Rejection{"nested deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
      keys.emplace_back();
      break;
    case Json::parse_event_t::object_end:
    case Json::parse_event_t::array_end:
      keys.pop_back();
      break;
    case Json::parse_event_t::key: {
      const std::string &key = parsed.get_ref<const std::string &>();
      if (!keys.back().insert(key).second) {
        std::string quoted = quoteForMessage(key); // 'key', escaped to one printable line
        throw Rejection{"duplicate key \"" + quoted.substr(1, quoted.size() - 2) + "\""};
      }
      break;
    }
    case Json::parse_event_t::value:
      break;
    }
    return true;
  };
  try {
    *out = Json::parse(text, text + size, check);
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
