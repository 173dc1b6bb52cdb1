// JSON for the runtime's own files (safetensors headers, checkpoint manifests), on top of
// nlohmann::json. Reading is stricter than nlohmann's default: duplicate object keys are
// rejected (a reader that kept either copy could see another file than a different tool does),
// and so is nesting deeper than kMaxJsonDepth. nlohmann reports errors by exception; parseJson
// turns every one of them into a one-line Status, so callers never see an exception.
#pragma once

#include "runtime/support/status.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace shardc::runtime {

// Objects keep their members in document (or insertion) order, so that what is written is
// reproducible byte for byte and errors come in the order of the file.
using Json = nlohmann::ordered_json;

constexpr int kMaxJsonDepth = 64;

// Parses exactly one JSON value spanning all of the text (surrounding whitespace allowed).
// Errors read "malformed JSON at byte N: why" for syntax errors, "malformed JSON: why" for a
// duplicate key or too deep nesting (the caller prepends the file name).
Status parseJson(const char *text, size_t size, Json *out);

// The integer if `value` is one that fits the target type; false for anything else (a
// fraction, a string, a negative value for asUint64, an integer out of range).
bool asInt64(const Json &value, int64_t *out);
bool asUint64(const Json &value, uint64_t *out);

} // namespace shardc::runtime
