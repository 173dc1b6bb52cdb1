// .npy reading and writing: round trips, the header variants numpy writes, strict rejection of
// everything else, and robustness against arbitrary bytes.
#include "runtime/data/npy.h"
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

// A .npy image with the given version and header text (no padding added).
std::string npyImage(int major, const std::string &header, const std::string &data) {
  std::string image("\x93NUMPY", 6);
  image += static_cast<char>(major);
  image += '\0';
  size_t n = header.size();
  image += static_cast<char>(n & 0xFF);
  image += static_cast<char>((n >> 8) & 0xFF);
  if (major >= 2) {
    image += static_cast<char>((n >> 16) & 0xFF);
    image += static_cast<char>((n >> 24) & 0xFF);
  }
  return image + header + data;
}

Status parse(const std::string &image, HostTensor *out) {
  return parseNpy(reinterpret_cast<const uint8_t *>(image.data()), image.size(), "x.npy", out);
}

std::string parseError(const std::string &image) {
  HostTensor t;
  Status status = parse(image, &t);
  EXPECT_FALSE(status.isOk()) << "accepted: " << image;
  return status.message();
}

void expectRoundTrip(const HostTensor &tensor) {
  TempDir dir;
  std::string path = dir.file("t.npy");
  ASSERT_TRUE(writeNpy(path, tensor).isOk());
  HostTensor back;
  Status status = readNpy(path, &back);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(back.dtype, tensor.dtype);
  EXPECT_EQ(back.shape, tensor.shape);
  EXPECT_EQ(back.bytes, tensor.bytes);

  // The layout numpy writes: version 1.0, data 64-aligned, header ends with '\n'.
  std::string image = testing::readBytes(path);
  ASSERT_GE(image.size(), 10u);
  EXPECT_EQ(image[6], 1);
  EXPECT_EQ(image[7], 0);
  size_t headerLength = static_cast<uint8_t>(image[8]) | (static_cast<uint8_t>(image[9]) << 8);
  EXPECT_EQ((10 + headerLength) % 64, 0u);
  EXPECT_EQ(image[10 + headerLength - 1], '\n');
  EXPECT_EQ(image.size(), 10 + headerLength + tensor.bytes.size());
}

TEST(Npy, RoundTripF32) {
  expectRoundTrip(makeTensor<float>(program::F32, {2, 3}, {1.5f, -2, 0, 3.25f, 1e30f, -0.0f}));
}
TEST(Npy, RoundTripI64) {
  expectRoundTrip(makeTensor<int64_t>(program::I64, {4}, {0, -1, INT64_MAX, INT64_MIN}));
}
TEST(Npy, RoundTripI32) {
  expectRoundTrip(makeTensor<int32_t>(program::I32, {2, 1, 2}, {7, -7, INT32_MAX, INT32_MIN}));
}
TEST(Npy, RoundTripBool) { expectRoundTrip(makeTensor<uint8_t>(program::BOOL, {3}, {1, 0, 1})); }
TEST(Npy, RoundTripScalar) {
  expectRoundTrip(makeTensor<float>(program::F32, {}, {42.0f}));
  expectRoundTrip(makeTensor<int64_t>(program::I64, {}, {-3}));
}
TEST(Npy, RoundTripEmpty) { expectRoundTrip(makeTensor<float>(program::F32, {0, 3}, {})); }

TEST(Npy, WriterHeaderText) {
  std::vector<uint8_t> image;
  ASSERT_TRUE(encodeNpy(makeTensor<int32_t>(program::I32, {3}, {1, 2, 3}), "t.npy", &image).isOk());
  std::string text(image.begin() + 10, image.end());
  EXPECT_THAT(text, StartsWith("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }"));
}

TEST(Npy, WriterRejectsInconsistentTensor) {
  HostTensor t = makeHostTensor(program::F32, {2});
  t.bytes.resize(4);
  std::vector<uint8_t> image;
  Status status = encodeNpy(t, "t.npy", &image);
  EXPECT_EQ(status.message(), "t.npy: cannot write f32[2]: it holds 4 bytes, expected 8");
}

TEST(Npy, ReadsVersions2And3AndHeaderVariants) {
  std::string data(8, '\0');
  int32_t values[2] = {5, -6};
  std::memcpy(data.data(), values, 8);
  const char *headers[] = {
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n",
      "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2,)}\n",
      "{'shape': (2,), 'fortran_order': False, 'descr': '<i4'}",
      "  {'descr':'<i4','fortran_order':False,'shape':(2 , )}   \n",
  };
  for (int major : {1, 2, 3}) {
    for (const char *header : headers) {
      HostTensor t;
      Status status = parse(npyImage(major, header, data), &t);
      ASSERT_TRUE(status.isOk()) << "v" << major << " " << header << ": " << status.message();
      EXPECT_EQ(t.dtype, program::I32);
      EXPECT_EQ(t.shape, std::vector<int64_t>{2});
      EXPECT_EQ(t.as<int32_t>()[1], -6);
    }
  }
}

TEST(Npy, ReadsScalarAndMultiDimShapes) {
  HostTensor t;
  ASSERT_TRUE(
      parse(npyImage(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }\n", "\x01"), &t)
          .isOk());
  EXPECT_EQ(t.dtype, program::BOOL);
  EXPECT_TRUE(t.shape.empty());
  ASSERT_TRUE(
      parse(npyImage(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 0, 4), }", ""), &t)
          .isOk());
  EXPECT_EQ(t.shape, (std::vector<int64_t>{1, 0, 4}));
}

TEST(Npy, BoolBytesAreNormalised) {
  HostTensor t;
  ASSERT_TRUE(parse(npyImage(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                             std::string("\x00\x02\xff", 3)),
                    &t)
                  .isOk());
  EXPECT_EQ(t.bytes, (HostBytes{0, 1, 1}));
}

TEST(Npy, RejectsBadMagic) {
  EXPECT_EQ(parseError("PK\x03\x04 this is a zip"), "x.npy: not a .npy file (bad magic)");
  EXPECT_EQ(parseError(""), "x.npy: not a .npy file (bad magic)");
  EXPECT_EQ(parseError("\x93NUMP"), "x.npy: not a .npy file (bad magic)");
}

TEST(Npy, RejectsUnsupportedDtypes) {
  for (const char *descr : {"<f8", ">f4", "<u1", "<b1", "|u1", "<f2", "O", "<U3", ""}) {
    std::string header =
        std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (2,), }";
    EXPECT_EQ(parseError(npyImage(1, header, std::string(16, '\0'))),
              std::string("x.npy: unsupported dtype '") + descr + "' (supported: <f4 <i8 <i4 |b1)");
  }
}

TEST(Npy, RejectsFortranOrder) {
  EXPECT_THAT(parseError(npyImage(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                                  std::string(16, '\0'))),
              StartsWith("x.npy: Fortran-order arrays are not supported"));
}

TEST(Npy, RejectsTruncatedData) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(parseError(npyImage(1, header, std::string(16, '\0'))),
            "x.npy: truncated: header says 24 bytes of data, file has 16");
  EXPECT_EQ(parseError(npyImage(1, header, std::string(32, '\0'))),
            "x.npy: header says 24 bytes of data, file has 32 (trailing bytes)");
}

TEST(Npy, RejectsTruncatedHeader) {
  std::string full = npyImage(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", "");
  EXPECT_THAT(parseError(full.substr(0, 7)), StartsWith("x.npy: truncated"));
  EXPECT_THAT(parseError(full.substr(0, 9)), StartsWith("x.npy: truncated"));
  EXPECT_THAT(parseError(full.substr(0, 30)), StartsWith("x.npy: truncated"));
}

TEST(Npy, RejectsUnknownVersions) {
  std::string image =
      npyImage(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", std::string(4, '\0'));
  image[6] = 4;
  EXPECT_EQ(parseError(image),
            "x.npy: unsupported .npy format version 4.0 (supported: 1.0, 2.0, 3.0)");
  image[6] = 1;
  image[7] = 1;
  EXPECT_THAT(parseError(image), StartsWith("x.npy: unsupported .npy format version 1.1"));
}

TEST(Npy, RejectsMalformedHeaders) {
  const char *headers[] = {
      "",
      "{",
      "}",
      "[]",
      "{'descr': '<f4', 'fortran_order': False}",                 // no shape
      "{'descr': '<f4', 'shape': (2,)}",                          // no fortran_order
      "{'fortran_order': False, 'shape': (2,)}",                  // no descr
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2)}",   // (2) is not a tuple
      "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", // negative
      "{'descr': '<f4', 'fortran_order': False, 'shape': [2]}",   // list
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
      "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}",
      "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
      "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
      "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk",
      "{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}",
      "{descr: '<f4', 'fortran_order': False, 'shape': (2,)}",
      "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)",
  };
  for (const char *header : headers)
    EXPECT_THAT(parseError(npyImage(1, header, std::string(8, '\0'))),
                StartsWith("x.npy: malformed header: "))
        << header;
}

TEST(Npy, RejectsHugeShapesWithoutAllocating) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (4611686018427387904, 4),}";
  EXPECT_THAT(parseError(npyImage(1, header, "")), HasSubstr("too large"));
  header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,),}";
  EXPECT_EQ(parseError(npyImage(1, header, "")),
            "x.npy: truncated: header says 4000000000000 bytes of data, file has 0");
}

TEST(Npy, ReadErrorsNameTheFile) {
  TempDir dir;
  HostTensor t;
  Status status = readNpy(dir.file("missing.npy"), &t);
  EXPECT_EQ(status.message(), dir.file("missing.npy") + ": cannot open: No such file or directory");
  testing::writeBytes(dir.file("bad.npy"), "not numpy at all");
  status = readNpy(dir.file("bad.npy"), &t);
  EXPECT_EQ(status.message(), dir.file("bad.npy") + ": not a .npy file (bad magic)");
}

// Whatever the bytes, the reader returns (ok or an error) and an accepted tensor is consistent.
void expectNoCrash(const std::string &image) {
  HostTensor t;
  Status status = parse(image, &t);
  if (status.isOk()) {
    EXPECT_EQ(t.bytes.size(), static_cast<size_t>(t.numel()) * dtypeSize(t.dtype));
  } else {
    EXPECT_THAT(status.message(), StartsWith("x.npy: "));
  }
}

TEST(Npy, RandomBytesNeverCrash) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 160);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string image(static_cast<size_t>(length(rng)), '\0');
    for (char &c : image)
      c = static_cast<char>(byte(rng));
    // Half the inputs start with a valid preamble so the header parser is exercised too.
    if (iter % 2 == 0 && image.size() >= 10) {
      std::memcpy(image.data(), "\x93NUMPY", 6);
      image[6] = static_cast<char>(1 + iter % 3);
      image[7] = 0;
    }
    expectNoCrash(image);
  }
}

TEST(Npy, MutatedValidFilesNeverCrash) {
  std::vector<uint8_t> valid;
  ASSERT_TRUE(encodeNpy(makeTensor<float>(program::F32, {2, 2}, {1, 2, 3, 4}), "t", &valid).isOk());
  const std::string alphabet = "{}()',: 0123456789TrueFalse<>|fib\n\x93";
  std::mt19937 rng(777);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string image(valid.begin(), valid.end());
    int mutations = 1 + static_cast<int>(rng() % 4);
    for (int m = 0; m < mutations; ++m) {
      size_t pos = rng() % image.size();
      switch (rng() % 4) {
      case 0:
        image[pos] = static_cast<char>(rng() % 256);
        break;
      case 1:
        image[pos] = alphabet[rng() % alphabet.size()];
        break;
      case 2:
        image.resize(pos);
        break;
      default:
        image.insert(pos, 1, alphabet[rng() % alphabet.size()]);
        break;
      }
      if (image.empty())
        break;
    }
    expectNoCrash(image);
  }
}

} // namespace
} // namespace shardc::runtime
