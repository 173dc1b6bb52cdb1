// shardrun --export-onnx on a bundle of several ranks: the ranks' shards of each trained
// parameter are gathered, so the exported model is byte for byte the one a single rank exports.
// (In the ONNX export's test binary: it needs libonnx's messages to write source.onnx.)
#include "runtime/data/npy.h"
#include "tests/unit/runtime/data_parallel_program.h"
#include "tests/unit/runtime/shardrun_runner.h"
#include "tests/unit/runtime/test_util.h"

#include "onnx/onnx_pb.h"

#include <gtest/gtest.h>

#include <string>
#include <xxhash.h>

namespace shardc::runtime {
namespace {

using testing::TempDir;

// The template shardc would write for the linear model: y = x * w, "w" f32[5] without values.
std::string linearSourceModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("linear");
  onnx::NodeProto *node = graph->add_node();
  node->set_op_type("Mul");
  node->add_input("x");
  node->add_input("w");
  node->add_output("y");
  onnx::TensorProto *w = graph->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(testing::kLinearFeatures);
  return model.SerializeAsString();
}

void writeLinearBundle(const TempDir &dir, int world) {
  program::Bundle bundle = testing::linearSgdBundle(world);
  const std::string source = linearSourceModel();
  testing::writeBytes(dir.file("source.onnx"), source);
  bundle.set_source_onnx_file("source.onnx");
  bundle.set_source_onnx_checksum(XXH3_64bits(source.data(), source.size()));
  testing::writeBundle(dir, bundle, testing::linearSgdWeights());
}

TEST(OnnxExportRanks, SeveralRanksExportWhatOneRankExports) {
  TempDir data, out, scratch;
  ASSERT_TRUE(writeNpy(data.file("x.npy"), testing::linearData(12)).isOk());
  for (int world : {1, 2, 3}) {
    TempDir bundle;
    writeLinearBundle(bundle, world);
    const std::string name = std::to_string(world);
    testing::RunResult r = testing::runShardrun(
        scratch, {bundle.path(), "--steps", "3", "--lr", "0.5", "--data", data.path(),
                  "--export-onnx", out.file(name + ".onnx"), "--outputs", out.file(name)});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  const std::string exported = testing::readBytes(out.file("1.onnx"));
  EXPECT_EQ(testing::readBytes(out.file("2.onnx")), exported);
  EXPECT_EQ(testing::readBytes(out.file("3.onnx")), exported);

  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(exported));
  HostTensor w;
  ASSERT_TRUE(readNpy(out.file("1/w.npy"), &w).isOk());
  ASSERT_EQ(model.graph().initializer_size(), 1);
  EXPECT_EQ(model.graph().initializer(0).raw_data(), std::string(w.bytes.begin(), w.bytes.end()));
}

} // namespace
} // namespace shardc::runtime
