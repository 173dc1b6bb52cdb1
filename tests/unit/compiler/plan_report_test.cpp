// plan.txt and plan.json of multi-rank bundles: a small ZeRO-3 bundle of three ranks built by
// hand (two sharded trained parameters, one frozen, AdamW, an all_gather, a reduce_scatter and
// the loss all-reduce; an uneven batch split so that rank 2's program differs), checked
// against numbers worked out here and against runtime/common/comm_cost.h.
#include "shardc/Plan/PlanReport.h"
#include "shardc/Plan/PlanSummary.h"
#include "tests/unit/compiler/plan_test_util.h"

#include "runtime/common/comm_cost.h"
#include "runtime/common/planned_memory.h"

#include <gtest/gtest.h>

#include <set>

using namespace shardc;
using shardc::testing::collectPlanJsonKeys;
using shardc::testing::documentedPlanJsonKeys;
using shardc::testing::findParameter;
using shardc::testing::parsePlanJson;
using shardc::testing::u64Of;
using runtime::CollectiveKind;

namespace {

constexpr int kRanks = 3;

class ProgramBuilder {
public:
  explicit ProgramBuilder(program::Program &p) : p_(p) {}

  int buffer(const std::string &name, std::vector<int64_t> shape, program::BufferKind kind,
             program::BufferRole role, program::DType dtype = program::F32) {
    program::Buffer *b = p_.add_buffers();
    b->set_name(name);
    b->set_dtype(dtype);
    uint64_t n = 1;
    for (int64_t d : shape) {
      b->add_shape(d);
      n *= d;
    }
    b->set_kind(kind);
    b->set_role(role);
    const bool weights = kind == program::PARAMETER || kind == program::CONSTANT;
    b->set_region(weights ? program::WEIGHTS : program::ARENA);
    uint64_t &cursor = weights ? weightsCursor_ : arenaCursor_;
    b->set_offset(cursor);
    b->set_size_bytes(n * (dtype == program::I64 ? 8 : 4));
    cursor += (b->size_bytes() + 63) / 64 * 64;
    return p_.buffers_size() - 1;
  }

  void input(const std::string &name, int buffer, std::vector<int64_t> globalShape = {}) {
    program::Binding *b = p_.add_inputs();
    b->set_name(name);
    b->set_buffer(buffer);
    if (!globalShape.empty()) {
      program::Sharding *s = b->mutable_sharding();
      int64_t n = 1;
      for (int64_t d : globalShape) {
        s->add_global_shape(d);
        n *= d;
      }
      s->set_num_shards(kRanks);
      s->set_shard_numel((n + kRanks - 1) / kRanks);
    }
  }

  void output(const std::string &name, int buffer) {
    program::Binding *b = p_.add_outputs();
    b->set_name(name);
    b->set_buffer(buffer);
  }

  program::Op &op(const std::string &kernel, const std::string &name, std::vector<int> in,
                  std::vector<int> out) {
    program::Op *op = p_.add_ops();
    op->set_kernel(kernel);
    op->set_name(name);
    for (int b : in)
      op->add_inputs(b);
    for (int b : out)
      op->add_outputs(b);
    return *op;
  }

  static void intAttr(program::Op &op, const std::string &name, int64_t value) {
    (*op.mutable_attrs())[name].set_i(value);
  }
  static void stringAttr(program::Op &op, const std::string &name, const std::string &value) {
    (*op.mutable_attrs())[name].set_s(value);
  }

  void finish() {
    p_.set_arena_bytes(arenaCursor_);
    p_.set_weights_bytes(weightsCursor_);
    p_.set_planned_peak_bytes(runtime::planPeakMemory(p_).total);
  }

private:
  program::Program &p_;
  uint64_t arenaCursor_ = 0, weightsCursor_ = 0;
};

// The ZeRO-3 training step of rank `rank` with `rows` batch rows: w [5x2] (10 elements, shards
// of 4: 2 elements of padding) and b [3] (shards of 1) trained with AdamW, emb [4] frozen.
program::Program makeRankProgram(int rank, int64_t begin, int64_t rows) {
  using namespace program;
  Program p;
  p.set_rank(rank);
  p.set_world_size(kRanks);
  p.set_batch_begin(begin);
  p.set_batch_rows(rows);
  p.set_global_batch_rows(5);
  ProgramBuilder pb(p);
  int w = pb.buffer("w", {4}, INPUT, ROLE_PARAMETER);
  int b = pb.buffer("b", {1}, INPUT, ROLE_PARAMETER);
  int wm = pb.buffer("w.exp_avg", {4}, INPUT, ROLE_OPTIMIZER_STATE);
  int wv = pb.buffer("w.exp_avg_sq", {4}, INPUT, ROLE_OPTIMIZER_STATE);
  int bm = pb.buffer("b.exp_avg", {1}, INPUT, ROLE_OPTIMIZER_STATE);
  int bv = pb.buffer("b.exp_avg_sq", {1}, INPUT, ROLE_OPTIMIZER_STATE);
  int step = pb.buffer("step", {}, INPUT, ROLE_INPUT, I64);
  int lr = pb.buffer("lr", {}, INPUT, ROLE_INPUT);
  int x = pb.buffer("x", {rows, 5}, INPUT, ROLE_INPUT);
  int emb = pb.buffer("emb", {4}, PARAMETER, ROLE_PARAMETER);
  int wFull = pb.buffer("w_full", {5, 2}, ACTIVATION, ROLE_ACTIVATION);
  int bFull = pb.buffer("b_full", {3}, ACTIVATION, ROLE_ACTIVATION);
  int y = pb.buffer("y", {rows, 2}, ACTIVATION, ROLE_ACTIVATION);
  int loss = pb.buffer("loss_local", {}, ACTIVATION, ROLE_ACTIVATION);
  int gw = pb.buffer("w_grad", {5, 2}, ACTIVATION, ROLE_GRADIENT);
  int gb = pb.buffer("b_grad", {3}, ACTIVATION, ROLE_GRADIENT);
  int gwShard = pb.buffer("w_grad_shard", {4}, ACTIVATION, ROLE_GRADIENT);
  int gbShard = pb.buffer("b_grad_shard", {1}, ACTIVATION, ROLE_GRADIENT);
  int w1 = pb.buffer("w_new", {4}, ACTIVATION, ROLE_PARAMETER);
  int wm1 = pb.buffer("w_m", {4}, ACTIVATION, ROLE_OPTIMIZER_STATE);
  int wv1 = pb.buffer("w_v", {4}, ACTIVATION, ROLE_OPTIMIZER_STATE);
  int b1 = pb.buffer("b_new", {1}, ACTIVATION, ROLE_PARAMETER);
  int bm1 = pb.buffer("b_m", {1}, ACTIVATION, ROLE_OPTIMIZER_STATE);
  int bv1 = pb.buffer("b_v", {1}, ACTIVATION, ROLE_OPTIMIZER_STATE);
  int lossSum = pb.buffer("loss", {}, ACTIVATION, ROLE_ACTIVATION);

  for (auto [name, id] : std::vector<std::pair<std::string, int>>{{"w", w},
                                                                  {"b", b},
                                                                  {"w.exp_avg", wm},
                                                                  {"w.exp_avg_sq", wv},
                                                                  {"b.exp_avg", bm},
                                                                  {"b.exp_avg_sq", bv}}) {
    std::vector<int64_t> whole =
        name[0] == 'w' ? std::vector<int64_t>{5, 2} : std::vector<int64_t>{3};
    pb.input(name, id, whole);
  }
  pb.input("step", step);
  pb.input("lr", lr);
  pb.input("x", x);

  program::Op &gather = pb.op("all_gather", "fc/all_gather", {w, b}, {wFull, bFull});
  ProgramBuilder::intAttr(gather, "num_ranks", kRanks);
  ProgramBuilder::stringAttr(gather, "unit", "fc");
  pb.op("matmul", "fc/MatMul", {x, wFull, emb}, {y});
  pb.op("reduce_mean", "loss/Mean", {y}, {loss});
  pb.op("matmul", "fc/MatMul/grad", {x, y, bFull}, {gw, gb});
  program::Op &scatter = pb.op("reduce_scatter", "fc/reduce_scatter", {gw, gb}, {gwShard, gbShard});
  ProgramBuilder::intAttr(scatter, "num_ranks", kRanks);
  ProgramBuilder::intAttr(scatter, "bucket", 0);
  ProgramBuilder::stringAttr(scatter, "unit", "fc");
  pb.op("adamw_update", "optimizer/w", {w, gwShard, wm, wv, step, lr}, {w1, wm1, wv1});
  pb.op("adamw_update", "optimizer/b", {b, gbShard, bm, bv, step, lr}, {b1, bm1, bv1});
  program::Op &reduce = pb.op("all_reduce", "loss/all_reduce", {loss}, {lossSum});
  ProgramBuilder::intAttr(reduce, "num_ranks", kRanks);

  pb.output("loss", lossSum);
  pb.output("w", w1);
  pb.output("b", b1);
  // Each rank's part of the initial parameters differs (the per-rank layout of a version 1 bundle).
  program::StateInit *init = p.add_state_init();
  init->set_name("w");
  init->set_offset(64 + 16 * static_cast<uint64_t>(rank));
  init->set_size_bytes(rank == 2 ? 8 : 16);
  pb.finish();
  // Bytes one rank sends, worked out by hand: all_gather and reduce_scatter move K = 4 + 1
  // shard elements from each of 3 ranks (2 chunks of 5 floats sent), the all-reduce of the
  // loss one element padded to 3 (2 * 2 chunks of 1 float).
  p.set_planned_comm_bytes(40 + 40 + 16);
  return p;
}

program::Bundle makeBundle() {
  program::Bundle bundle;
  bundle.set_format_version(1);
  bundle.set_mode("train");
  bundle.set_source_model("tiny.onnx");
  bundle.set_world_size(kRanks);
  bundle.set_strategy("dp=3,zero=3");
  bundle.set_weights_file("weights.bin");
  *bundle.add_programs() = makeRankProgram(0, 0, 2);
  *bundle.add_programs() = makeRankProgram(1, 2, 2);
  *bundle.add_programs() = makeRankProgram(2, 4, 1);
  return bundle;
}

TEST(PlanSummary, MeshStrategyAndParameters) {
  PlanSummary s = summarizePlan(makeBundle());
  EXPECT_EQ(s.worldSize, 3);
  EXPECT_EQ(s.zeroStage, 3);
  EXPECT_EQ(s.strategy, "dp=3,zero=3");
  ASSERT_EQ(s.mesh.size(), 3u);
  EXPECT_EQ(s.mesh[0], (std::pair<std::string, int>{"dp", 3}));
  EXPECT_EQ(s.mesh[1], (std::pair<std::string, int>{"tp", 1}));
  EXPECT_EQ(s.mesh[2], (std::pair<std::string, int>{"pp", 1}));
  EXPECT_EQ(s.globalBatchRows, 5);

  EXPECT_EQ(s.trainedTensors, 2u);
  EXPECT_EQ(s.trainedElements, 13u); // Ψ = 10 + 3
  EXPECT_EQ(s.frozenTensors, 1u);
  EXPECT_EQ(s.frozenElements, 4u);
  ASSERT_EQ(s.parameters.size(), 3u);
  EXPECT_EQ(s.parameters[0].tensor.name, "w");
  EXPECT_EQ(s.parameters[2].tensor.name, "emb");

  const PlanParameter *w = findParameter(s, "w");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->trained);
  EXPECT_EQ(w->tensor.globalShape, (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(w->tensor.elements, 10);
  EXPECT_TRUE(w->tensor.sharding.sharded);
  EXPECT_EQ(w->tensor.sharding.shardElements, 4);
  EXPECT_EQ(w->tensor.sharding.paddingElements, 2);
  EXPECT_EQ(w->tensor.sharding.text(), "flat_shard 4/3, padding 2 elements");
  EXPECT_EQ(w->tensor.bytesPerRank, 16u);
  ASSERT_EQ(w->optimizerState.size(), 2u);
  EXPECT_EQ(w->optimizerState[0].name, "w.exp_avg");
  EXPECT_EQ(w->optimizerState[1].name, "w.exp_avg_sq");
  EXPECT_EQ(w->optimizerStateBytesPerRank(), 32u);

  const PlanParameter *emb = findParameter(s, "emb");
  ASSERT_NE(emb, nullptr);
  EXPECT_FALSE(emb->trained);
  EXPECT_EQ(emb->tensor.sharding.text(), "replicated");
  EXPECT_TRUE(emb->optimizerState.empty());
  EXPECT_TRUE(s.warnings.empty());
}

TEST(PlanSummary, CommunicationMatchesCommCost) {
  PlanSummary s = summarizePlan(makeBundle());
  ASSERT_EQ(s.ranks.size(), 3u);
  const PlanComm &comm = s.ranks[0].comm;
  ASSERT_EQ(comm.collectives.size(), 3u);

  const PlanCollective &gather = comm.collectives[0];
  EXPECT_EQ(gather.kind, "all_gather");
  EXPECT_EQ(gather.opIndex, 0);
  EXPECT_EQ(gather.group, "dp");
  EXPECT_EQ(gather.unit, "fc");
  EXPECT_EQ(gather.bucket, -1);
  EXPECT_EQ(gather.tensors, 2);
  EXPECT_EQ(gather.elements, 13u);
  EXPECT_EQ(gather.payloadElements, 15u); // N * (4 + 1)
  EXPECT_EQ(gather.payloadBytes, 60u);
  EXPECT_EQ(gather.bytesSent, runtime::collectiveBytesSent(CollectiveKind::AllGather, 15, 3, 4));

  const PlanCollective &scatter = comm.collectives[1];
  EXPECT_EQ(scatter.kind, "reduce_scatter");
  EXPECT_EQ(scatter.bucket, 0);
  EXPECT_EQ(scatter.payloadElements, 15u);
  EXPECT_EQ(scatter.bytesSent,
            runtime::collectiveBytesSent(CollectiveKind::ReduceScatter, 15, 3, 4));

  const PlanCollective &reduce = comm.collectives[2];
  EXPECT_EQ(reduce.kind, "all_reduce");
  EXPECT_EQ(reduce.elements, 1u);
  EXPECT_EQ(reduce.payloadElements, runtime::paddedToRanks(1, 3));
  EXPECT_EQ(reduce.bytesSent, runtime::collectiveBytesSent(CollectiveKind::AllReduce, 3, 3, 4));

  ASSERT_EQ(comm.totals.size(), 3u);
  EXPECT_EQ(comm.totals[0].kind, "all_reduce");
  EXPECT_EQ(comm.totals[0].bytesSent, 16u);
  EXPECT_EQ(comm.totals[1].kind, "reduce_scatter");
  EXPECT_EQ(comm.totals[1].bytesSent, 40u);
  EXPECT_EQ(comm.totals[2].kind, "all_gather");
  EXPECT_EQ(comm.totals[2].calls, 1u);
  EXPECT_EQ(comm.bytesSent, 96u);
  EXPECT_EQ(comm.plannedBytes, 96u);
  EXPECT_TRUE(comm.matchesPlan());

  // Theory: 2Ψ·4(N−1)/N = 208/3 and 3Ψ·4(N−1)/N = 104 bytes.
  EXPECT_EQ(s.commTheory.dpAllReduceBytes, 69u);
  EXPECT_EQ(s.commTheory.stageBytes, 104u);
}

TEST(PlanSummary, ModelStateAndZeroAccounting) {
  PlanSummary s = summarizePlan(makeBundle());
  const PlanModelState &m = s.ranks[0].modelState;
  EXPECT_EQ(m.trainedParameterBytes, 20u); // shards of 4 + 1 floats
  EXPECT_EQ(m.frozenParameterBytes, 16u);  // emb
  EXPECT_EQ(m.gradientBytes, 20u);         // the reduce_scatter's shards
  EXPECT_EQ(m.wholeGradientBytes, 52u);    // its inputs: 10 + 3 floats
  EXPECT_EQ(m.optimizerStateBytes, 40u);   // 2 x (4 + 1) floats

  const PlanZeroAccounting &z = s.zero;
  EXPECT_EQ(z.psi, 13u);
  EXPECT_EQ(z.ranks, 3);
  EXPECT_EQ(z.stage, 3);
  EXPECT_EQ(z.stateBytesPerElement, 8u);
  EXPECT_EQ(z.wholeOptimizerStateBytes, 104u);
  ASSERT_EQ(z.stages.size(), 4u);
  EXPECT_EQ(z.stages[0].formula, "16Ψ");
  EXPECT_EQ(z.stages[0].totalBytes, 16u * 13);
  EXPECT_EQ(z.stages[1].formula, "8Ψ + 8Ψ/N");
  EXPECT_EQ(z.stages[1].optimizerStateBytes, 35u); // ceil(104 / 3)
  EXPECT_EQ(z.stages[2].formula, "4Ψ + 12Ψ/N");
  EXPECT_EQ(z.stages[2].gradientBytes, 18u); // ceil(52 / 3)
  EXPECT_EQ(z.stages[3].formula, "16Ψ/N");
  EXPECT_EQ(z.stages[3].totalBytes, 18u + 18 + 35);
  EXPECT_EQ(z.parameterBytes, 20u);
  EXPECT_EQ(z.gradientBytes, 20u);
  EXPECT_EQ(z.optimizerStateBytes, 40u);
  EXPECT_EQ(z.totalBytes, 80u);
  EXPECT_EQ(z.parameterPaddingElements, 2);      // w: 3 * 4 - 10
  EXPECT_EQ(z.gradientPaddingElements, 2);       // w's gradient likewise
  EXPECT_EQ(z.optimizerStatePaddingElements, 4); // w's two moments
}

TEST(PlanSummary, GroupsRanksWithIdenticalPrograms) {
  PlanSummary s = summarizePlan(makeBundle());
  // Ranks 0 and 1 take 2 rows and differ only in rank, batch_begin and state_init; rank 2
  // takes 1 row.
  EXPECT_EQ(s.memoryGroups, (std::vector<std::vector<int>>{{0, 1}, {2}}));
  EXPECT_EQ(s.programGroups, (std::vector<std::vector<int>>{{0, 1}, {2}}));
  EXPECT_LT(s.ranks[2].memory.stepInputs, s.ranks[0].memory.stepInputs);
  EXPECT_EQ(s.ranks[2].plannedPeakBytes, s.ranks[2].memory.total);
  EXPECT_EQ(formatRankSet({0, 1}), "ranks 0-1");
  EXPECT_EQ(formatRankSet({3}), "rank 3");
  EXPECT_EQ(formatRankSet({0, 1, 2, 5, 7, 8}), "ranks 0-2, 5, 7-8");
}

TEST(PlanSummary, WarnsWhenCommDoesNotMatchThePlan) {
  program::Bundle bundle = makeBundle();
  for (program::Program &p : *bundle.mutable_programs())
    p.set_planned_comm_bytes(100);
  PlanSummary s = summarizePlan(bundle);
  ASSERT_EQ(s.warnings.size(), 2u); // one per group of ranks
  EXPECT_NE(s.warnings[0].find("ranks 0-1: the collectives send 96 bytes"), std::string::npos)
      << s.warnings[0];
  EXPECT_NE(s.warnings[0].find("planned_comm_bytes is 100"), std::string::npos);
  std::string text = formatPlan(bundle);
  EXPECT_NE(text.find("warning: ranks 0-1: the collectives send 96 bytes"), std::string::npos);
}

TEST(PlanText, MultiRankSections) {
  PlanNotes notes;
  notes.strategyDecision = {"chosen: dp=3,zero=3 (fits in memory, least communication)",
                            "rejected: dp=3,zero=0 (needs 208 bytes of model state per rank)"};
  std::string text = formatPlan(makeBundle(), notes);
  for (const char *expected :
       {"mode: train, world size: 3, strategy: dp=3,zero=3\n",
        "== Mesh and strategy\n",
        "mesh: dp=3 x tp=1 x pp=1 (3 ranks)",
        "batch: 5 rows per step",
        "split over dp: ranks 0-1: 2 rows each; rank 2: 1 row (",
        "== Parameters: 2 trained (Ψ = 13 elements)",
        "flat_shard 4/3, padding 2 elements",
        "2 x flat_shard 4/3, padding 2 elements",
        "== Memory per rank",
        "ranks 0-1",
        "== ZeRO accounting",
        "* ZeRO-3",
        "16Ψ/N",
        "this bundle",
        "== Communication per step",
        "all_gather",
        "unit fc",
        "bucket 0, unit fc",
        "total: 96 bytes (= planned_comm_bytes)",
        "3Ψ·4(N−1)/N  104 bytes  1.50x DP",
        "this bundle - theory: -8 bytes",
        "== Strategy decision\n  chosen: dp=3,zero=3",
        "== rank 0 of 3 (rank 1 runs the same program on its own batch rows and shards)\n",
        "this bundle holds 80 bytes, the formula 16Ψ/N gives 69.3: +10.7 bytes",
        "2\n    parameter, 2 gradient and 4 optimizer-state elements over all ranks = 10.7 bytes "
        "per rank\n",
        "strategy: dp=3,zero=3 = ZeRO-3 (FSDP)\n",
        "(rank 0; every rank sends the same; group dp = 3 ranks)",
        "== rank 2 of 3\n",
        "batch: rows [4, 5) of 5",
        "program: the same 8 kernel calls as rank 0",
        "memory: planned peak "})
    EXPECT_NE(text.find(expected), std::string::npos) << "missing: " << expected << "\n" << text;
  // The op list appears once: rank 2 runs the same kernels.
  EXPECT_EQ(text.find("program (A@"), text.rfind("program (A@"));
  // A pure function of the bundle and the notes.
  EXPECT_EQ(text, formatPlan(makeBundle(), notes));
}

TEST(PlanText, SingleRankKeepsItsFormat) {
  program::Bundle bundle;
  bundle.set_mode("forward");
  bundle.set_source_model("m.onnx");
  bundle.set_world_size(1);
  bundle.set_weights_file("weights.bin");
  program::Program *p = bundle.add_programs();
  p->set_world_size(1);
  ProgramBuilder pb(*p);
  int x = pb.buffer("x", {2}, program::INPUT, program::ROLE_INPUT);
  int y = pb.buffer("y", {2}, program::ACTIVATION, program::ROLE_ACTIVATION);
  pb.input("x", x);
  pb.op("relu", "Relu", {x}, {y});
  pb.output("y", y);
  pb.finish();
  std::string text = formatPlan(bundle);
  EXPECT_EQ(text.rfind("shardc plan for m.onnx\n"
                       "mode: forward, world size: 1, strategy: single rank (no sharding)\n\n"
                       "== rank 0 of 1\nmemory: planned peak ",
                       0),
            0u)
      << text;
  EXPECT_EQ(text.find("== Mesh"), std::string::npos);
  EXPECT_NE(text.find("  #0 relu 'Relu'\n"), std::string::npos);
  PlanNotes notes;
  notes.strategyDecision = {"one GPU: nothing to shard"};
  EXPECT_NE(formatPlan(bundle, notes).find("== Strategy decision\n  one GPU: nothing to shard\n"),
            std::string::npos);

  runtime::Json json;
  ASSERT_TRUE(parsePlanJson(formatPlanJson(bundle), &json));
  EXPECT_EQ(u64Of(json.at("world_size")), 1u);
  EXPECT_TRUE(json.at("zero_accounting").is_null());
}

TEST(PlanJson, ParsesAndHoldsTheSummary) {
  PlanNotes notes;
  notes.strategyDecision = {"chosen: dp=3,zero=3 \"quoted\"\ttab"};
  std::string text = formatPlanJson(makeBundle(), notes);
  runtime::Json root;
  ASSERT_TRUE(parsePlanJson(text, &root));
  ASSERT_TRUE(root.is_object());
  EXPECT_EQ(u64Of(root.at("format_version")), 1u);
  EXPECT_EQ(root.at("strategy").get<std::string>(), "dp=3,zero=3");
  EXPECT_EQ(u64Of(root.at("zero_stage")), 3u);
  EXPECT_EQ(root.at("strategy_decision").at(0).get<std::string>(),
            "chosen: dp=3,zero=3 \"quoted\"\ttab");

  const runtime::Json &comm = root.at("communication");
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(u64Of(comm.at("bytes_sent")), 96u);
  EXPECT_EQ(u64Of(comm.at("planned_comm_bytes")), 96u);
  EXPECT_TRUE(comm.at("matches_plan").get<bool>());
  const auto &collectives = comm.at("collectives");
  ASSERT_EQ(collectives.size(), 3u);
  EXPECT_EQ(collectives[0].at("kind").get<std::string>(), "all_gather");
  EXPECT_EQ(collectives[0].at("unit").get<std::string>(), "fc");
  EXPECT_TRUE(collectives[0].at("bucket").is_null());
  EXPECT_EQ(u64Of(collectives[1].at("bucket")), 0u);
  EXPECT_EQ(u64Of(collectives[2].at("bytes_sent")), 16u);

  const auto &params = root.at("parameters");
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].at("sharding").at("text").get<std::string>(),
            "flat_shard 4/3, padding 2 elements");
  EXPECT_EQ(u64Of(params[0].at("sharding").at("padding_elements")), 2u);
  EXPECT_EQ(params[0].at("optimizer_state").size(), 2u);

  const auto &memory = root.at("memory_per_rank");
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_EQ(memory[0].at("ranks").size(), 2u);
  EXPECT_EQ(u64Of(memory[0].at("model_state").at("whole_gradient_bytes")), 52u);

  const runtime::Json &zero = root.at("zero_accounting");
  EXPECT_EQ(u64Of(zero.at("psi")), 13u);
  EXPECT_EQ(zero.at("formulas").at(3).at("formula").get<std::string>(), "16Ψ/N");
  EXPECT_EQ(u64Of(zero.at("actual").at("total_bytes")), 80u);

  EXPECT_EQ(root.at("programs").size(), 2u);
}

// Every key docs/plan-format.md lists for plan.json (the backquoted first cell of each row of
// its key tables) appears in the file, and every key of the file is documented.
TEST(PlanJson, KeysMatchTheDocumentation) {
  std::set<std::string> documented = documentedPlanJsonKeys();
  ASSERT_GT(documented.size(), 40u);

  // The bundle as it is, and laid out on a one-axis mesh with its dp group named and an
  // asynchronous op, so that the keys of the mesh's groups and of such ops appear too.
  program::Bundle meshed = makeBundle();
  for (program::Program &p : *meshed.mutable_programs()) {
    program::MeshAxis *axis = p.add_mesh_axes();
    axis->set_name("dp");
    axis->set_size(kRanks);
    p.add_mesh_coordinate(p.rank());
    program::CommGroup *group = p.add_groups();
    group->set_name("dp");
    group->add_mesh_axes(0);
    for (int r = 0; r < kRanks; ++r)
      group->add_ranks(r);
    // An asynchronous op, for its completes_before (the format does not judge which op).
    if (p.ops_size() > 0)
      p.mutable_ops(0)->set_completes_before(p.ops_size());
  }
  std::set<std::string> present;
  for (const program::Bundle &bundle : {makeBundle(), meshed}) {
    runtime::Json root;
    ASSERT_TRUE(parsePlanJson(formatPlanJson(bundle), &root));
    collectPlanJsonKeys(root, present);
  }
  for (const std::string &key : documented)
    EXPECT_TRUE(present.count(key)) << "documented but absent: " << key;
  for (const std::string &key : present)
    EXPECT_TRUE(documented.count(key)) << "written but not documented: " << key;
}

} // namespace
