// The runtime's JSON reading rules on top of nlohmann::json (runtime/support/strict_json.h):
// one-line Status errors instead of exceptions, no duplicate keys, bounded nesting, and the
// integer accessors the file readers use.
#include "runtime/support/strict_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <random>
#include <string>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

Json parseOk(const std::string &text) {
  Json v;
  Status status = parseJson(text.data(), text.size(), &v);
  EXPECT_TRUE(status.isOk()) << text << ": " << status.message();
  return v;
}

std::string parseError(const std::string &text) {
  Json v;
  Status status = parseJson(text.data(), text.size(), &v);
  EXPECT_FALSE(status.isOk()) << "accepted: " << text;
  return status.message();
}

TEST(StrictJson, KeepsDocumentOrder) {
  Json v = parseOk(" {\"b\": [1, -2, 0], \"a\": {\"c\": \"x\"}, \"n\": null}\n  ");
  ASSERT_TRUE(v.is_object());
  std::vector<std::string> keys;
  for (const auto &member : v.items())
    keys.push_back(member.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"b", "a", "n"}));
}

TEST(StrictJson, IntegerAccessors) {
  uint64_t u = 0;
  int64_t i = 0;
  EXPECT_TRUE(asUint64(parseOk("18446744073709551615"), &u));
  EXPECT_EQ(u, UINT64_MAX);
  EXPECT_FALSE(asInt64(parseOk("18446744073709551615"), &i));
  EXPECT_TRUE(asInt64(parseOk("-9223372036854775808"), &i));
  EXPECT_EQ(i, INT64_MIN);
  EXPECT_FALSE(asUint64(parseOk("-1"), &u));
  EXPECT_TRUE(asUint64(parseOk("-0"), &u));
  EXPECT_EQ(u, 0u);
  // Out of the 64-bit range, a fraction, or no number at all: not an integer.
  EXPECT_FALSE(asUint64(parseOk("18446744073709551616"), &u));
  EXPECT_FALSE(asInt64(parseOk("-9223372036854775809"), &i));
  EXPECT_FALSE(asInt64(parseOk("1.5"), &i));
  EXPECT_FALSE(asInt64(parseOk("1e3"), &i));
  EXPECT_FALSE(asUint64(parseOk("\"7\""), &u));
  EXPECT_FALSE(asUint64(parseOk("true"), &u));
}

TEST(StrictJson, RejectsMalformedInputInOneLine) {
  const char *cases[] = {
      "",
      "   ",
      "{",
      "}",
      "[1,]",
      "[1 2]",
      "{\"a\" 1}",
      "{\"a\":1,}",
      "{a:1}",
      "{'a':1}",
      "01",
      "-",
      "+1",
      "tru",
      "nul",
      "\"abc",
      "\"a\nb\"",
      "\"\\x\"",
      "\"\\u12\"",
      "\"\\ud800\"",
      "\"\\udc00\"",
      "\"\\ud800\\u0041\"",
      "\"\xff\"",
      "\"\xc0\xaf\"",
      "\"\xed\xa0\x80\"",
      "\"\xf4\x90\x80\x80\"",
      "\"\xe2\x82\"",
      "{} {}",
      "[] x",
      "NaN",
      "{\"a\":1 \"b\":2}",
      "\x01",
  };
  for (const char *text : cases) {
    std::string message = parseError(text);
    EXPECT_THAT(message, StartsWith("malformed JSON at byte ")) << text;
    // The bytes nlohmann quotes are escaped: one printable line.
    for (char c : message)
      EXPECT_TRUE(c >= 0x20 && c < 0x7f) << text << ": " << message;
  }
  EXPECT_THAT(parseError("[1,]"), StartsWith("malformed JSON at byte 3: syntax error"));
  EXPECT_THAT(parseError("\"\xff\""), HasSubstr("\\xff"));
}

TEST(StrictJson, RejectsDuplicateKeys) {
  EXPECT_EQ(parseError("{\"a\":1,\"a\":2}"), "malformed JSON: duplicate key \"a\"");
  EXPECT_EQ(parseError("{\"a\\n\":1,\"a\\n\":2}"), "malformed JSON: duplicate key \"a\\n\"");
  // Nested objects have their own key sets, arrays of objects too.
  parseOk("{\"a\":{\"a\":1},\"b\":{\"a\":2}}");
  parseOk("[{\"a\":1},{\"a\":2}]");
  EXPECT_EQ(parseError("[{\"a\":1},{\"b\":1,\"b\":2}]"), "malformed JSON: duplicate key \"b\"");
}

TEST(StrictJson, RejectsDeepNesting) {
  std::string ok(kMaxJsonDepth, '['), deep(kMaxJsonDepth + 1, '[');
  ok += std::string(kMaxJsonDepth, ']');
  deep += std::string(kMaxJsonDepth + 1, ']');
  parseOk(ok);
  EXPECT_EQ(parseError(deep), "malformed JSON: nested deeper than 64 levels");
  EXPECT_THAT(parseError(std::string(1000000, '[')), HasSubstr("nested deeper than"));
  EXPECT_THAT(parseError(std::string(1000000, '{')), StartsWith("malformed JSON"));
}

TEST(StrictJson, RandomBytesNeverThrow) {
  std::mt19937 rng(4242);
  const std::string alphabet = "{}[]\":,0123456789-truefalsnl \\u\n\xc3\xa9\xff";
  for (int iter = 0; iter < 20000; ++iter) {
    std::string text(rng() % 64, '\0');
    for (char &c : text)
      c = iter % 2 ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
    Json v;
    Status status = parseJson(text.data(), text.size(), &v);
    if (!status.isOk()) {
      EXPECT_THAT(status.message(), StartsWith("malformed JSON"));
      EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
    }
  }
}

} // namespace
} // namespace shardc::runtime
