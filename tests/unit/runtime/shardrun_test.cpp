// The shardrun command line, end to end: a bundle and .npy inputs written here, the real
// binary run on them, its outputs, error lines and exit codes checked.
#include "runtime/data/npy.h"
#include "runtime/kernels/kernel.h"
#include "tests/unit/runtime/shardrun_runner.h"
#include "tests/unit/runtime/test_util.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;
using testing::RunResult;
using testing::runShardrun;
using testing::TempDir;

HostTensor f32Tensor(std::vector<int64_t> shape, const std::vector<float> &values) {
  HostTensor t = makeHostTensor(program::F32, std::move(shape));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

// A bundle directory B, an input directory D holding x.npy, and a scratch directory.
struct Fixture {
  TempDir bundle, data, outputs, scratch;
  Fixture(program::Bundle b = testing::addMatmulBundle()) {
    testing::writeBundle(bundle, std::move(b), testing::addMatmulWeights());
    EXPECT_TRUE(writeNpy(data.file("x.npy"), f32Tensor({2, 3}, {1, 2, 3, 4, 5, 6})).isOk());
  }
  RunResult run(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {bundle.path(), "--data", data.path(), "--outputs",
                                     outputs.file("out")};
    args.insert(args.end(), extra.begin(), extra.end());
    return runShardrun(scratch, args);
  }
};

TEST(Shardrun, RunsABundleAndWritesOutputs) {
  Fixture f;
  RunResult r = f.run();
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.err, MatchesRegex("shardrun: ran 2 ops in [0-9.]+ ms, wrote 1 output to .*\n"));
  HostTensor z;
  Status status = readNpy(f.outputs.file("out/z.npy"), &z);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(z.describe(), "f32[2x2]");
  std::vector<float> expected = testing::expectedAddMatmul({1, 2, 3, 4, 5, 6});
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(z.as<float>()[i], expected[i], 1e-5f);
}

TEST(Shardrun, TensorNamesMapToFileNames) {
  program::Bundle bundle = testing::addMatmulBundle();
  bundle.mutable_programs(0)->mutable_inputs(0)->set_name("onnx::x");
  bundle.mutable_programs(0)->mutable_outputs(0)->set_name("out/z:0");
  Fixture f(bundle);
  std::rename(f.data.file("x.npy").c_str(), f.data.file("onnx__x.npy").c_str());
  RunResult r = f.run();
  ASSERT_EQ(r.exitCode, 0) << r.err;
  HostTensor z;
  EXPECT_TRUE(readNpy(f.outputs.file("out/out_z_0.npy"), &z).isOk());
}

TEST(Shardrun, HelpAndUsageErrors) {
  TempDir scratch;
  RunResult help = runShardrun(scratch, {"--help"});
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_THAT(help.out, StartsWith("usage: shardrun BUNDLE --data DIR --outputs DIR2"));

  const std::string hint = " (see 'shardrun --help')\n";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{}, "missing BUNDLE (the directory written by shardc)"},
      {{"B", "--frobnicate"}, "unknown flag '--frobnicate'"},
      {{"B", "--data"}, "--data needs a value (a directory)"},
      {{"B", "--data=", "--outputs", "O"},
       "--data needs a value (a directory), got an empty string"},
      {{"B", "--frobnicate=3"}, "unknown flag '--frobnicate'"},
      {{"B", "--outputs", "O", "--outputs", "P"}, "--outputs given more than once"},
      {{"B", "--outputs", "O", "--steps", "0x10"},
       "--steps: expected a positive integer, got '0x10'"},
      {{"B", "--outputs", "O", "--threads", "many"},
       "--threads: expected a positive integer, got 'many'"},
      {{"B", "C", "--outputs", "O"}, "unexpected argument 'C' (only one BUNDLE can be run)"},
      {{"B", "--data", "D"}, "missing --outputs DIR2"},
      {{"B", "--steps", "3", "--data", "D", "--tokens", "T"},
       "give either --data DIR or --tokens FILE.bin, not both"},
      {{"B", "--steps", "3", "--save-every", "2"}, "--save-every needs --save DIR"},
      {{"B", "--steps", "3", "--min-lr", "0.1"}, "--min-lr applies to --schedule cosine"},
      {{"B", "--steps", "3", "--schedule", "linear"},
       "--schedule: expected constant or cosine, got 'linear'"},
      {{"B", "--steps", "3", "--lr", "fast"}, "--lr: expected a non-negative number, got 'fast'"},
      {{"B", "--steps", "3", "--bf16-products", "fast"},
       "--bf16-products: expected auto, native or exact, got 'fast'"},
  };
  for (const Case &c : cases) {
    RunResult r = runShardrun(scratch, c.args);
    EXPECT_EQ(r.exitCode, 2) << c.message;
    EXPECT_EQ(r.err, "shardrun: error: " + c.message + hint);
  }
}

// Native bf16 products run where the CPU has them and are refused, in one line, elsewhere.
TEST(Shardrun, NativeBf16ProductsOnlyWhereTheCpuHasThem) {
  Fixture f;
  RunResult r = f.run({"--bf16-products", "native"});
  if (cpuHasNativeBf16Products()) {
    EXPECT_EQ(r.exitCode, 0) << r.err;
  } else {
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_THAT(r.err, StartsWith("shardrun: error: --bf16-products native: native bf16 "
                                  "products need a CPU with AVX512-BF16 or AMX; oneDNN runs "
                                  "this one as "));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  }
  EXPECT_EQ(f.run({"--bf16-products", "exact"}).exitCode, 0);
}

TEST(Shardrun, MissingInputFile) {
  Fixture f;
  std::remove(f.data.file("x.npy").c_str());
  RunResult r = f.run();
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err, "shardrun: error: " + f.data.path() + ": no 'x.npy' for graph input 'x'\n");
}

TEST(Shardrun, InputOfTheWrongDtype) {
  Fixture f;
  ASSERT_TRUE(writeNpy(f.data.file("x.npy"), makeHostTensor(program::I64, {2, 3})).isOk());
  RunResult r = f.run();
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err, "shardrun: error: " + f.data.file("x.npy") +
                       ": input 'x': expected f32[2x3], got i64[2x3]\n");
}

TEST(Shardrun, TrainingAndPlanningOnlyBundles) {
  program::Bundle train = testing::addMatmulBundle();
  train.set_mode("train");
  Fixture t(train);
  // Without --steps a training bundle runs one step on the inputs it is given.
  RunResult r = t.run();
  EXPECT_EQ(r.exitCode, 0) << r.err;
  // The loop needs a real training step: this one has no trained parameters.
  r = t.run({"--steps", "3"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err, "shardrun: error: " + t.bundle.path() +
                       ": training program has no trained parameters (state_init is empty)\n");
  // Loop flags without --steps are usage errors.
  r = t.run({"--lr", "0.1"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.err, "shardrun: error: --lr applies to the training loop; give --steps K "
                   "(see 'shardrun --help')\n");

  program::Bundle planning = testing::addMatmulBundle();
  planning.set_weights_file("");
  Fixture p(planning);
  r = p.run();
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err, "shardrun: error: " + p.bundle.path() +
                       ": compiled without weights (planning only); recompile with the "
                       "model's weights to run it\n");
}

TEST(Shardrun, OutputsThatWouldShareAFile) {
  program::Bundle bundle = testing::addMatmulBundle();
  program::Program *p = bundle.mutable_programs(0);
  p->mutable_outputs(0)->set_name("a:b");
  program::Binding *twin = p->add_outputs();
  twin->set_name("a_b");
  twin->set_buffer(p->outputs(0).buffer());
  Fixture f(bundle);
  RunResult r = f.run();
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err, "shardrun: error: " + f.bundle.path() +
                       ": graph outputs 'a:b' and 'a_b' both map to the file name 'a_b.npy'\n");
}

TEST(Shardrun, KernelErrorIsOneLine) {
  program::Bundle bundle = testing::addMatmulBundle();
  program::Buffer *z = bundle.mutable_programs(0)->mutable_buffers(4);
  z->set_shape(1, 1);
  z->set_size_bytes(8);
  Fixture f(bundle);
  RunResult r = f.run();
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, StartsWith("shardrun: error: " + f.bundle.path() +
                                ": rank 0, op 'MatMul_3' (kernel matmul): "));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

} // namespace
} // namespace shardc::runtime
