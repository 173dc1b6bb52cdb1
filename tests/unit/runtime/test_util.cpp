#include "tests/unit/runtime/test_util.h"

#include "runtime/kernels/kernel.h"
#include "runtime/loader/bundle.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <random>
#include <system_error>
#include <xxhash.h>

namespace shardc::runtime::testing {

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "shardc-runtime-test-XXXXXX").string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed for " << pattern;
    return;
  }
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty())
    std::filesystem::remove_all(path_, ec);
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void addMesh2x2(program::Program *p) {
  for (const char *name : {"dp", "tp"}) {
    program::MeshAxis *axis = p->add_mesh_axes();
    axis->set_name(name);
    axis->set_size(2);
  }
  const int dp = p->rank() / 2, tp = p->rank() % 2;
  p->add_mesh_coordinate(dp);
  p->add_mesh_coordinate(tp);
  program::CommGroup *tpGroup = p->add_groups();
  tpGroup->set_name("tp");
  tpGroup->add_mesh_axes(1);
  tpGroup->add_ranks(dp * 2);
  tpGroup->add_ranks(dp * 2 + 1);
  program::CommGroup *dpGroup = p->add_groups();
  dpGroup->set_name("dp");
  dpGroup->add_mesh_axes(0);
  dpGroup->add_ranks(tp);
  dpGroup->add_ranks(tp + 2);
}

int forEachMutatedBundle(const std::string &valid, uint32_t seed, int iterations,
                         const std::function<void(const program::Bundle &)> &accepted) {
  std::mt19937 rng(seed);
  int passed = 0;
  for (int iter = 0; iter < iterations; ++iter) {
    std::string bytes = valid;
    int mutations = 1 + static_cast<int>(rng() % 3);
    for (int m = 0; m < mutations; ++m)
      bytes[rng() % bytes.size()] = static_cast<char>(rng() % 256);
    program::Bundle bundle;
    Status status = parseBundleProgram(bytes.data(), bytes.size(), "B/program.pb", &bundle);
    if (status.isOk())
      status = validateBundlePrograms(bundle, "B/program.pb");
    if (!status.isOk()) {
      EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
      continue;
    }
    ++passed;
    accepted(bundle);
  }
  return passed;
}

int addBuffer(program::Program *program, const std::string &name, program::DType dtype,
              std::vector<int64_t> shape, program::BufferKind kind, program::Region region,
              uint64_t offset) {
  program::Buffer *buffer = program->add_buffers();
  buffer->set_name(name);
  buffer->set_dtype(dtype);
  int64_t numel = 1;
  for (int64_t d : shape) {
    buffer->add_shape(d);
    numel *= d;
  }
  buffer->set_kind(kind);
  buffer->set_region(region);
  buffer->set_offset(offset);
  buffer->set_size_bytes(static_cast<uint64_t>(numel) * dtypeSize(dtype));
  return program->buffers_size() - 1;
}

int addOp(program::Program *program, const std::string &kernel, const std::string &name,
          std::vector<int> inputs, std::vector<int> outputs) {
  program::Op *op = program->add_ops();
  op->set_kernel(kernel);
  op->set_name(name);
  for (int i : inputs)
    op->add_inputs(i);
  for (int o : outputs)
    op->add_outputs(o);
  return program->ops_size() - 1;
}

std::vector<float> addMatmulBias() { return {0.5f, -1.0f, 2.0f, 0.0f, 1.5f, -0.25f}; }
std::vector<float> addMatmulWeight() { return {1.0f, 2.0f, -1.0f, 0.5f, 3.0f, -2.0f}; }

program::Bundle addMatmulBundle() {
  program::Bundle bundle;
  bundle.set_format_version(kBundleFormatVersion);
  bundle.set_mode("forward");
  bundle.set_source_model("model.onnx");
  bundle.set_world_size(1);
  bundle.set_weights_file("weights.bin");
  program::Program *p = bundle.add_programs();
  p->set_rank(0);
  p->set_world_size(1);
  int x = addBuffer(p, "x", program::F32, {2, 3}, program::INPUT, program::ARENA, 0);
  int b = addBuffer(p, "b", program::F32, {2, 3}, program::PARAMETER, program::WEIGHTS, 0);
  int w = addBuffer(p, "w", program::F32, {3, 2}, program::PARAMETER, program::WEIGHTS, 64);
  int y = addBuffer(p, "y", program::F32, {2, 3}, program::ACTIVATION, program::ARENA, 64);
  int z = addBuffer(p, "z", program::F32, {2, 2}, program::ACTIVATION, program::ARENA, 128);
  addOp(p, "add", "Add_0", {x, b}, {y});
  addOp(p, "matmul", "MatMul_3", {y, w}, {z});
  program::Binding *in = p->add_inputs();
  in->set_name("x");
  in->set_buffer(x);
  program::Binding *out = p->add_outputs();
  out->set_name("z");
  out->set_buffer(z);
  p->set_arena_bytes(192);
  p->set_weights_bytes(128);
  return bundle;
}

std::string addMatmulWeights() {
  std::string weights(128, '\0');
  std::vector<float> bias = addMatmulBias(), weight = addMatmulWeight();
  std::memcpy(&weights[0], bias.data(), bias.size() * sizeof(float));
  std::memcpy(&weights[64], weight.data(), weight.size() * sizeof(float));
  return weights;
}

std::vector<float> expectedAddMatmul(const std::vector<float> &x) {
  std::vector<float> bias = addMatmulBias(), weight = addMatmulWeight();
  std::vector<float> z(4, 0.0f);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        z[i * 2 + j] += (x[i * 3 + k] + bias[i * 3 + k]) * weight[k * 2 + j];
  return z;
}

void writeProgramFile(const TempDir &dir, const std::string &bytes) {
  writeBytes(dir.file("program.pb"), bytes);
  writeBytes(dir.file(kProgramChecksumFile), programChecksumText(bytes.data(), bytes.size()));
}

void writeBundle(const TempDir &dir, program::Bundle bundle, const std::string &weights,
                 bool fixChecksum) {
  if (fixChecksum)
    bundle.set_weights_checksum(XXH3_64bits(weights.data(), weights.size()));
  writeProgramFile(dir, bundle.SerializeAsString());
  // A weights_file that escapes the bundle is left for the loader to reject.
  if (!bundle.weights_file().empty() && bundle.weights_file().find('/') == std::string::npos)
    writeBytes(dir.file(bundle.weights_file()), weights);
}

} // namespace shardc::runtime::testing
