// Support helpers: file I/O, aligned buffers, tensor file names.
#include "runtime/data/tensor_file_name.h"
#include "runtime/support/aligned_buffer.h"
#include "runtime/support/file_io.h"
#include "runtime/support/quote.h"
#include "tests/unit/runtime/test_util.h"

#include <cstring>
#include <filesystem>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

TEST(AlignedBuffer, AlignedZeroedAndNeverNull) {
  AlignedBuffer empty;
  ASSERT_TRUE(AlignedBuffer::allocate(0, "test", &empty).isOk());
  EXPECT_NE(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);

  AlignedBuffer buffer;
  ASSERT_TRUE(AlignedBuffer::allocate(100, "test", &buffer).isOk());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % kBufferAlignment, 0u);
  EXPECT_EQ(buffer.allocatedBytes(), 128u);
  for (size_t i = 0; i < buffer.size(); ++i)
    ASSERT_EQ(buffer.data()[i], 0);

  AlignedBuffer moved = std::move(buffer);
  EXPECT_EQ(moved.size(), 100u);
  EXPECT_EQ(buffer.data(), nullptr);
}

TEST(AlignedBuffer, HugeAllocationIsAnError) {
  AlignedBuffer buffer;
  Status status = AlignedBuffer::allocate(SIZE_MAX - 8, "arena", &buffer);
  ASSERT_FALSE(status.isOk());
  EXPECT_THAT(status.message(), HasSubstr("arena"));
}

TEST(FileIo, WriteThenRead) {
  TempDir dir;
  std::string path = dir.file("data.bin");
  const char payload[] = "hello\0world";
  ASSERT_TRUE(writeFileAtomically(path, payload, sizeof(payload)).isOk());
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(readFile(path, &bytes).isOk());
  ASSERT_EQ(bytes.size(), sizeof(payload));
  EXPECT_EQ(std::memcmp(bytes.data(), payload, sizeof(payload)), 0);

  AlignedBuffer aligned;
  ASSERT_TRUE(readFile(path, &aligned).isOk());
  ASSERT_EQ(aligned.size(), sizeof(payload));
  EXPECT_EQ(std::memcmp(aligned.data(), payload, sizeof(payload)), 0);

  // Overwriting replaces the content and leaves no temporary file behind.
  ASSERT_TRUE(writeFileAtomically(path, "x", 1).isOk());
  ASSERT_TRUE(readFile(path, &bytes).isOk());
  EXPECT_EQ(bytes, std::vector<uint8_t>{'x'});
  int entries = 0;
  for ([[maybe_unused]] const auto &entry : std::filesystem::directory_iterator(dir.path()))
    ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(FileIo, EmptyFile) {
  TempDir dir;
  ASSERT_TRUE(writeFileAtomically(dir.file("empty"), "", 0).isOk());
  std::vector<uint8_t> bytes{1, 2, 3};
  ASSERT_TRUE(readFile(dir.file("empty"), &bytes).isOk());
  EXPECT_TRUE(bytes.empty());
}

TEST(FileIo, ErrorsNameThePathAndTheCause) {
  TempDir dir;
  std::vector<uint8_t> bytes;
  Status missing = readFile(dir.file("nope.npy"), &bytes);
  EXPECT_EQ(missing.message(), dir.file("nope.npy") + ": cannot open: No such file or directory");

  Status isDir = readFile(dir.path(), &bytes);
  EXPECT_EQ(isDir.message(), dir.path() + ": is a directory, expected a file");

  Status noDir = writeFileAtomically(dir.file("no/such/dir/out.npy"), "x", 1);
  EXPECT_EQ(noDir.message(),
            dir.file("no/such/dir/out.npy") + ": cannot create: No such file or directory");
}

// A write never replaces what is not a regular file: a named pipe, a device node, a directory
// or a symbolic link at the destination is refused in one line and left as it was (the
// temporary-file-and-rename would otherwise turn /dev/null into a regular file).
TEST(FileIo, NeverReplacesWhatIsNotARegularFile) {
  TempDir dir;
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Status status = writeFileAtomically(fifo, "x", 1);
  EXPECT_EQ(status.message(),
            fifo + ": exists and is a named pipe; only a regular file is ever replaced by a write");
  struct stat st;
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));

  const std::string victim = dir.file("victim");
  ASSERT_TRUE(writeFileAtomically(victim, "keep", 4).isOk());
  const std::string link = dir.file("link");
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  EXPECT_THAT(writeFileAtomically(link, "x", 1).message(), HasSubstr("is a symbolic link"));
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));

  const std::string subdir = dir.file("sub");
  std::filesystem::create_directory(subdir);
  EXPECT_THAT(writeFileAtomically(subdir, "x", 1).message(), HasSubstr("is a directory"));
  EXPECT_THAT(checkRegularFileDestination("/dev/null").message(),
              HasSubstr("/dev/null: exists and is a character device"));
  EXPECT_TRUE(checkRegularFileDestination(victim).isOk());
  EXPECT_TRUE(checkRegularFileDestination(dir.file("new")).isOk());
  // Nothing was left behind: the pipe, the victim (unchanged), the link and the directory.
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(readFile(victim, &bytes).isOk());
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "keep");
  int entries = 0;
  for ([[maybe_unused]] const auto &entry : std::filesystem::directory_iterator(dir.path()))
    ++entries;
  EXPECT_EQ(entries, 4);
}

// A reader of a directory others may write into does not follow a link planted there.
TEST(FileIo, ReadFileNoFollowRefusesASymbolicLink) {
  TempDir dir;
  ASSERT_TRUE(writeFileAtomically(dir.file("real"), "abc", 3).isOk());
  ASSERT_EQ(::symlink(dir.file("real").c_str(), dir.file("link").c_str()), 0);
  std::vector<uint8_t> bytes;
  EXPECT_EQ(readFileNoFollow(dir.file("link"), &bytes).message(),
            dir.file("link") + ": is a symbolic link; refusing to follow it");
  ASSERT_TRUE(readFileNoFollow(dir.file("real"), &bytes).isOk());
  EXPECT_EQ(bytes.size(), 3u);
}

TEST(Quote, KeepsMessagesOnOneLine) {
  EXPECT_EQ(quoteForMessage("MatMul_3"), "'MatMul_3'");
  EXPECT_EQ(quoteForMessage(""), "''");
  EXPECT_EQ(quoteForMessage("a\nb\tc"), "'a\\nb\\tc'");
  EXPECT_EQ(quoteForMessage("it's"), "'it\\'s'");
  EXPECT_EQ(quoteForMessage(std::string("\x00\x7f\xff", 3)), "'\\x00\\x7f\\xff'");
}

TEST(TensorFileName, ReplacesCharactersOutsideTheSafeSet) {
  EXPECT_EQ(tensorNpyFileName("onnx::Add_5"), "onnx__Add_5.npy");
  EXPECT_EQ(tensorFileStem("input.1"), "input.1");
  EXPECT_EQ(tensorFileStem("a-b_C.9"), "a-b_C.9");
  EXPECT_EQ(tensorFileStem("a/b c:d"), "a_b_c_d");
  EXPECT_EQ(tensorFileStem("../x"), ".._x");
  // One '_' per character, not per UTF-8 byte (as Python's re.sub on str).
  EXPECT_EQ(tensorFileStem("caf\xc3\xa9"), "caf_");
  EXPECT_EQ(tensorFileStem("\xe2\x82\xac"
                           "1"),
            "_1");
  // Bytes that are not UTF-8 count one each.
  EXPECT_EQ(tensorFileStem("\xff\xfe"), "__");
  EXPECT_EQ(tensorFileStem(""), "");
}

} // namespace
} // namespace shardc::runtime
