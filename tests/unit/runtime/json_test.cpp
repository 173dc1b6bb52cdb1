// The strict JSON subset reader and writer used for safetensors headers and manifests.
#include "runtime/support/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <random>
#include <string>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

JsonValue parseOk(const std::string &text) {
  JsonValue v;
  Status status = parseJson(text, &v);
  EXPECT_TRUE(status.isOk()) << text << ": " << status.message();
  return v;
}

std::string parseError(const std::string &text) {
  JsonValue v;
  Status status = parseJson(text, &v);
  EXPECT_FALSE(status.isOk()) << "accepted: " << text;
  return status.message();
}

TEST(Json, ParsesObjectsArraysAndScalars) {
  JsonValue v = parseOk(" {\"a\": [1, -2, 0], \"b\": {\"c\": \"x\"}, \"t\": true, \"f\": false,"
                        " \"n\": null, \"e\": {}, \"l\": []}\n  ");
  ASSERT_TRUE(v.isObject());
  ASSERT_EQ(v.members().size(), 7u);
  EXPECT_EQ(v.members()[0].first, "a"); // document order is kept
  const JsonValue *a = v.find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->elements().size(), 3u);
  int64_t i;
  ASSERT_TRUE(a->elements()[1].asInt64(&i));
  EXPECT_EQ(i, -2);
  uint64_t u;
  EXPECT_FALSE(a->elements()[1].asUint64(&u));
  EXPECT_EQ(v.find("b")->find("c")->stringValue(), "x");
  EXPECT_TRUE(v.find("t")->boolValue());
  EXPECT_FALSE(v.find("f")->boolValue());
  EXPECT_TRUE(v.find("n")->isNull());
  EXPECT_TRUE(v.find("e")->isObject());
  EXPECT_TRUE(v.find("l")->isArray());
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(Json, IntegerRange) {
  uint64_t u;
  int64_t i;
  ASSERT_TRUE(parseOk("18446744073709551615").asUint64(&u));
  EXPECT_EQ(u, UINT64_MAX);
  EXPECT_FALSE(parseOk("18446744073709551615").asInt64(&i));
  ASSERT_TRUE(parseOk("-9223372036854775808").asInt64(&i));
  EXPECT_EQ(i, INT64_MIN);
  ASSERT_TRUE(parseOk("-0").asUint64(&u));
  EXPECT_EQ(u, 0u);
  EXPECT_THAT(parseError("18446744073709551616"), HasSubstr("out of range"));
  EXPECT_THAT(parseError("-9223372036854775809"), HasSubstr("out of range"));
}

TEST(Json, StringEscapesAndUtf8) {
  EXPECT_EQ(parseOk(R"("a\"b\\c\/d\b\f\n\r\t")").stringValue(), "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(parseOk(R"("\u00e9\u20ac\ud83d\ude00")").stringValue(),
            "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  EXPECT_EQ(parseOk("\"\xc3\xa9\xf0\x9f\x98\x80\"").stringValue(), "\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(parseOk(R"("\u0000")").stringValue(), std::string(1, '\0'));
}

TEST(Json, RejectsMalformedInput) {
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
      "1.5",
      "1e3",
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
  for (const char *text : cases)
    EXPECT_THAT(parseError(text), StartsWith("malformed JSON at byte ")) << text;
}

TEST(Json, RejectsDuplicateKeys) {
  EXPECT_EQ(parseError("{\"a\":1,\"a\":2}"), "malformed JSON at byte 7: duplicate key \"a\"");
  // Nested objects have their own key sets.
  parseOk("{\"a\":{\"a\":1},\"b\":{\"a\":2}}");
}

TEST(Json, RejectsDeepNesting) {
  std::string ok(kMaxJsonDepth, '['), deep(kMaxJsonDepth + 1, '[');
  ok += std::string(kMaxJsonDepth, ']');
  deep += std::string(kMaxJsonDepth + 1, ']');
  parseOk(ok);
  EXPECT_THAT(parseError(deep), HasSubstr("nested deeper than"));
  // Far deeper input must not exhaust the stack.
  EXPECT_THAT(parseError(std::string(1000000, '[')), HasSubstr("nested deeper than"));
}

TEST(Json, WriterIsCompactAndEscapesLikeSerde) {
  JsonValue v = JsonValue::object();
  v.add("s", JsonValue::string("q\"b\\n\n\t\x01\x1f/\xc3\xa9\x7f"));
  JsonValue &arr = v.add("a", JsonValue::array());
  arr.push(JsonValue::integer(-3));
  arr.push(JsonValue::unsignedInteger(UINT64_MAX));
  arr.push(JsonValue::integer(INT64_MIN));
  arr.push(JsonValue::boolean(true));
  arr.push(JsonValue());
  v.add("o", JsonValue::object());
  EXPECT_EQ(writeJson(v), "{\"s\":\"q\\\"b\\\\n\\n\\t\\u0001\\u001f/\xc3\xa9\x7f\",\"a\":[-3,"
                          "18446744073709551615,-9223372036854775808,true,null],\"o\":{}}");
}

TEST(Json, PrettyWriterOutput) {
  JsonValue v = JsonValue::object();
  v.add("n", JsonValue::integer(1));
  v.add("shape", JsonValue::array()).push(JsonValue::integer(2));
  v.add("f", JsonValue::object()).add("x", JsonValue::string("y"));
  EXPECT_EQ(writeJsonPretty(v),
            "{\n  \"n\": 1,\n  \"shape\": [2],\n  \"f\": {\n    \"x\": \"y\"\n  }\n}\n");
}

TEST(Json, WriteParseRoundTrip) {
  JsonValue v = JsonValue::object();
  v.add("k\xc3\xa9y\n", JsonValue::string(std::string("\0\x02z", 3)));
  JsonValue &nested = v.add("nested", JsonValue::array());
  nested.push(JsonValue::object()).add("deep", JsonValue::integer(-7));
  for (const std::string &text : {writeJson(v), writeJsonPretty(v)}) {
    JsonValue back = parseOk(text);
    EXPECT_EQ(writeJson(back), writeJson(v));
  }
}

TEST(Json, RandomBytesNeverCrash) {
  std::mt19937 rng(4242);
  const std::string alphabet = "{}[]\":,0123456789-truefalsnl \\u\n\xc3\xa9\xff";
  for (int iter = 0; iter < 20000; ++iter) {
    std::string text(rng() % 64, '\0');
    for (char &c : text)
      c = iter % 2 ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
    JsonValue v;
    Status status = parseJson(text, &v);
    if (!status.isOk())
      EXPECT_THAT(status.message(), StartsWith("malformed JSON at byte "));
    else
      parseOk(writeJson(v)); // whatever is accepted writes back as valid JSON
  }
}

} // namespace
} // namespace shardc::runtime
