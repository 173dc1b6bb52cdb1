// Helpers shared by the runtime unit tests.
#pragma once

#include "runtime/executor/host_tensor.h"
#include "runtime/program/program.pb.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace shardc::runtime::testing {

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return path_; }
  // path()/name
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

// Writes bytes to a file, failing the current test on error.
void writeBytes(const std::string &path, const std::string &bytes);
std::string readBytes(const std::string &path);

// Damages `valid` (a serialized Bundle) `iterations` times with 1 to 3 random bytes (a fixed
// `seed`), parses and validates each damaged image as loadBundle does minus file I/O, checks
// that a rejection is one line, and calls `accepted` with each bundle that passes. Returns how
// many passed.
int forEachMutatedBundle(const std::string &valid, uint32_t seed, int iterations,
                         const std::function<void(const program::Bundle &)> &accepted);

// Appends a buffer to `program` and returns its index.
int addBuffer(program::Program *program, const std::string &name, program::DType dtype,
              std::vector<int64_t> shape, program::BufferKind kind, program::Region region,
              uint64_t offset);

// Lays rank `program->rank()` of 4 out on a dp x tp = 2 x 2 mesh (rank = dp * 2 + tp) with the
// groups "tp" (group 0: the ranks sharing its dp index) and "dp" (group 1: those sharing its tp
// index).
void addMesh2x2(program::Program *program);

// Appends an op and returns its index.
int addOp(program::Program *program, const std::string &kernel, const std::string &name,
          std::vector<int> inputs, std::vector<int> outputs);

// A one-rank forward bundle computing z = (x + b) @ w: graph input x f32[2x3] in the arena,
// parameters b f32[2x3] and w f32[3x2] at weights offsets 0 and 64, graph output z f32[2x2].
program::Bundle addMatmulBundle();
// Its 128-byte weights file: addMatmulBias() at offset 0, addMatmulWeight() at offset 64.
std::string addMatmulWeights();
std::vector<float> addMatmulBias();   // b: [2, 3]
std::vector<float> addMatmulWeight(); // w: [3, 2]
// z = (x + b) @ w computed directly.
std::vector<float> expectedAddMatmul(const std::vector<float> &x);

// Writes program.pb and the weights file into `dir`; unless told otherwise the bundle's
// checksum is set to match `weights`.
// DIR/program.pb holding `bytes`, with the checksum file that matches it.
void writeProgramFile(const TempDir &dir, const std::string &bytes);
void writeBundle(const TempDir &dir, program::Bundle bundle, const std::string &weights,
                 bool fixChecksum = true);

// A tensor of `dtype` and `shape` holding `values` (whose byte size must match).
template <typename T>
HostTensor makeTensor(DType dtype, std::vector<int64_t> shape, const std::vector<T> &values) {
  HostTensor t = makeHostTensor(dtype, std::move(shape));
  EXPECT_EQ(t.bytes.size(), values.size() * sizeof(T));
  if (!values.empty())
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

} // namespace shardc::runtime::testing
