// The ONNX export of trained models (runtime/export): a source.onnx template and a program
// written here, the exporter run on them, the written model parsed back and compared.
#include "runtime/export/onnx_export.h"
#include "runtime/loader/bundle.h"
#include "runtime/support/file_io.h"
#include "tests/unit/runtime/test_util.h"

#include "onnx/onnx_pb.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <sys/stat.h>
#include <vector>
#include <xxhash.h>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::TempDir;

// The template the compiler would write: initializers "w" f32[2x3] and "b" f32[3] are trained
// (no values), "frozen" f32[2] and "shape" i64[2] keep theirs.
onnx::ModelProto sourceModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("unit-test");
  model.add_opset_import()->set_version(17);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("g");
  onnx::NodeProto *node = graph->add_node();
  node->set_op_type("MatMul");
  node->add_input("x");
  node->add_input("w");
  node->add_output("y");
  auto addInit = [&](const std::string &name, int type, std::vector<int64_t> dims) {
    onnx::TensorProto *t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims)
      t->add_dims(d);
    return t;
  };
  addInit("w", onnx::TensorProto::FLOAT, {2, 3});
  onnx::TensorProto *frozen = addInit("frozen", onnx::TensorProto::FLOAT, {2});
  frozen->add_float_data(0.25f);
  frozen->add_float_data(-4.0f);
  addInit("b", onnx::TensorProto::FLOAT, {3});
  onnx::TensorProto *shape = addInit("shape", onnx::TensorProto::INT64, {2});
  int64_t shapeValues[2] = {3, 2};
  shape->set_raw_data(shapeValues, sizeof shapeValues);
  return model;
}

// A training program whose trained parameters are "w" f32[2x3] and "b" f32[3] (only what the
// exporter reads: state_init, input bindings, buffers).
program::Bundle trainBundle(std::vector<int64_t> wShape = {2, 3}) {
  program::Bundle bundle;
  bundle.set_format_version(kBundleFormatVersion);
  bundle.set_mode("train");
  bundle.set_world_size(1);
  program::Program *p = bundle.add_programs();
  p->set_world_size(1);
  for (auto [name, shape] :
       std::vector<std::pair<std::string, std::vector<int64_t>>>{{"w", wShape}, {"b", {3}}}) {
    int buffer =
        testing::addBuffer(p, name, program::F32, shape, program::INPUT, program::ARENA, 0);
    program::Binding *binding = p->add_inputs();
    binding->set_name(name);
    binding->set_buffer(buffer);
    program::StateInit *init = p->add_state_init();
    init->set_name(name);
  }
  return bundle;
}

// A bundle directory whose source.onnx is `model` (checksum in program.pb set to match).
struct Fixture {
  TempDir dir, out;
  LoadedBundle loaded;
  std::map<std::string, HostTensor> values;

  explicit Fixture(const onnx::ModelProto &model = sourceModel(),
                   program::Bundle bundle = trainBundle()) {
    std::string bytes = model.SerializeAsString();
    testing::writeBytes(dir.file("source.onnx"), bytes);
    bundle.set_source_onnx_file("source.onnx");
    bundle.set_source_onnx_checksum(XXH3_64bits(bytes.data(), bytes.size()));
    loaded.dir = dir.path();
    loaded.bundle = std::move(bundle);
    values["w"] = testing::makeTensor<float>(program::F32, {2, 3}, {1, 2, 3, 4, 5, 6.5f});
    values["b"] = testing::makeTensor<float>(program::F32, {3}, {-1, 0.125f, 7});
  }
  std::function<const HostTensor *(const std::string &)> lookup() const {
    return [this](const std::string &name) -> const HostTensor * {
      auto it = values.find(name);
      return it == values.end() ? nullptr : &it->second;
    };
  }
};

onnx::ModelProto parseModelFile(const std::string &path) {
  onnx::ModelProto model;
  std::string bytes = testing::readBytes(path);
  EXPECT_TRUE(model.ParseFromString(bytes)) << path;
  return model;
}

const onnx::TensorProto &initializer(const onnx::ModelProto &model, const std::string &name) {
  for (const onnx::TensorProto &t : model.graph().initializer())
    if (t.name() == name)
      return t;
  ADD_FAILURE() << "no initializer " << name;
  static onnx::TensorProto none;
  return none;
}

std::string bytesOf(const HostTensor &t) { return std::string(t.bytes.begin(), t.bytes.end()); }

// The model with every initializer's values removed: what must be unchanged by the export.
std::string withoutValues(onnx::ModelProto model) {
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
    t.clear_raw_data();
    t.clear_float_data();
    t.clear_int64_data();
    t.clear_external_data();
    t.clear_data_location();
  }
  return model.SerializeAsString();
}

TEST(OnnxExport, FillsTrainedInitializersAndKeepsEverythingElse) {
  Fixture f;
  std::unique_ptr<OnnxExporter> exporter;
  ASSERT_TRUE(OnnxExporter::open(f.loaded, &exporter).isOk());
  EXPECT_EQ(exporter->parameterNames(), (std::vector<std::string>{"w", "b"}));
  OnnxExportResult result;
  std::string path = f.out.file("trained.onnx");
  Status status = exporter->write(path, f.lookup(), OnnxExportOptions(), &result);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(result.tensors, 2u);
  EXPECT_EQ(result.externalData, "");
  EXPECT_FALSE(pathExists(path + ".data"));

  onnx::ModelProto written = parseModelFile(path);
  for (const char *name : {"w", "b"}) {
    const onnx::TensorProto &t = initializer(written, name);
    EXPECT_EQ(t.raw_data(), bytesOf(f.values[name])) << name;
    EXPECT_EQ(t.float_data_size(), 0) << name;
    EXPECT_EQ(t.data_location(), onnx::TensorProto::DEFAULT) << name;
  }
  onnx::ModelProto source = sourceModel();
  EXPECT_EQ(initializer(written, "frozen").SerializeAsString(),
            initializer(source, "frozen").SerializeAsString());
  EXPECT_EQ(initializer(written, "shape").SerializeAsString(),
            initializer(source, "shape").SerializeAsString());
  EXPECT_EQ(withoutValues(written), withoutValues(source));
}

TEST(OnnxExport, WritesExternalDataAboveTheSizeLimit) {
  Fixture f;
  std::unique_ptr<OnnxExporter> exporter;
  ASSERT_TRUE(OnnxExporter::open(f.loaded, &exporter).isOk());
  OnnxExportOptions options;
  options.maxInlineBytes = 64; // below the template's own size: everything trained goes out
  OnnxExportResult result;
  std::string path = f.out.file("trained.onnx");
  Status status = exporter->write(path, f.lookup(), options, &result);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(result.externalData, path + ".data");

  onnx::ModelProto written = parseModelFile(path);
  std::string data = testing::readBytes(path + ".data");
  for (const char *name : {"w", "b"}) {
    const onnx::TensorProto &t = initializer(written, name);
    EXPECT_FALSE(t.has_raw_data()) << name;
    EXPECT_EQ(t.data_location(), onnx::TensorProto::EXTERNAL) << name;
    std::map<std::string, std::string> entries;
    for (const auto &e : t.external_data())
      entries[e.key()] = e.value();
    EXPECT_EQ(entries["location"], "trained.onnx.data") << name;
    uint64_t offset = std::stoull(entries["offset"]);
    uint64_t length = std::stoull(entries["length"]);
    EXPECT_EQ(offset % 64, 0u) << name;
    ASSERT_LE(offset + length, data.size()) << name;
    EXPECT_EQ(data.substr(offset, length), bytesOf(f.values[name])) << name;
  }
  // Frozen values stay inline.
  EXPECT_EQ(initializer(written, "frozen").float_data_size(), 2);

  // The template is restored: a later inline export has no external-data leftovers.
  std::string again = f.out.file("again.onnx");
  ASSERT_TRUE(exporter->write(again, f.lookup(), OnnxExportOptions(), &result).isOk());
  onnx::ModelProto rewritten = parseModelFile(again);
  const onnx::TensorProto &w = initializer(rewritten, "w");
  EXPECT_EQ(w.external_data_size(), 0);
  EXPECT_EQ(w.raw_data(), bytesOf(f.values["w"]));
}

TEST(OnnxExport, RejectsADamagedSource) {
  Fixture f;
  std::string bytes = testing::readBytes(f.dir.file("source.onnx"));
  testing::writeBytes(f.dir.file("source.onnx"), bytes.substr(0, bytes.size() / 2));
  std::unique_ptr<OnnxExporter> exporter;
  Status status = OnnxExporter::open(f.loaded, &exporter);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(),
            f.dir.file("source.onnx") + ": checksum mismatch (file truncated, damaged or altered)");
}

TEST(OnnxExport, RejectsABundleWithoutSource) {
  Fixture f;
  f.loaded.bundle.clear_source_onnx_file();
  std::unique_ptr<OnnxExporter> exporter;
  Status status = OnnxExporter::open(f.loaded, &exporter);
  ASSERT_FALSE(status.isOk());
  EXPECT_THAT(status.message(), StartsWith(f.dir.path() + ": the bundle has no source.onnx"));

  f.loaded.bundle.set_source_onnx_file("../elsewhere.onnx");
  status = OnnxExporter::open(f.loaded, &exporter);
  EXPECT_THAT(status.message(), HasSubstr("is not a file name inside the bundle"));

  f.loaded.bundle.set_mode("forward");
  status = OnnxExporter::open(f.loaded, &exporter);
  EXPECT_THAT(status.message(), HasSubstr("a forward bundle has no trained parameters"));
}

TEST(OnnxExport, RejectsASourceThatDoesNotMatchTheProgram) {
  {
    Fixture f(sourceModel(), trainBundle({3, 2}));
    std::unique_ptr<OnnxExporter> exporter;
    Status status = OnnxExporter::open(f.loaded, &exporter);
    EXPECT_EQ(status.message(), f.dir.file("source.onnx") +
                                    ": initializer 'w' is FLOAT[2x3] but the trained parameter "
                                    "is f32[3x2]");
  }
  {
    onnx::ModelProto model = sourceModel();
    model.mutable_graph()->mutable_initializer()->RemoveLast(); // "shape"
    model.mutable_graph()->mutable_initializer()->RemoveLast(); // "b"
    Fixture f(model);
    std::unique_ptr<OnnxExporter> exporter;
    Status status = OnnxExporter::open(f.loaded, &exporter);
    EXPECT_THAT(status.message(), HasSubstr("the model has no initializer 'b'"));
  }
}

TEST(OnnxExport, RejectsValuesOfTheWrongShape) {
  Fixture f;
  std::unique_ptr<OnnxExporter> exporter;
  ASSERT_TRUE(OnnxExporter::open(f.loaded, &exporter).isOk());
  f.values["b"] = testing::makeTensor<float>(program::F32, {1, 3}, {1, 2, 3});
  OnnxExportResult result;
  std::string path = f.out.file("trained.onnx");
  Status status = exporter->write(path, f.lookup(), OnnxExportOptions(), &result);
  EXPECT_EQ(status.message(),
            "trained parameter 'b' is f32[1x3], the model's initializer is f32[3]");
  EXPECT_FALSE(pathExists(path));
  f.values.erase("b");
  status = exporter->write(path, f.lookup(), OnnxExportOptions(), &result);
  EXPECT_EQ(status.message(), "no value for trained parameter 'b'");
}

TEST(OnnxExport, ChecksTheDestinationBeforeTraining) {
  TempDir dir;
  EXPECT_TRUE(OnnxExporter::checkDestination(dir.file("trained.onnx")).isOk());
  Status status = OnnxExporter::checkDestination(dir.path());
  EXPECT_EQ(status.message(), dir.path() + ": is a directory, expected a file name");
  status = OnnxExporter::checkDestination(dir.file("missing/trained.onnx"));
  EXPECT_EQ(status.message(), dir.file("missing/trained.onnx") + ": cannot write: directory '" +
                                  dir.file("missing") + "': No such file or directory");
  testing::writeBytes(dir.file("plain"), "x");
  status = OnnxExporter::checkDestination(dir.file("plain/trained.onnx"));
  EXPECT_THAT(status.message(), HasSubstr("is not a directory"));
}

} // namespace
} // namespace shardc::runtime
