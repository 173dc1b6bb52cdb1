// The cost model's formulas against values worked out by hand (compiler/lib/Cost), and the
// cluster descriptions: presets, files, and their one-line errors.
#include "shardc/Cost/Cluster.h"
#include "shardc/Cost/CostFormulas.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

namespace shardc::cost {
namespace {

Cluster a100() {
  Cluster c;
  std::string error;
  EXPECT_TRUE(loadCluster("a100-80g-8x", c, error)) << error;
  return c;
}

// 4096^3 in bf16 on an A100: efficiency 0.8 (4096/4160)^3 = 0.76364, so 2 * 4096^3 FLOPs take
// 1.37439e11 / (312e12 * 0.76364) = 576.85 us, plus a 4 us launch.
TEST(CostFormulas, AGemmIsItsFlopsAtThePeakTimesItsEfficiency) {
  const DeviceSpec &d = a100().device;
  const double eff = 0.8 * std::pow(4096.0 / 4160.0, 3);
  EXPECT_NEAR(gemmEfficiency(d, 4096, 4096, 4096), eff, 1e-12);
  EXPECT_NEAR(eff, 0.76364, 1e-5);
  const double seconds = gemmSeconds(d, MatmulPrecision::Bf16, 4096, 4096, 4096);
  EXPECT_NEAR(seconds, 576.85e-6 + 4e-6, 0.01e-6);
  // fp32 runs at 19.5 TFLOP/s: 16x longer for the arithmetic.
  EXPECT_NEAR(gemmSeconds(d, MatmulPrecision::F32, 4096, 4096, 4096) - 4e-6,
              (seconds - 4e-6) * 312.0 / 19.5, 1e-9);
  // A thin product: one dimension of 64 halves the rate on top.
  EXPECT_NEAR(gemmEfficiency(d, 64, 4096, 4096), 0.8 * 0.5 * std::pow(4096.0 / 4160.0, 2),
              1e-12);
  EXPECT_EQ(gemmSeconds(d, MatmulPrecision::Bf16, 0, 4096, 4096), 0.0);
}

// 1 GiB summed over 8 GPUs of one DGX A100 node: the ring sends 2 * 7/8 GiB at 300 GB/s in 14
// steps of 5 us: 6.2634 ms + 70 us.
TEST(CostFormulas, ARingAllReduceIsAlphaBeta) {
  const Cluster c = a100();
  const double bytes = 1024.0 * 1024 * 1024;
  const double expected = 2 * 7.0 / 8 * bytes / 300e9 + 14 * 5e-6;
  EXPECT_NEAR(expected, 6.3334e-3, 1e-7);
  EXPECT_NEAR(ringSeconds(c.intraNode, CollectiveKind::AllReduce, bytes, 8), expected, 1e-12);
  EXPECT_NEAR(collectiveSeconds(c, CollectiveKind::AllReduce, bytes, 8, 1), expected, 1e-12);
  EXPECT_NEAR(ringSeconds(c.intraNode, CollectiveKind::ReduceScatter, bytes, 8), expected / 2,
              1e-12);
  EXPECT_EQ(ringSeconds(c.intraNode, CollectiveKind::AllReduce, bytes, 1), 0.0);
}

// 64 GPUs on 8 nodes: a flat ring over InfiniBand sends 2 * 63/64 GiB at 25 GB/s (84.6 ms); the
// hierarchical one reduce-scatters inside nodes (7/8 GiB at 300 GB/s), all-reduces an eighth
// between nodes (2 * 7/8 * 1/8 GiB at 25 GB/s) and all-gathers inside: 2 * 3.167 ms + 9.535 ms
// = 15.87 ms, chosen.
TEST(CostFormulas, ACollectiveAcrossNodesGoesHierarchicallyWhenThatIsFaster) {
  const Cluster c = a100();
  const double bytes = 1024.0 * 1024 * 1024;
  const double flat = 2 * 63.0 / 64 * bytes / 25e9 + 126 * 1e-5;
  const double inside = 7.0 / 8 * bytes / 300e9 + 7 * 5e-6;
  const double between = 2 * 7.0 / 8 * (bytes / 8) / 25e9 + 14 * 1e-5;
  const double hierarchical = 2 * inside + between;
  EXPECT_NEAR(hierarchical, 15.87e-3, 0.01e-3);
  EXPECT_LT(hierarchical, flat);
  EXPECT_NEAR(collectiveSeconds(c, CollectiveKind::AllReduce, bytes, 64, 8), hierarchical,
              1e-12);
  // One rank per node: nothing to do inside, the flat ring.
  EXPECT_NEAR(collectiveSeconds(c, CollectiveKind::AllReduce, bytes, 8, 8),
              2 * 7.0 / 8 * bytes / 25e9 + 14 * 1e-5, 1e-12);
  EXPECT_NEAR(transferSeconds(c, 1e6, true), 1e-5 + 1e6 / 25e9, 1e-15);
  EXPECT_NEAR(transferSeconds(c, 1e6, false), 5e-6 + 1e6 / 300e9, 1e-15);
}

// 4 stages of F = 1, B = 2 per microbatch: 1F1B idles (p-1)(F+B) = 9, interleaved with 2
// chunks 4.5, ZB-H1 (B and W of 1 each) (p-1)F = 3, a third of 1F1B's.
TEST(CostFormulas, APipelineBubbleIsPMinusOneStageSteps) {
  EXPECT_DOUBLE_EQ(pipelineBubbleSeconds(4, 1, 1, 2), 9.0);
  EXPECT_DOUBLE_EQ(pipelineBubbleSeconds(4, 2, 1, 2), 4.5);
  EXPECT_DOUBLE_EQ(pipelineBubbleSeconds(4, 1, 1, 2, true), 3.0);
  EXPECT_DOUBLE_EQ(pipelineBubbleSeconds(1, 1, 1, 2), 0.0);
  // With m = 8 microbatches 1F1B's step is m(F+B) + bubble: idle share 9 / 33 = (p-1)/(m+p-1).
  EXPECT_NEAR(9.0 / (8 * 3 + 9.0), 3.0 / 11, 1e-15);
}

TEST(Cluster, PresetsCarryTheirDataSheets) {
  Cluster c;
  std::string error;
  ASSERT_TRUE(loadCluster("h100-80g-8x", c, error)) << error;
  EXPECT_EQ(c.devicesPerNode, 8);
  EXPECT_EQ(c.device.peakFlopsBf16, 989e12);
  EXPECT_EQ(c.device.memoryBandwidth, 3.35e12);
  ASSERT_TRUE(loadCluster("h200-141g-8x", c, error)) << error;
  EXPECT_EQ(c.device.memoryBytes, 141000000000u);
  EXPECT_TRUE(c.withinOneNode({8, 9, 15}));
  EXPECT_FALSE(c.withinOneNode({7, 8}));
  EXPECT_EQ(clusterSummary(a100()),
            "a100-80g-8x: 8 x A100-SXM4-80GB per node (80.0 GiB, 312.0 TFLOP/s bf16, 19.5 "
            "TFLOP/s fp32, 2039 GB/s), within a node 300.0 GB/s, between nodes 25.0 GB/s per "
            "device");
}

TEST(Cluster, AFileRoundTripsAndBadOnesSayWhichField) {
  const Cluster c = a100();
  Cluster back;
  std::string error;
  ASSERT_TRUE(parseCluster(clusterToJson(c), "c.json", back, error)) << error;
  EXPECT_EQ(clusterToJson(back), clusterToJson(c));

  EXPECT_FALSE(parseCluster("{", "bad.json", back, error));
  EXPECT_EQ(error.rfind("bad.json: not valid JSON", 0), 0u) << error;
  EXPECT_FALSE(parseCluster("[]", "bad.json", back, error));
  EXPECT_EQ(error, "bad.json: a cluster must be a JSON object");
  std::string text = clusterToJson(c);
  std::string noBandwidth = text;
  noBandwidth.replace(noBandwidth.find("\"memory_bandwidth\""), 18, "\"memory_bandwidthX\"");
  EXPECT_FALSE(parseCluster(noBandwidth, "c.json", back, error));
  EXPECT_EQ(error, "c.json: device: missing \"memory_bandwidth\"");
  std::string negative = text;
  negative.replace(negative.find("\"devices_per_node\": 8"), 21, "\"devices_per_node\": -8");
  EXPECT_FALSE(parseCluster(negative, "c.json", back, error));
  EXPECT_EQ(error, "c.json: \"devices_per_node\" must be positive, got -8");

  EXPECT_FALSE(loadCluster("no-such-cluster", back, error));
  EXPECT_EQ(error, "--cluster no-such-cluster: neither a preset (a100-80g-8x, h100-80g-8x, "
                   "h200-141g-8x, cpu) nor a readable file");
  Cluster fixed = c;
  fixed.nodes = 2;
  EXPECT_TRUE(clusterHolds(fixed, 16, error));
  EXPECT_FALSE(clusterHolds(fixed, 17, error));
  EXPECT_EQ(error, "--gpus 17: the cluster a100-80g-8x has 2 nodes of 8 devices");
}

TEST(Cluster, CpuNeedsACalibration) {
  const std::string dir = ::testing::TempDir() + "shardc_cluster_test";
  std::remove((dir + "/cpu.json").c_str());
  setenv("SHARDC_CLUSTER_DIR", dir.c_str(), 1);
  Cluster c;
  std::string error;
  EXPECT_FALSE(loadCluster("cpu", c, error));
  EXPECT_EQ(error, "--cluster cpu: this machine is not calibrated (no " + dir +
                       "/cpu.json); run 'shardc calibrate' first");
  unsetenv("SHARDC_CLUSTER_DIR");
}

} // namespace
} // namespace shardc::cost
