// --strategy auto's choice (shardc/Parallel/AutoStrategy.h) over a fake candidate compiler:
// the order of candidates, what is rejected and why, and the decision it records.
#include "shardc/Parallel/AutoStrategy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace shardc {
namespace {

// Candidates by canonical spelling: a score, or a refusal; meshes refused as a whole.
class FakeCandidates : public CandidateCompiler {
public:
  std::optional<std::string> meshRefusal(const ParallelStrategy &c) override {
    ParallelStrategy mesh = c;
    mesh.zero = 0;
    if (auto it = refusedMeshes.find(mesh.canonical()); it != refusedMeshes.end())
      return it->second;
    return std::nullopt;
  }
  std::optional<PlannedStepCost> score(const ParallelStrategy &c, std::string &refusal) override {
    scored.push_back(c.canonical());
    if (auto it = refusals.find(c.canonical()); it != refusals.end()) {
      refusal = it->second;
      return std::nullopt;
    }
    auto it = costs.find(c.canonical());
    PlannedStepCost cost;
    cost.peakBytes = it == costs.end() ? 1 << 30 : it->second.first;
    cost.commBytes = it == costs.end() ? 0 : it->second.second;
    return cost;
  }
  bool compile(const ParallelStrategy &c, DataParallelBundle &out) override {
    compiled.push_back(c.canonical());
    if (failCompile)
      return false;
    program::Program p;
    auto lowered = loweredPeak.find(c.canonical());
    p.set_planned_peak_bytes(lowered != loweredPeak.end() ? lowered->second
                             : costs.count(c.canonical()) ? costs[c.canonical()].first
                                                          : 1 << 30);
    out.programs = {p};
    return true;
  }

  std::map<std::string, std::pair<uint64_t, uint64_t>> costs; // peak, bytes sent
  std::map<std::string, std::string> refusals;
  std::map<std::string, std::string> refusedMeshes; // at zero=0
  std::map<std::string, uint64_t> loweredPeak;      // else the scored peak
  bool failCompile = false;
  std::vector<std::string> scored, compiled;
};

CompileOptions autoOn(int gpus, uint64_t memory) {
  CompileOptions opts;
  opts.model = "m.onnx";
  opts.gpus = gpus;
  opts.gpuMemoryBytes = memory;
  return opts;
}

const uint64_t MiB = 1024 * 1024;

TEST(AutoStrategy, PlainDataParallelismWhenItFits) {
  FakeCandidates fake;
  fake.costs["dp=4,zero=0"] = {100 * MiB, 1000};
  ParallelStrategy chosen;
  DataParallelBundle out;
  std::vector<std::string> decision;
  ASSERT_TRUE(chooseStrategy(autoOn(4, 0), fake, chosen, out, decision));
  EXPECT_EQ(chosen.canonical(), "dp=4,zero=0");
  EXPECT_EQ(fake.scored, std::vector<std::string>{"dp=4,zero=0"});
  ASSERT_EQ(decision.size(), 2u);
  EXPECT_EQ(decision[0].rfind("auto: candidates on 4 ranks in order of cost: dp, zero1, zero2, "
                              "zero3, then (only if none fits) tensor parallelism",
                              0),
            0u);
  EXPECT_NE(decision[0].find("--gpu-memory unlimited"), std::string::npos);
  EXPECT_EQ(decision[1], "chose dp (dp=4,zero=0): peak 100.00 MiB per rank, sends 1000 bytes "
                         "per rank per step; the cheapest candidate that fits; the higher ZeRO "
                         "stages were not needed (more work per step, and zero3 sends about "
                         "1.5x the bytes)");
  ASSERT_EQ(out.programs.size(), 1u);
}

TEST(AutoStrategy, TheFirstZeroStageThatFits) {
  FakeCandidates fake;
  fake.costs["dp=2,zero=0"] = {300 * MiB, 10};
  fake.costs["dp=2,zero=1"] = {250 * MiB, 10};
  fake.costs["dp=2,zero=2"] = {150 * MiB, 10};
  fake.costs["dp=2,zero=3"] = {100 * MiB, 15};
  ParallelStrategy chosen;
  DataParallelBundle out;
  std::vector<std::string> decision;
  ASSERT_TRUE(chooseStrategy(autoOn(2, 200 * MiB), fake, chosen, out, decision));
  EXPECT_EQ(chosen.canonical(), "dp=2,zero=2");
  EXPECT_EQ(fake.compiled, std::vector<std::string>{"dp=2,zero=2"});
  ASSERT_EQ(decision.size(), 4u);
  EXPECT_EQ(decision[1], "rejected dp: peak 300.00 MiB per rank, sends 10 bytes per rank per "
                         "step; does not fit in 200.00 MiB");
  EXPECT_EQ(decision[2], "rejected zero1: peak 250.00 MiB per rank, sends 10 bytes per rank "
                         "per step; does not fit in 200.00 MiB");
  EXPECT_EQ(decision[3].rfind("chose zero2 (dp=2,zero=2): peak 150.00 MiB", 0), 0u);
}

TEST(AutoStrategy, LoweredPeakIsCheckedAgain) {
  FakeCandidates fake;
  fake.costs["dp=2,zero=0"] = {150 * MiB, 10};
  fake.loweredPeak["dp=2,zero=0"] = 250 * MiB;
  fake.costs["dp=2,zero=1"] = {120 * MiB, 10};
  ParallelStrategy chosen;
  DataParallelBundle out;
  std::vector<std::string> decision;
  ASSERT_TRUE(chooseStrategy(autoOn(2, 200 * MiB), fake, chosen, out, decision));
  EXPECT_EQ(chosen.canonical(), "dp=2,zero=1");
  EXPECT_EQ(fake.compiled, (std::vector<std::string>{"dp=2,zero=0", "dp=2,zero=1"}));
  EXPECT_EQ(decision[1], "rejected dp: its lowered programs' peak is 250.00 MiB per rank "
                         "(scored 150.00 MiB); does not fit in 200.00 MiB");
}

TEST(AutoStrategy, TensorParallelismFewestBytesWhenNoDataParallelFits) {
  FakeCandidates fake;
  for (int stage = 0; stage <= 3; ++stage)
    fake.costs["dp=4,zero=" + std::to_string(stage)] = {900 * MiB, 10};
  // tp=2 (dp=2): sp and ZeRO variants; two fit, the second sends fewer bytes.
  fake.costs["dp=2,tp=2,zero=0"] = {150 * MiB, 500};
  fake.costs["dp=2,tp=2,zero=1"] = {600 * MiB, 100};
  fake.costs["dp=2,tp=2,sp=1,zero=0"] = {190 * MiB, 300};
  ParallelStrategy chosen;
  DataParallelBundle out;
  std::vector<std::string> decision;
  ASSERT_TRUE(chooseStrategy(autoOn(4, 200 * MiB), fake, chosen, out, decision));
  EXPECT_EQ(chosen.canonical(), "dp=2,tp=2,sp=1,zero=0");
  EXPECT_TRUE(chosen.sequenceParallel);
  // Every tp=2 candidate is scored (4 stages x with and without sp), none of tp=4.
  EXPECT_EQ(fake.scored.size(), 4u + 8u);
  EXPECT_EQ(decision.back(), "passed over dp=2,tp=2,zero=0: peak 150.00 MiB per rank, sends "
                             "500 bytes per rank per step; fits, but sends more bytes");
  EXPECT_EQ(decision[decision.size() - 2],
            "chose dp=2,tp=2,sp=1,zero=0: peak 190.00 MiB per rank, sends 300 bytes per rank "
            "per step; no data-parallel candidate fits; of the tp=2 candidates that fit, the "
            "one sending the fewest bytes");
}

TEST(AutoStrategy, RefusedMeshIsRecordedOnce) {
  FakeCandidates fake;
  for (int stage = 0; stage <= 3; ++stage)
    fake.costs["dp=2,zero=" + std::to_string(stage)] = {900 * MiB, 10};
  fake.refusedMeshes["dp=1,tp=2,zero=0"] = "m.onnx: node 'x': nothing to split on tp";
  fake.refusedMeshes["dp=1,tp=2,sp=1,zero=0"] = "m.onnx: nothing to split with sp";
  fake.refusedMeshes["dp=1,pp=2,zero=0"] = "m.onnx: --strategy pp=2: the model has 1 layer";
  ParallelStrategy chosen;
  DataParallelBundle out;
  std::vector<std::string> decision;
  testing::internal::CaptureStderr();
  EXPECT_FALSE(chooseStrategy(autoOn(2, 200 * MiB), fake, chosen, out, decision));
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "shardc: error: m.onnx: --strategy auto: no strategy fits in --gpu-memory 200.00 MiB "
            "on 2 ranks; the smallest, dp, needs 900.00 MiB per rank\n");
  EXPECT_EQ(decision.back(), "rejected dp=1,pp=2: --strategy pp=2: the model has 1 layer");
  EXPECT_EQ(decision[decision.size() - 2], "rejected dp=1,tp=2,sp=1: nothing to split with sp");
  EXPECT_EQ(decision[decision.size() - 3], "rejected dp=1,tp=2: node 'x': nothing to split on tp");
  EXPECT_TRUE(fake.compiled.empty());
}

TEST(AutoStrategy, EveryCandidateRefused) {
  FakeCandidates fake;
  fake.refusedMeshes["dp=2,zero=0"] = "m.onnx: the training step has no batch to split";
  fake.refusedMeshes["dp=1,tp=2,zero=0"] = "m.onnx: nothing to split on tp";
  fake.refusedMeshes["dp=1,tp=2,sp=1,zero=0"] = "m.onnx: nothing to split with sp";
  fake.refusedMeshes["dp=1,pp=2,zero=0"] = "m.onnx: no layers to cut";
  ParallelStrategy chosen;
  DataParallelBundle out;
  std::vector<std::string> decision;
  testing::internal::CaptureStderr();
  EXPECT_FALSE(chooseStrategy(autoOn(2, 0), fake, chosen, out, decision));
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "shardc: error: m.onnx: --strategy auto: the compiler refused every candidate on 2 "
            "ranks; dp=2: the training step has no batch to split\n");
  EXPECT_EQ(decision[1], "rejected dp=2 (every ZeRO stage): the training step has no batch to "
                         "split");
}

TEST(AutoStrategy, CompileFailureIsAnError) {
  FakeCandidates fake;
  fake.costs["dp=2,zero=0"] = {1, 1};
  fake.failCompile = true;
  ParallelStrategy chosen;
  DataParallelBundle out;
  std::vector<std::string> decision;
  EXPECT_FALSE(chooseStrategy(autoOn(2, 0), fake, chosen, out, decision));
  EXPECT_EQ(fake.compiled, std::vector<std::string>{"dp=2,zero=0"});
}

// Pipeline stages come last, when neither data nor tensor parallelism fits: the fewest stages
// first, then the fewest tp devices beside them, the ZeRO stage sending the fewest bytes.
TEST(AutoStrategy, PipelineStagesWhenNothingElseFits) {
  FakeCandidates fake;
  for (int stage = 0; stage <= 3; ++stage) {
    fake.costs["dp=4,zero=" + std::to_string(stage)] = {900 * MiB, 10};
    fake.costs["dp=2,pp=2,zero=" + std::to_string(stage)] = {150 * MiB, 100u + stage};
  }
  fake.costs["dp=1,pp=4,zero=0"] = {90 * MiB, 50};
  ParallelStrategy chosen;
  DataParallelBundle out;
  std::vector<std::string> decision;
  ASSERT_TRUE(chooseStrategy(autoOn(4, 200 * MiB), fake, chosen, out, decision));
  EXPECT_EQ(chosen.canonical(), "dp=2,pp=2,zero=0");
  EXPECT_EQ(fake.compiled, std::vector<std::string>{"dp=2,pp=2,zero=0"});
  // Every tp candidate was scored (at 1 GiB: no fit) before any pp one.
  auto firstPp = std::find_if(fake.scored.begin(), fake.scored.end(), [](const std::string &c) {
    return c.find("pp=") != std::string::npos;
  });
  ASSERT_NE(firstPp, fake.scored.end());
  EXPECT_EQ(*firstPp, "dp=2,pp=2,zero=0");
  EXPECT_TRUE(std::none_of(firstPp, fake.scored.end(), [](const std::string &c) {
    return c.find("pp=") == std::string::npos;
  }));
  EXPECT_EQ(decision.back().rfind("passed over dp=2,pp=2,zero=3: ", 0), 0u);
  EXPECT_NE(std::find(decision.begin(), decision.end(),
                      "chose dp=2,pp=2,zero=0: peak 150.00 MiB per rank, sends 100 bytes per "
                      "rank per step; no data- or tensor-parallel candidate fits; the fewest "
                      "pipeline stages (pp=2) whose largest stage fits, the fewest bytes sent "
                      "among them"),
            decision.end());
}

} // namespace
} // namespace shardc
