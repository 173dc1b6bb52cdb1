// safetensors reading and writing: round trips, byte-exact agreement with the Python library's
// output, strict rejection of malformed files, and robustness against arbitrary bytes.
#include "runtime/checkpoint/safetensors.h"
#include "tests/unit/runtime/test_util.h"

#include <cstring>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::makeTensor;
using testing::TempDir;

std::string littleEndian64(uint64_t n) {
  std::string s;
  for (int i = 0; i < 8; ++i)
    s += static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

// A file image: length prefix, the header text as given, then `data`.
std::string image(const std::string &header, const std::string &data) {
  return littleEndian64(header.size()) + header + data;
}

std::string encode(const std::vector<std::pair<std::string, HostTensor>> &tensors,
                   const SafetensorsMetadata &metadata) {
  std::vector<NamedTensorRef> refs;
  for (const auto &named : tensors)
    refs.push_back({named.first, &named.second});
  std::vector<uint8_t> out;
  Status status = encodeSafetensors(refs, metadata, "t.safetensors", &out);
  EXPECT_TRUE(status.isOk()) << status.message();
  return std::string(out.begin(), out.end());
}

Status parse(const std::string &bytes, std::map<std::string, HostTensor> *tensors,
             SafetensorsMetadata *metadata = nullptr) {
  return parseSafetensors(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(),
                          "x.safetensors", tensors, metadata);
}

std::string parseError(const std::string &bytes) {
  std::map<std::string, HostTensor> tensors;
  Status status = parse(bytes, &tensors);
  EXPECT_FALSE(status.isOk()) << "accepted: " << bytes;
  return status.message();
}

void expectSameTensor(const HostTensor &a, const HostTensor &b) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.bytes, b.bytes);
}

TEST(Safetensors, RoundTripAllDtypesScalarsEmptyAndMetadata) {
  std::vector<std::pair<std::string, HostTensor>> tensors = {
      {"w.f32", makeTensor<float>(program::F32, {2, 3}, {1.5f, -2, 0, 3.25f, 1e30f, -0.0f})},
      {"i64", makeTensor<int64_t>(program::I64, {4}, {0, -1, INT64_MAX, INT64_MIN})},
      {"i32", makeTensor<int32_t>(program::I32, {2, 1, 2}, {7, -7, INT32_MAX, INT32_MIN})},
      {"mask", makeTensor<uint8_t>(program::BOOL, {3}, {1, 0, 1})},
      {"scalar", makeTensor<float>(program::F32, {}, {42.0f})},
      {"empty", makeTensor<float>(program::F32, {0, 3}, {})},
      {"empty.i64", makeTensor<int64_t>(program::I64, {5, 0}, {})},
      {"caf\xc3\xa9 \"q\"\n", makeTensor<int32_t>(program::I32, {}, {9})},
  };
  SafetensorsMetadata metadata = {{"format", "pt"}, {"note", "multi\nline \xe2\x82\xac"}, {"", ""}};
  TempDir dir;
  std::string path = dir.file("t.safetensors");
  ASSERT_TRUE(writeSafetensors(path, tensors, metadata).isOk());
  std::map<std::string, HostTensor> back;
  SafetensorsMetadata backMetadata;
  Status status = readSafetensors(path, &back, &backMetadata);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(backMetadata, metadata);
  ASSERT_EQ(back.size(), tensors.size());
  for (const auto &named : tensors) {
    ASSERT_EQ(back.count(named.first), 1u) << named.first;
    expectSameTensor(back.at(named.first), named.second);
  }
  // The header is padded so the data section starts 8-aligned.
  std::string bytes = testing::readBytes(path);
  uint64_t headerLength = 0;
  std::memcpy(&headerLength, bytes.data(), 8);
  EXPECT_EQ(headerLength % 8, 0u);
}

TEST(Safetensors, MapOverloadAndNoTensors) {
  TempDir dir;
  std::map<std::string, HostTensor> none, back;
  SafetensorsMetadata metadata = {{"k", "v"}};
  ASSERT_TRUE(writeSafetensors(dir.file("e.safetensors"), none, {}).isOk());
  ASSERT_TRUE(readSafetensors(dir.file("e.safetensors"), &back, &metadata).isOk());
  EXPECT_TRUE(back.empty());
  EXPECT_TRUE(metadata.empty());
  std::map<std::string, HostTensor> one = {{"x", makeTensor<int32_t>(program::I32, {1}, {3})}};
  ASSERT_TRUE(writeSafetensors(dir.file("m.safetensors"), one, {}).isOk());
  ASSERT_TRUE(readSafetensors(dir.file("m.safetensors"), &back, nullptr).isOk());
  expectSameTensor(back.at("x"), one.at("x"));
}

// The bytes below are what safetensors' serialize() (Python save_file) produces for the same
// inputs, written out by hand from the format's rules.
TEST(Safetensors, ByteExactWithThePythonLibrary) {
  // {"attn.0": float32 [[[0, 1, 2], [3, 4, 5]]]}: a 64-byte header needs no padding.
  std::string header = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(header.size(), 64u);
  std::string expected = std::string("\x40\0\0\0\0\0\0\0", 8) + header +
                         std::string("\0\0\0\0\0\0\x80\x3f\0\0\0\x40\0\0\x40\x40"
                                     "\0\0\x80\x40\0\0\xa0\x40",
                                     24);
  EXPECT_EQ(
      encode({{"attn.0", makeTensor<float>(program::F32, {1, 2, 3}, {0, 1, 2, 3, 4, 5})}}, {}),
      expected);

  // No tensors: "{}" padded to 8 bytes.
  EXPECT_EQ(encode({}, {}), std::string("\x08\0\0\0\0\0\0\0{}      ", 16));

  // No tensors, metadata={"framework": "pt"}: 35 bytes of JSON + 5 spaces.
  EXPECT_EQ(encode({}, {{"framework", "pt"}}), std::string("\x28\0\0\0\0\0\0\0", 8) +
                                                   R"({"__metadata__":{"framework":"pt"}})" +
                                                   "     ");

  // Mixed dtypes: ordered I64, F32, I32, BOOL (descending alignment), then by name; metadata
  // first; tensors' bytes in that order.
  std::string mixedHeader = R"({"__metadata__":{"format":"np"},)"
                            R"("z":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
                            R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
                            R"("a2":{"dtype":"F32","shape":[0],"data_offsets":[16,16]},)"
                            R"("c":{"dtype":"I32","shape":[1],"data_offsets":[16,20]},)"
                            R"("b":{"dtype":"BOOL","shape":[3],"data_offsets":[20,23]}})";
  ASSERT_EQ(mixedHeader.size(), 305u);
  std::string mixedExpected = std::string("\x38\x01\0\0\0\0\0\0", 8) + mixedHeader +
                              std::string(7, ' ') +
                              std::string("\x05\0\0\0\0\0\0\0"     // z = 5
                                          "\0\0\x80\x3f\0\0\0\xc0" // a = [1, -2]
                                          "\xff\xff\xff\xff"       // c = [-1]
                                          "\x01\x00\x01",          // b = [T, F, T]
                                          23);
  EXPECT_EQ(encode({{"b", makeTensor<uint8_t>(program::BOOL, {3}, {1, 0, 1})},
                    {"c", makeTensor<int32_t>(program::I32, {1}, {-1})},
                    {"a2", makeTensor<float>(program::F32, {0}, {})},
                    {"a", makeTensor<float>(program::F32, {2}, {1, -2})},
                    {"z", makeTensor<int64_t>(program::I64, {}, {5})}},
                   {{"format", "np"}}),
            mixedExpected);

  // And the reader accepts the library's files, including the tensor order it uses.
  std::map<std::string, HostTensor> tensors;
  SafetensorsMetadata metadata;
  ASSERT_TRUE(parse(mixedExpected, &tensors, &metadata).isOk());
  EXPECT_EQ(metadata.at("format"), "np");
  EXPECT_EQ(tensors.at("z").as<int64_t>()[0], 5);
  EXPECT_EQ(tensors.at("a").as<float>()[1], -2.0f);
  EXPECT_EQ(tensors.at("b").bytes, (HostBytes{1, 0, 1}));
}

TEST(Safetensors, ReaderAcceptsAnyTensorOrderAndWhitespace) {
  // Header entries need not be in offset order, and padding may be any JSON whitespace.
  std::string header = "{ \"y\" : {\"data_offsets\":[4,8],\"shape\":[1],\"dtype\":\"I32\"},\n"
                       "\"x\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}\t\r\n ";
  std::map<std::string, HostTensor> tensors;
  ASSERT_TRUE(parse(image(header, std::string("\x01\0\0\0\x02\0\0\0", 8)), &tensors).isOk());
  EXPECT_EQ(tensors.at("x").as<int32_t>()[0], 1);
  EXPECT_EQ(tensors.at("y").as<int32_t>()[0], 2);
}

TEST(Safetensors, BoolBytesAreNormalised) {
  std::map<std::string, HostTensor> tensors;
  ASSERT_TRUE(parse(image(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                          std::string("\x00\x02\xff", 3)),
                    &tensors)
                  .isOk());
  EXPECT_EQ(tensors.at("m").bytes, (HostBytes{0, 1, 1}));
}

std::string entry(const std::string &name, const std::string &dtype, const std::string &shape,
                  const std::string &offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":" + offsets + "}";
}

TEST(Safetensors, RejectsBadFraming) {
  EXPECT_EQ(parseError(""),
            "x.safetensors: not a safetensors file (0 bytes, shorter than the 8-byte header "
            "length)");
  EXPECT_THAT(parseError(std::string("\x07\0\0", 3)), StartsWith("x.safetensors: not a"));
  EXPECT_THAT(parseError(littleEndian64(100000001) + "{}"), HasSubstr("exceeds the limit"));
  EXPECT_THAT(parseError(littleEndian64(UINT64_MAX) + "{}"), HasSubstr("exceeds the limit"));
  EXPECT_EQ(parseError(littleEndian64(10) + "{}"),
            "x.safetensors: truncated: header length is 10 bytes, the file has 2 after the length");
}

TEST(Safetensors, RejectsBadHeaders) {
  EXPECT_THAT(parseError(image("{", "")), StartsWith("x.safetensors: header: malformed JSON"));
  // A number where a tensor entry belongs, or a fraction where an integer does.
  EXPECT_EQ(parseError(image("{\"a\":1.5}", "")),
            "x.safetensors: tensor 'a': header entry is not an object");
  const std::string data(8, '\0');
  EXPECT_EQ(parseError(image("{" + entry("w", "F32", "[2.0]", "[0,8]") + "}", data)),
            "x.safetensors: tensor 'w': 'shape' holds something other than a non-negative "
            "integer");
  EXPECT_EQ(parseError(image("{" + entry("w", "F32", "[2]", "[0,8e0]") + "}", data)),
            "x.safetensors: tensor 'w': 'data_offsets' is not a pair of non-negative integers");
  EXPECT_EQ(parseError(image("[]", "")), "x.safetensors: header is not a JSON object");
  EXPECT_THAT(parseError(image("{\"x\":{\"dtype\":\"F32\"}}\xff", "")),
              StartsWith("x.safetensors: header: malformed JSON"));
  EXPECT_EQ(parseError(image(R"({"__metadata__":[]})", "")),
            "x.safetensors: '__metadata__' is not an object");
  EXPECT_EQ(parseError(image(R"({"__metadata__":{"k":1}})", "")),
            "x.safetensors: '__metadata__' value of 'k' is not a string");
  EXPECT_THAT(parseError(image("{" + entry("w", "F32", "[1]", "[0,4]") + "," +
                                   entry("w", "F32", "[1]", "[4,8]") + "}",
                               std::string(8, '\0'))),
              HasSubstr("duplicate key \"w\""));
}

TEST(Safetensors, RejectsBadTensorEntries) {
  std::string data(8, '\0');
  auto err = [&](const std::string &tensorJson) {
    return parseError(image("{" + tensorJson + "}", data));
  };
  EXPECT_EQ(err(entry("w", "F16", "[4]", "[0,8]")),
            "x.safetensors: tensor 'w': unsupported dtype 'F16' (supported: F32 I64 I32 BOOL)");
  EXPECT_EQ(err(entry("w", "F64", "[1]", "[0,8]")),
            "x.safetensors: tensor 'w': unsupported dtype 'F64' (supported: F32 I64 I32 BOOL)");
  EXPECT_EQ(err(R"("w":{"dtype":"F32","shape":[2]})"),
            "x.safetensors: tensor 'w': missing field 'data_offsets'");
  EXPECT_EQ(err(R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1})"),
            "x.safetensors: tensor 'w': unexpected field 'extra'");
  EXPECT_EQ(err(R"("w":[1])"), "x.safetensors: tensor 'w': header entry is not an object");
  EXPECT_EQ(err(R"("w":{"dtype":3,"shape":[2],"data_offsets":[0,8]})"),
            "x.safetensors: tensor 'w': 'dtype' is not a string");
  EXPECT_THAT(err(entry("w", "F32", "[-2]", "[0,8]")),
              HasSubstr("'shape' holds something other than a non-negative integer"));
  EXPECT_THAT(err(entry("w", "F32", "2", "[0,8]")), HasSubstr("'shape' is not an array"));
  EXPECT_THAT(err(entry("w", "F32", "[2]", "[0,8,8]")), HasSubstr("not a pair"));
  EXPECT_THAT(err(entry("w", "F32", "[2]", "[-1,8]")), HasSubstr("not a pair"));
  EXPECT_EQ(err(entry("w", "F32", "[2]", "[8,0]")),
            "x.safetensors: tensor 'w': data_offsets [8, 0] end before they begin");
  EXPECT_EQ(err(entry("w", "F32", "[4]", "[0,16]")),
            "x.safetensors: tensor 'w': data_offsets [0, 16] lie outside the 8-byte data "
            "section (file truncated?)");
  EXPECT_EQ(err(entry("w", "F32", "[3]", "[0,8]")),
            "x.safetensors: tensor 'w': f32[3] needs 12 bytes, data_offsets [0, 8] span 8");
  EXPECT_THAT(err(entry("w", "F32", "[4611686018427387904,4]", "[0,8]")), HasSubstr("too large"));
  EXPECT_THAT(err(entry("a\\nb", "F16", "[4]", "[0,8]")),
              StartsWith("x.safetensors: tensor 'a\\nb': unsupported"));
}

TEST(Safetensors, RejectsOverlapsGapsAndTrailingBytes) {
  EXPECT_EQ(parseError(image("{" + entry("a", "F32", "[2]", "[0,8]") + "," +
                                 entry("b", "F32", "[1]", "[4,8]") + "}",
                             std::string(8, '\0'))),
            "x.safetensors: tensor 'b': data_offsets [4, 8] overlap tensor 'a'");
  EXPECT_EQ(parseError(image("{" + entry("a", "F32", "[1]", "[0,4]") + "," +
                                 entry("b", "F32", "[1]", "[0,4]") + "}",
                             std::string(4, '\0'))),
            "x.safetensors: tensor 'b': data_offsets [0, 4] overlap tensor 'a'");
  EXPECT_EQ(parseError(image("{" + entry("a", "F32", "[1]", "[4,8]") + "}", std::string(8, '\0'))),
            "x.safetensors: tensor 'a': data_offsets [4, 8] leave a gap after byte 0");
  EXPECT_EQ(parseError(image("{" + entry("a", "F32", "[1]", "[0,4]") + "}", std::string(8, '\0'))),
            "x.safetensors: the tensors cover 4 bytes of the 8-byte data section (trailing bytes)");
  EXPECT_EQ(parseError(image("{}", "x")),
            "x.safetensors: the tensors cover 0 bytes of the 1-byte data section (trailing bytes)");
}

TEST(Safetensors, WriterRejectsInvalidInput) {
  HostTensor good = makeTensor<float>(program::F32, {1}, {1});
  HostTensor shortBytes = makeHostTensor(program::F32, {2});
  shortBytes.bytes.resize(4);
  HostTensor unknown = good;
  unknown.dtype = program::DTYPE_UNSPECIFIED;
  using Named = std::vector<std::pair<std::string, HostTensor>>;
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  EXPECT_EQ(writeSafetensors(path, Named{{"a", good}, {"a", good}}, {}).message(),
            path + ": cannot write tensor 'a': duplicate name");
  EXPECT_EQ(writeSafetensors(path, Named{{"__metadata__", good}}, {}).message(),
            path + ": cannot write tensor '__metadata__': the name is reserved for the metadata");
  EXPECT_EQ(writeSafetensors(path, Named{{"s", shortBytes}}, {}).message(),
            path + ": cannot write tensor 's': f32[2] holds 4 bytes, expected 8");
  EXPECT_EQ(writeSafetensors(path, Named{{"u", unknown}}, {}).message(),
            path + ": cannot write tensor 'u': unsupported dtype 0");
  EXPECT_FALSE(testing::readBytes(path).size()); // nothing was written
}

TEST(Safetensors, ReadErrorsNameTheFile) {
  TempDir dir;
  std::map<std::string, HostTensor> tensors;
  EXPECT_EQ(readSafetensors(dir.file("missing.safetensors"), &tensors, nullptr).message(),
            dir.file("missing.safetensors") + ": cannot open: No such file or directory");
  testing::writeBytes(dir.file("bad.safetensors"), "definitely not safetensors");
  EXPECT_THAT(readSafetensors(dir.file("bad.safetensors"), &tensors, nullptr).message(),
              StartsWith(dir.file("bad.safetensors") + ": "));
}

// Whatever the bytes, the reader returns (ok or an error) and accepted tensors are consistent.
void expectNoCrash(const std::string &bytes) {
  std::map<std::string, HostTensor> tensors;
  SafetensorsMetadata metadata;
  Status status = parse(bytes, &tensors, &metadata);
  if (status.isOk()) {
    for (const auto &named : tensors)
      EXPECT_EQ(named.second.bytes.size(),
                static_cast<size_t>(named.second.numel()) * dtypeSize(named.second.dtype));
  } else {
    EXPECT_THAT(status.message(), StartsWith("x.safetensors: "));
    EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
  }
}

TEST(Safetensors, RandomBytesNeverCrash) {
  std::mt19937 rng(31337);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes(rng() % 120, '\0');
    for (char &c : bytes)
      c = static_cast<char>(rng() % 256);
    // Half the inputs get a plausible length prefix so the JSON and layout checks run too.
    if (iter % 2 == 0 && bytes.size() >= 8) {
      std::string prefix = littleEndian64(rng() % (bytes.size() - 7));
      bytes.replace(0, 8, prefix);
      if (bytes.size() > 8)
        bytes[8] = '{';
    }
    expectNoCrash(bytes);
  }
}

TEST(Safetensors, MutatedValidFilesNeverCrash) {
  std::string valid = encode({{"a", makeTensor<float>(program::F32, {2}, {1, 2})},
                              {"b", makeTensor<int64_t>(program::I64, {}, {3})},
                              {"m\n", makeTensor<uint8_t>(program::BOOL, {2}, {0, 1})}},
                             {{"k", "v"}});
  const std::string alphabet = "{}[]\":,0123456789-FIBOL_ \\u\xff";
  std::mt19937 rng(99);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes = valid;
    int mutations = 1 + static_cast<int>(rng() % 4);
    for (int m = 0; m < mutations && !bytes.empty(); ++m) {
      size_t pos = rng() % bytes.size();
      switch (rng() % 4) {
      case 0:
        bytes[pos] = static_cast<char>(rng() % 256);
        break;
      case 1:
        bytes[pos] = alphabet[rng() % alphabet.size()];
        break;
      case 2:
        bytes.resize(pos);
        break;
      default:
        bytes.insert(pos, 1, alphabet[rng() % alphabet.size()]);
        break;
      }
    }
    expectNoCrash(bytes);
  }
}

} // namespace
} // namespace shardc::runtime
