// Bundle loading: a valid bundle loads, and each structural check rejects a bundle that breaks
// it with a message naming the file and the offending item.
#include "runtime/executor/executor.h"
#include "runtime/loader/bundle.h"
#include "tests/unit/runtime/test_util.h"

#include <filesystem>
#include <functional>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <map>
#include <string>
#include <xxhash.h>

namespace shardc::runtime {
namespace {

using testing::addMatmulBundle;
using ::testing::StartsWith;
using testing::TempDir;
using testing::writeBundle;

const std::string kWeights = testing::addMatmulWeights();

program::Bundle validBundle() { return addMatmulBundle(); }

std::string loadError(const TempDir &dir) {
  LoadedBundle loaded;
  Status status = loadBundle(dir.path(), &loaded);
  EXPECT_FALSE(status.isOk());
  return status.message();
}

// Applies `edit` to a valid bundle and returns the load error.
std::string errorAfter(const std::function<void(program::Bundle &)> &edit) {
  TempDir dir;
  program::Bundle bundle = validBundle();
  edit(bundle);
  writeBundle(dir, bundle, kWeights);
  std::string message = loadError(dir);
  // Strip the temp dir so expectations read like the user would see them for "B".
  if (message.rfind(dir.path(), 0) == 0)
    message = "B" + message.substr(dir.path().size());
  return message;
}

program::Program &prog(program::Bundle &bundle) { return *bundle.mutable_programs(0); }

TEST(Bundle, ValidBundleLoads) {
  TempDir dir;
  writeBundle(dir, validBundle(), kWeights);
  LoadedBundle loaded;
  Status status = loadBundle(dir.path(), &loaded);
  ASSERT_TRUE(status.isOk()) << status.message();
  ASSERT_NE(loaded.weights, nullptr);
  EXPECT_EQ(loaded.weights->size(), 128u);
  EXPECT_EQ(loaded.bundle.programs(0).ops_size(), 2);
}

TEST(Bundle, MissingOrNotADirectory) {
  TempDir dir;
  LoadedBundle loaded;
  EXPECT_EQ(loadBundle(dir.file("nope.shard"), &loaded).message(),
            dir.file("nope.shard") + ": no such bundle directory");
  testing::writeBytes(dir.file("file"), "x");
  EXPECT_EQ(loadBundle(dir.file("file"), &loaded).message(),
            dir.file("file") + ": not a directory (a shardc bundle is a directory)");
  EXPECT_EQ(loadBundle(dir.path(), &loaded).message(),
            dir.path() + ": missing program.pb (not a shardc bundle)");
}

// program.pb is checked against its checksum before it is parsed: one flipped byte that still
// parses (a weight decay or a Gemm alpha changed) is caught, and so is a missing checksum.
TEST(Bundle, ProgramChecksum) {
  TempDir dir;
  writeBundle(dir, validBundle(), kWeights, /*fixChecksum=*/true);
  std::string bytes = testing::readBytes(dir.file("program.pb"));
  LoadedBundle loaded;
  Status status = loadBundle(dir.path(), &loaded);
  ASSERT_TRUE(status.isOk()) << status.message();
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x01;
  testing::writeBytes(dir.file("program.pb"), flipped);
  EXPECT_EQ(loadError(dir), dir.file("program.pb") +
                                ": checksum mismatch with program.pb.xxh3_64 (file damaged or "
                                "altered)");
  std::filesystem::remove(dir.file("program.pb.xxh3_64"));
  EXPECT_EQ(loadError(dir), dir.path() + ": missing program.pb.xxh3_64 (written by every shardc "
                                         "that checksums program.pb): recompile the bundle");
}

// The checksum file is 16 lowercase hex digits of XXH3-64 (seed 0) and a newline: what
// Python's xxhash.xxh3_64_hexdigest prints for the same bytes.
TEST(Bundle, ProgramChecksumText) {
  EXPECT_EQ(programChecksumText("", 0), "2d06800538d394c2\n");
  EXPECT_EQ(programChecksumText("shardc", 6), "1776926e0ea7742c\n");
}

// A bundle of a shardc before format version 3 (FNV-1a checksums, program.pb.fnv1a64) is
// refused in one line that names its checksum file, whatever its program.pb holds.
TEST(Bundle, OlderFormatIsRefusedNamingTheFile) {
  TempDir dir;
  writeBundle(dir, validBundle(), kWeights, /*fixChecksum=*/true);
  std::filesystem::rename(dir.file("program.pb.xxh3_64"), dir.file("program.pb.fnv1a64"));
  EXPECT_EQ(loadError(dir), dir.file("program.pb.fnv1a64") +
                                ": a bundle of an older shardc (format version 2 or earlier, "
                                "FNV-1a checksums); this runtime reads format version 3: "
                                "recompile the model");
}

TEST(Bundle, GarbageOrEmptyProgram) {
  TempDir dir;
  testing::writeProgramFile(dir, "\xff\xff\xff\xff garbage");
  EXPECT_EQ(loadError(dir), dir.file("program.pb") + ": truncated or not a shardc program");
  testing::writeProgramFile(dir, "");
  EXPECT_EQ(loadError(dir), dir.file("program.pb") + ": truncated or not a shardc program");
}

TEST(Bundle, InvalidUtf8IsOneErrorWithoutProtobufLogs) {
  TempDir dir;
  // format_version = 3, then field 2 (mode, a proto3 string) holding the bytes ff fe.
  testing::writeProgramFile(dir, std::string("\x08\x03\x12\x02\xff\xfe", 6));
  ::testing::internal::CaptureStderr();
  std::string message = loadError(dir);
  std::string logged = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(message, dir.file("program.pb") + ": truncated or not a shardc program");
  EXPECT_EQ(logged, "");
}

TEST(Bundle, TruncatedProgramNeverLoads) {
  std::string full = validBundle().SerializeAsString();
  for (size_t cut = 0; cut < full.size(); ++cut) {
    TempDir dir;
    testing::writeProgramFile(dir, full.substr(0, cut));
    testing::writeBytes(dir.file("weights.bin"), kWeights);
    LoadedBundle loaded;
    EXPECT_FALSE(loadBundle(dir.path(), &loaded).isOk()) << "cut at " << cut;
  }
}

// Whatever a damaged program.pb holds, it is either rejected with a one-line message or
// yields programs the executor runs (or refuses) without crashing. In memory: the same checks
// as loadBundle minus file I/O, so that many mutations run quickly.
TEST(Bundle, MutatedProgramsNeverCrash) {
  const std::string valid = validBundle().SerializeAsString();
  auto weights = std::make_shared<AlignedBuffer>();
  ASSERT_TRUE(AlignedBuffer::allocate(kWeights.size(), "weights", weights.get()).isOk());
  int accepted = 0;
  testing::forEachMutatedBundle(valid, 4242, 20000, [&](const program::Bundle &bundle) {
    std::unique_ptr<Executor> executor;
    if (!Executor::create(bundle.programs(0), weights, &executor).isOk())
      return;
    ++accepted;
    // Feed each graph input a zero tensor of exactly the bound dtype and shape.
    std::map<std::string, HostTensor> inputs, outputs;
    for (const program::Binding &binding : bundle.programs(0).inputs()) {
      const program::Buffer &buffer = bundle.programs(0).buffers(binding.buffer());
      inputs[binding.name()] = makeHostTensor(
          buffer.dtype(), std::vector<int64_t>(buffer.shape().begin(), buffer.shape().end()));
    }
    Status status = executor->run(inputs, &outputs);
    if (!status.isOk()) {
      EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
    }
  });
  // Mutations of names, attributes or the checksum leave a valid program.
  EXPECT_GT(accepted, 0);
}

TEST(Bundle, FormatVersionAndMode) {
  EXPECT_EQ(errorAfter([](auto &b) { b.set_format_version(4); }),
            "B/program.pb: format version 4 is not supported (this runtime reads version 3); "
            "recompile the model");
  // Versions 1 and 2 checksummed with FNV-1a: a program.pb of theirs is refused as well.
  EXPECT_EQ(errorAfter([](auto &b) { b.set_format_version(2); }),
            "B/program.pb: format version 2 is not supported (this runtime reads version 3); "
            "recompile the model");
  EXPECT_EQ(errorAfter([](auto &b) { b.set_mode("infer"); }),
            "B/program.pb: unknown mode 'infer' (expected 'forward' or 'train')");
}

TEST(Bundle, WorldSizeAndRanks) {
  EXPECT_EQ(errorAfter([](auto &b) { b.set_world_size(0); }),
            "B/program.pb: world_size is 0 (must be at least 1)");
  EXPECT_EQ(errorAfter([](auto &b) { b.set_world_size(2); }),
            "B/program.pb: world_size is 2 but the bundle has 1 programs");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).set_rank(3); }),
            "B/program.pb: program 0 has rank 3 (expected 0)");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).set_world_size(4); }),
            "B/program.pb: program 0 has world_size 4 but the bundle has 1");
  // With several ranks, messages say which rank.
  EXPECT_EQ(errorAfter([](auto &b) {
              b.set_world_size(2);
              prog(b).set_world_size(2);
              program::Program *second = b.add_programs();
              *second = b.programs(0);
              second->set_rank(1);
              second->mutable_ops(1)->set_kernel("foo");
            }),
            "B/program.pb: rank 1: op 1 ('MatMul_3'): unknown kernel 'foo'");
}

TEST(Bundle, BufferChecks) {
  EXPECT_EQ(errorAfter([](auto &b) {
              prog(b).mutable_buffers(0)->set_dtype(static_cast<program::DType>(9));
            }),
            "B/program.pb: buffer 0 ('x'): unknown dtype 9");
  EXPECT_EQ(errorAfter(
                [](auto &b) { prog(b).mutable_buffers(0)->set_dtype(program::DTYPE_UNSPECIFIED); }),
            "B/program.pb: buffer 0 ('x'): unknown dtype 0");
  EXPECT_EQ(errorAfter([](auto &b) {
              prog(b).mutable_buffers(0)->set_region(program::REGION_UNSPECIFIED);
            }),
            "B/program.pb: buffer 0 ('x'): unknown region 0");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_buffers(0)->set_shape(1, -3); }),
            "B/program.pb: buffer 0 ('x'): negative dimension -3 in shape [2x-3]");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_buffers(0)->set_shape(1, int64_t{1} << 62); }),
            "B/program.pb: buffer 0 ('x'): shape [2x4611686018427387904] is too large");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_buffers(0)->set_size_bytes(20); }),
            "B/program.pb: buffer 0 ('x'): size_bytes is 20 but f32[2x3] needs 24");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_buffers(3)->set_offset(96); }),
            "B/program.pb: buffer 3 ('y'): offset 96 is not 64-byte aligned");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_buffers(4)->set_offset(192); }),
            "B/program.pb: buffer 4 ('z'): bytes [192, 208) lie outside the ARENA region "
            "(arena_bytes = 192)");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_buffers(4)->set_offset(UINT64_MAX - 63); }),
            "B/program.pb: buffer 4 ('z'): offset 18446744073709551552 lies outside the "
            "ARENA region (arena_bytes = 192)");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).set_weights_bytes(80); }),
            "B/program.pb: buffer 2 ('w'): bytes [64, 88) lie outside the WEIGHTS region "
            "(weights_bytes = 80)");
}

TEST(Bundle, OpChecks) {
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_ops(1)->set_kernel("foo"); }),
            "B/program.pb: op 1 ('MatMul_3'): unknown kernel 'foo'");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_ops(1)->set_inputs(1, 5); }),
            "B/program.pb: op 1 ('MatMul_3'): input 1 is buffer 5, but the program has 5 "
            "buffers");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_ops(1)->set_inputs(0, -2); }),
            "B/program.pb: op 1 ('MatMul_3'): input 0 is buffer -2, but the program has 5 "
            "buffers");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_ops(0)->set_outputs(0, -1); }),
            "B/program.pb: op 0 ('Add_0'): output 0 is -1, but only inputs may be absent");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_ops(0)->set_outputs(0, 7); }),
            "B/program.pb: op 0 ('Add_0'): output 0 is buffer 7, but the program has 5 buffers");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_ops(0)->set_outputs(0, 1); }),
            "B/program.pb: op 0 ('Add_0'): output 0 (buffer 1 ('b')) is in the read-only "
            "WEIGHTS region");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_ops(0)->set_outputs(0, 0); }),
            "B/program.pb: op 0 ('Add_0'): output 0 (buffer 0 ('x')) overlaps input 0 "
            "(buffer 0 ('x'))");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_buffers(3)->set_offset(0); }),
            "B/program.pb: op 0 ('Add_0'): output 0 (buffer 3 ('y')) overlaps input 0 "
            "(buffer 0 ('x'))");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_ops(1)->add_outputs(4); }),
            "B/program.pb: op 1 ('MatMul_3'): output 1 (buffer 4 ('z')) overlaps output 0 "
            "(buffer 4 ('z'))");
}

TEST(Bundle, BindingChecks) {
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_inputs(0)->set_buffer(9); }),
            "B/program.pb: input binding 'x': buffer 9 out of range (the program has 5 "
            "buffers)");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_outputs(0)->set_buffer(-1); }),
            "B/program.pb: output binding 'z': buffer -1 out of range (the program has 5 "
            "buffers)");
  EXPECT_EQ(errorAfter([](auto &b) { *prog(b).add_outputs() = prog(b).outputs(0); }),
            "B/program.pb: duplicate output binding 'z'");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_inputs(0)->set_name(""); }),
            "B/program.pb: input binding with an empty name");
  EXPECT_EQ(errorAfter([](auto &b) { prog(b).mutable_inputs(0)->set_buffer(1); }),
            "B/program.pb: input binding 'x': buffer 1 ('b') is not in the ARENA region");
}

TEST(Bundle, WeightsChecks) {
  EXPECT_EQ(errorAfter([](auto &b) { b.set_weights_file(""); }),
            "B: compiled without weights (planning only); recompile with the model's weights "
            "to run it");
  EXPECT_EQ(errorAfter([](auto &b) { b.set_weights_file("../weights.bin"); }),
            "B/program.pb: weights_file '../weights.bin' is not a file name inside the bundle");
  // A control character would split the messages that name the file's path (found by
  // program_load_fuzz): refused, escaped, in one line.
  EXPECT_EQ(errorAfter([](auto &b) { b.set_weights_file("wei\ns.bin"); }),
            "B/program.pb: weights_file 'wei\\ns.bin' is not a file name inside the bundle");

  {
    TempDir dir;
    writeBundle(dir, validBundle(), kWeights);
    std::filesystem::remove(dir.file("weights.bin"));
    EXPECT_EQ(loadError(dir), dir.file("weights.bin") + ": cannot open: No such file or directory");
  }
  {
    TempDir dir;
    program::Bundle bundle = validBundle();
    bundle.set_weights_checksum(XXH3_64bits(kWeights.data(), kWeights.size()));
    std::string damaged = kWeights;
    damaged[17] ^= 0x10;
    writeBundle(dir, bundle, damaged, /*fixChecksum=*/false);
    EXPECT_EQ(loadError(dir), dir.file("weights.bin") + ": checksum mismatch (file damaged)");
  }
  {
    // A consistent checksum but a file shorter than the program's weights region.
    TempDir dir;
    writeBundle(dir, validBundle(), std::string(100, '\x01'));
    EXPECT_EQ(loadError(dir), dir.file("program.pb") + ": weights_bytes is 128 but " +
                                  dir.file("weights.bin") + " has 100 bytes");
  }
}

// The initial values of trained parameters follow the WEIGHTS region in the weights file: the
// loader keeps only the region, checksums the whole file and checks every init lies inside it;
// readInitialValue reads an init from the file. (A state_init on x, the one input, stands in
// for a trained parameter: 24 bytes from offset 128, right after the region.)
TEST(Bundle, InitialValuesAfterTheRegion) {
  std::string file = kWeights;
  std::string initial(24, '\0');
  for (size_t i = 0; i < initial.size(); ++i)
    initial[i] = static_cast<char>(i + 1);
  file += initial;
  program::Bundle bundle = validBundle();
  program::StateInit *init = prog(bundle).add_state_init();
  init->set_name("x");
  init->set_offset(128);
  init->set_size_bytes(24);
  {
    TempDir dir;
    writeBundle(dir, bundle, file);
    LoadedBundle loaded;
    Status status = loadBundle(dir.path(), &loaded);
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(loaded.weights->size(), 128u); // the region only
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(loaded.weights->data()), 128), kWeights);
    std::string read(24, '\0');
    ASSERT_TRUE(readInitialValue(loaded, *init, reinterpret_cast<uint8_t *>(&read[0])).isOk());
    EXPECT_EQ(read, initial);
  }
  {
    // The checksum covers the initial values too.
    TempDir dir;
    program::Bundle checked = bundle;
    checked.set_weights_checksum(XXH3_64bits(file.data(), file.size()));
    std::string damaged = file;
    damaged[140] ^= 0x10;
    writeBundle(dir, checked, damaged, /*fixChecksum=*/false);
    EXPECT_EQ(loadError(dir), dir.file("weights.bin") + ": checksum mismatch (file damaged)");
  }
  {
    // A file that ends inside an initial value.
    TempDir dir;
    writeBundle(dir, bundle, file.substr(0, 140));
    EXPECT_EQ(loadError(dir), dir.file("program.pb") +
                                  ": the initial value of 'x', bytes [128, 152), lies past the "
                                  "end of " +
                                  dir.file("weights.bin") + " (140 bytes)");
  }
}

// block_offsets belong to the shared programs of a placed bundle, where placing a rank checks
// the sharding they refer to. A bundle of one program per rank that had them was accepted, and
// the loader, checking the initial values against the weights file, cut a block along a dim
// its sharding's shape does not have: a read and write out of bounds (here a null pointer
// dereference, the shape being empty).
TEST(Bundle, BlockOffsetsOnlyInPlacedBundles) {
  EXPECT_EQ(errorAfter([](auto &b) {
              program::Sharding *s = prog(b).mutable_inputs(0)->mutable_sharding();
              s->set_num_blocks(2);
              s->set_block_dim(7);
              program::StateInit *init = prog(b).add_state_init();
              init->set_name("x");
              init->set_size_bytes(24);
              init->add_block_offsets(0);
              init->add_block_offsets(64);
            }),
            "B/program.pb: state_init 0 ('x'): block_offsets in the program of a rank (only the "
            "shared programs of a placed bundle have them)");
}

TEST(Bundle, ReadProgramOnlyChecksIdentity) {
  // readBundleProgram accepts a training bundle with kernels the runtime lacks, so a caller can
  // decide by mode before full validation.
  TempDir dir;
  program::Bundle bundle = validBundle();
  bundle.set_mode("train");
  prog(bundle).mutable_ops(0)->set_kernel("adam_update");
  writeBundle(dir, bundle, kWeights);
  LoadedBundle loaded;
  ASSERT_TRUE(readBundleProgram(dir.path(), &loaded).isOk());
  EXPECT_EQ(loaded.bundle.mode(), "train");
  EXPECT_THAT(validateBundleAndLoadWeights(&loaded).message(),
              StartsWith(dir.file("program.pb") + ": op 0 ('Add_0'): unknown kernel"));
}

TEST(Bundle, JoinPath) {
  EXPECT_EQ(joinPath("OUT.shard", "program.pb"), "OUT.shard/program.pb");
  EXPECT_EQ(joinPath("OUT.shard/", "program.pb"), "OUT.shard/program.pb");
}

} // namespace
} // namespace shardc::runtime
