// plan.txt and plan.json of a tensor-parallel bundle: a ZeRO-1 training step on a dp x tp =
// 2 x 2 mesh built by hand. Two parameters are cut into tp blocks (w1 along dim 0, w2 along
// dim 1), one is replicated (b); AdamW's state is flat-sharded over dp; the collectives run
// over the tp group (an activation all-reduce), the dp group (the gradients' reduce-scatter,
// the parameters' all-gather, the loss) and the whole world (a gradient-norm all-reduce without
// a group). Every expected number is worked out here from the shapes and the ring algorithms.
#include "shardc/Plan/PlanReport.h"
#include "shardc/Plan/PlanSummary.h"
#include "tests/unit/compiler/plan_test_util.h"

#include "runtime/common/planned_memory.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

using namespace shardc;
using shardc::testing::collectPlanJsonKeys;
using shardc::testing::documentedPlanJsonKeys;
using shardc::testing::findParameter;
using shardc::testing::parsePlanJson;
using shardc::testing::u64Of;

namespace {

constexpr int kDp = 2, kTp = 2, kWorld = kDp * kTp;
constexpr int64_t kRowsPerDp = 2;
// Mesh axes in Program.mesh_axes order, and the groups in Program.groups order: tp first, so
// that a group's index is not its axis's (the summary must go by the program's groups).
constexpr int kDpAxis = 0, kTpAxis = 1;
constexpr int kTpGroup = 0, kDpGroup = 1;

int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A trained parameter: its whole shape and the dim cut into kTp blocks (-1: replicated).
struct Param {
  std::string name;
  std::vector<int64_t> globalShape;
  int blockDim;

  std::vector<int64_t> blockShape() const {
    std::vector<int64_t> shape = globalShape;
    if (blockDim >= 0)
      shape[blockDim] /= kTp;
    return shape;
  }
  int64_t blockElements() const { return numel(blockShape()); }
  int64_t shardElements() const { return ceilDiv(blockElements(), kDp); }
};

const std::vector<Param> &params() {
  static const std::vector<Param> p = {
      {"w1", {4, 6}, 0}, // block 2x6: 12 elements, dp shards of 6
      {"w2", {5, 6}, 1}, // block 5x3: 15 elements, dp shards of 8 (1 of padding)
      {"b", {3}, -1},    // replicated: 3 elements, dp shards of 2 (1 of padding)
  };
  return p;
}

// Bytes one rank sends in a ring collective over `n` ranks whose buffer holds `floats` values
// padded to a multiple of n: the buffer is cut into n chunks; a reduce-scatter or an all-gather
// passes n - 1 chunks on, an all-reduce does both (2(n - 1) chunks).
uint64_t ringBytes(const std::string &kind, int64_t floats, int n) {
  const int64_t chunk = ceilDiv(floats, n) * 4;
  const int64_t steps = kind == "all_reduce" ? 2 * (n - 1) : n - 1;
  return static_cast<uint64_t>(steps * chunk);
}

// The collectives' sizes: the tp all-reduce of a [kRowsPerDp x 5] activation, the dp
// reduce-scatter / all-gather of the three shards, the loss over dp, a scalar over the world.
constexpr int64_t kActivationElements = kRowsPerDp * 5;
int64_t shardTotal() {
  int64_t k = 0;
  for (const Param &p : params())
    k += p.shardElements();
  return k;
}
uint64_t tpBytes() { return ringBytes("all_reduce", kActivationElements, kTp); }
uint64_t dpBytes() {
  return ringBytes("reduce_scatter", shardTotal() * kDp, kDp) +
         ringBytes("all_gather", shardTotal() * kDp, kDp) + ringBytes("all_reduce", 1, kDp);
}
uint64_t worldBytes() { return ringBytes("all_reduce", 1, kWorld); }

class Builder {
public:
  explicit Builder(program::Program &p) : p_(p) {}

  int buffer(const std::string &name, std::vector<int64_t> shape, program::BufferKind kind,
             program::BufferRole role, program::DType dtype = program::F32) {
    program::Buffer *b = p_.add_buffers();
    b->set_name(name);
    b->set_dtype(dtype);
    for (int64_t d : shape)
      b->add_shape(d);
    b->set_kind(kind);
    b->set_role(role);
    const bool weights = kind == program::PARAMETER || kind == program::CONSTANT;
    b->set_region(weights ? program::WEIGHTS : program::ARENA);
    uint64_t &cursor = weights ? weightsCursor_ : arenaCursor_;
    b->set_offset(cursor);
    b->set_size_bytes(static_cast<uint64_t>(numel(shape)) * (dtype == program::I64 ? 8 : 4));
    cursor += (b->size_bytes() + 63) / 64 * 64;
    return p_.buffers_size() - 1;
  }

  // A binding of parameter `param`'s tp block (flat = false) or of a flat dp shard of it.
  void input(const std::string &name, int buffer, const Param *param = nullptr, bool flat = false) {
    program::Binding *b = p_.add_inputs();
    b->set_name(name);
    b->set_buffer(buffer);
    if (!param || (param->blockDim < 0 && !flat))
      return;
    program::Sharding *s = b->mutable_sharding();
    for (int64_t d : param->globalShape)
      s->add_global_shape(d);
    if (param->blockDim >= 0) {
      s->set_block_dim(param->blockDim);
      s->set_num_blocks(kTp);
      s->set_block_axis(kTpAxis);
    }
    s->set_num_shards(flat ? kDp : 1);
    s->set_shard_numel(flat ? param->shardElements() : param->blockElements());
    s->set_shard_axis(kDpAxis);
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

  // A collective over group `group` of Program.groups (-1: the world) of `ranks` ranks.
  program::Op &collective(const std::string &kernel, const std::string &name, std::vector<int> in,
                          std::vector<int> out, int group, int ranks) {
    program::Op &c = op(kernel, name, std::move(in), std::move(out));
    if (group >= 0)
      (*c.mutable_attrs())["group"].set_i(group);
    (*c.mutable_attrs())["num_ranks"].set_i(ranks);
    return c;
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

// Rank `rank` = dp * kTp + tp of the mesh, its groups tp (index 0) and dp (index 1).
void addMesh(program::Program &p) {
  const int dp = p.rank() / kTp, tp = p.rank() % kTp;
  for (auto [name, size] : {std::pair<const char *, int>{"dp", kDp}, {"tp", kTp}}) {
    program::MeshAxis *axis = p.add_mesh_axes();
    axis->set_name(name);
    axis->set_size(size);
  }
  p.add_mesh_coordinate(dp);
  p.add_mesh_coordinate(tp);
  program::CommGroup *tpGroup = p.add_groups();
  tpGroup->set_name("tp");
  tpGroup->add_mesh_axes(kTpAxis);
  for (int t = 0; t < kTp; ++t)
    tpGroup->add_ranks(dp * kTp + t);
  program::CommGroup *dpGroup = p.add_groups();
  dpGroup->set_name("dp");
  dpGroup->add_mesh_axes(kDpAxis);
  for (int d = 0; d < kDp; ++d)
    dpGroup->add_ranks(d * kTp + tp);
}

program::Program makeRankProgram(int rank) {
  using namespace program;
  Program p;
  p.set_rank(rank);
  p.set_world_size(kWorld);
  addMesh(p);
  p.set_batch_begin(rank / kTp * kRowsPerDp);
  p.set_batch_rows(kRowsPerDp);
  p.set_global_batch_rows(kDp * kRowsPerDp);
  Builder pb(p);

  struct Ids {
    int block, m, v, grad, gradShard, shard, newShard, newM, newV, newBlock;
  };
  std::vector<Ids> ids;
  for (const Param &param : params()) {
    Ids i;
    const std::vector<int64_t> flat = {param.shardElements()};
    i.block = pb.buffer(param.name, param.blockShape(), INPUT, ROLE_PARAMETER);
    i.m = pb.buffer(param.name + ".exp_avg", flat, INPUT, ROLE_OPTIMIZER_STATE);
    i.v = pb.buffer(param.name + ".exp_avg_sq", flat, INPUT, ROLE_OPTIMIZER_STATE);
    i.grad = pb.buffer(param.name + "_grad", param.blockShape(), ACTIVATION, ROLE_GRADIENT);
    i.gradShard = pb.buffer(param.name + "_grad_shard", flat, ACTIVATION, ROLE_GRADIENT);
    i.shard = pb.buffer(param.name + "_shard", flat, ACTIVATION, ROLE_PARAMETER);
    i.newShard = pb.buffer(param.name + "_new_shard", flat, ACTIVATION, ROLE_PARAMETER);
    i.newM = pb.buffer(param.name + "_m", flat, ACTIVATION, ROLE_OPTIMIZER_STATE);
    i.newV = pb.buffer(param.name + "_v", flat, ACTIVATION, ROLE_OPTIMIZER_STATE);
    i.newBlock = pb.buffer(param.name + "_new", param.blockShape(), ACTIVATION, ROLE_PARAMETER);
    ids.push_back(i);
  }
  int step = pb.buffer("step", {}, INPUT, ROLE_INPUT, I64);
  int lr = pb.buffer("lr", {}, INPUT, ROLE_INPUT);
  int x = pb.buffer("x", {kRowsPerDp, 6}, INPUT, ROLE_INPUT);
  int partial = pb.buffer("y_partial", {kRowsPerDp, 5}, ACTIVATION, ROLE_ACTIVATION);
  int y = pb.buffer("y", {kRowsPerDp, 5}, ACTIVATION, ROLE_ACTIVATION);
  int lossLocal = pb.buffer("loss_local", {}, ACTIVATION, ROLE_ACTIVATION);
  int loss = pb.buffer("loss", {}, ACTIVATION, ROLE_ACTIVATION);
  int normLocal = pb.buffer("grad_norm_local", {}, ACTIVATION, ROLE_ACTIVATION);
  int norm = pb.buffer("grad_norm", {}, ACTIVATION, ROLE_ACTIVATION);

  for (size_t k = 0; k < params().size(); ++k)
    pb.input(params()[k].name, ids[k].block, &params()[k]);
  for (size_t k = 0; k < params().size(); ++k) {
    pb.input(params()[k].name + ".exp_avg", ids[k].m, &params()[k], /*flat=*/true);
    pb.input(params()[k].name + ".exp_avg_sq", ids[k].v, &params()[k], /*flat=*/true);
  }
  pb.input("step", step);
  pb.input("lr", lr);
  pb.input("x", x);

  auto each = [&](int Ids::*member) {
    std::vector<int> out;
    for (const Ids &i : ids)
      out.push_back(i.*member);
    return out;
  };
  pb.op("matmul", "fc/MatMul", {x, ids[0].block, ids[1].block}, {partial});
  pb.collective("all_reduce", "fc/all_reduce", {partial}, {y}, kTpGroup, kTp);
  pb.op("reduce_mean", "loss/Mean", {y, ids[2].block}, {lossLocal});
  std::vector<int> grads = each(&Ids::grad);
  pb.op("matmul", "fc/MatMul/grad", {x, y}, grads);
  program::Op &scatter = pb.collective("reduce_scatter", "gradients/bucket0", grads,
                                       each(&Ids::gradShard), kDpGroup, kDp);
  (*scatter.mutable_attrs())["bucket"].set_i(0);
  pb.collective("shard_slice", "optimizer/shard_slice", each(&Ids::block), each(&Ids::shard),
                kDpGroup, kDp);
  pb.op("reduce_sum", "grad_norm/local", {ids[0].gradShard}, {normLocal});
  pb.collective("all_reduce", "grad_norm/all_reduce", {normLocal}, {norm}, -1, kWorld);
  for (size_t k = 0; k < ids.size(); ++k)
    pb.op("adamw_update", "optimizer/" + params()[k].name,
          {ids[k].shard, ids[k].gradShard, ids[k].m, ids[k].v, step, lr},
          {ids[k].newShard, ids[k].newM, ids[k].newV});
  program::Op &gather = pb.collective("all_gather", "parameters/bucket0", each(&Ids::newShard),
                                      each(&Ids::newBlock), kDpGroup, kDp);
  (*gather.mutable_attrs())["bucket"].set_i(0);
  pb.collective("all_reduce", "loss/all_reduce", {lossLocal}, {loss}, kDpGroup, kDp);

  pb.output("loss", loss);
  for (size_t k = 0; k < ids.size(); ++k)
    pb.output(params()[k].name, ids[k].newBlock);
  program::StateInit *init = p.add_state_init();
  init->set_name("w1");
  init->set_offset(64 * static_cast<uint64_t>(rank));
  init->set_size_bytes(48);
  pb.finish();
  p.set_planned_comm_bytes(tpBytes() + dpBytes() + worldBytes());
  return p;
}

program::Bundle makeBundle() {
  program::Bundle bundle;
  bundle.set_format_version(1);
  bundle.set_mode("train");
  bundle.set_source_model("tp.onnx");
  bundle.set_world_size(kWorld);
  bundle.set_strategy("dp=2,tp=2,zero=1");
  bundle.set_weights_file("weights.bin");
  for (int r = 0; r < kWorld; ++r)
    *bundle.add_programs() = makeRankProgram(r);
  return bundle;
}

// Ψ and its parts, from the parameter list.
struct Psi {
  int64_t whole = 0, split = 0, replicated = 0, rank = 0;
};
Psi psiOf() {
  Psi psi;
  for (const Param &p : params()) {
    psi.whole += numel(p.globalShape);
    (p.blockDim >= 0 ? psi.split : psi.replicated) += numel(p.globalShape);
    psi.rank += p.blockElements();
  }
  return psi;
}

// The optimizer state's padding elements over a dp group: N * k - n per moment.
int64_t statePaddingElements() {
  int64_t padding = 0;
  for (const Param &p : params())
    padding += 2 * (kDp * p.shardElements() - p.blockElements());
  return padding;
}

TEST(PlanTensorParallel, MeshAndGroups) {
  PlanSummary s = summarizePlan(makeBundle());
  EXPECT_TRUE(s.hasMesh());
  EXPECT_EQ(s.meshAxes, (std::vector<std::pair<std::string, int>>{{"dp", kDp}, {"tp", kTp}}));
  EXPECT_EQ(s.axisSize("dp"), kDp);
  EXPECT_EQ(s.axisSize("tp"), kTp);
  ASSERT_EQ(s.groups.size(), 2u);
  EXPECT_EQ(s.groups[0].name, "tp");
  EXPECT_EQ(s.groups[0].axes, std::vector<std::string>{"tp"});
  EXPECT_EQ(s.groups[0].members, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(s.groups[1].name, "dp");
  EXPECT_EQ(s.groups[1].members, (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(s.ranks[3].meshCoordinate, (std::vector<int>{1, 1}));
  // Every rank runs the same program on its own rows, blocks and shards.
  EXPECT_EQ(s.programGroups, (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  EXPECT_EQ(s.memoryGroups, (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  EXPECT_TRUE(s.warnings.empty());
}

TEST(PlanTensorParallel, ParametersShowGlobalShapesAndSpecs) {
  PlanSummary s = summarizePlan(makeBundle());
  for (const Param &param : params()) {
    const PlanParameter *p = findParameter(s, param.name);
    ASSERT_NE(p, nullptr) << param.name;
    EXPECT_EQ(p->tensor.globalShape, param.globalShape) << param.name;
    EXPECT_EQ(p->tensor.elements, numel(param.globalShape)) << param.name;
    EXPECT_EQ(p->tensor.sharding.blockElements, param.blockElements()) << param.name;
    // The parameter's buffer is its whole tp block (ZeRO-1 keeps parameters whole).
    EXPECT_EQ(p->tensor.bytesPerRank, static_cast<uint64_t>(4 * param.blockElements()));
    ASSERT_EQ(p->optimizerState.size(), 2u);
    const PlanSharding &state = p->optimizerState[0].sharding;
    EXPECT_TRUE(state.sharded);
    EXPECT_EQ(state.shardAxis, "dp");
    EXPECT_EQ(state.shardElements, param.shardElements());
    EXPECT_EQ(state.paddingElements, kDp * param.shardElements() - param.blockElements());
    EXPECT_EQ(p->optimizerStateBytesPerRank(),
              static_cast<uint64_t>(2 * 4 * param.shardElements()));
  }
  const PlanParameter *w1 = findParameter(s, "w1"), *w2 = findParameter(s, "w2"),
                      *b = findParameter(s, "b");
  EXPECT_EQ(w1->tensor.sharding.spec(), "[{tp}, {}]");
  EXPECT_EQ(w2->tensor.sharding.spec(), "[{}, {tp}]");
  EXPECT_EQ(b->tensor.sharding.spec(), "replicated");
  EXPECT_EQ(w1->optimizerState[0].sharding.spec(), "[{tp}, {}] + flat/dp");
  EXPECT_EQ(b->optimizerState[1].sharding.spec(), "flat/dp");
  EXPECT_EQ(w2->optimizerState[0].sharding.text(),
            "[{}, {tp}] + flat_shard 8/2, padding 1 elements");
  EXPECT_EQ(b->optimizerState[0].sharding.text(), "flat_shard 2/2, padding 1 elements");

  const Psi psi = psiOf();
  EXPECT_EQ(s.trainedTensors, params().size());
  EXPECT_EQ(s.trainedSplitTensors, 2u);
  EXPECT_EQ(s.trainedElements, static_cast<uint64_t>(psi.whole));
  EXPECT_EQ(s.trainedSplitElements, static_cast<uint64_t>(psi.split));
  EXPECT_EQ(s.trainedReplicatedElements, static_cast<uint64_t>(psi.replicated));
  EXPECT_EQ(s.trainedRankElements, static_cast<uint64_t>(psi.rank));
  EXPECT_EQ(psi.rank, psi.split / kTp + psi.replicated);
}

TEST(PlanTensorParallel, ZeroAccountingInPsiRank) {
  PlanSummary s = summarizePlan(makeBundle());
  const Psi psi = psiOf();
  const PlanZeroAccounting &z = s.zero;
  EXPECT_EQ(z.psi, static_cast<uint64_t>(psi.whole));
  EXPECT_EQ(z.psiSplit, static_cast<uint64_t>(psi.split));
  EXPECT_EQ(z.psiReplicated, static_cast<uint64_t>(psi.replicated));
  EXPECT_EQ(z.psiRank, static_cast<uint64_t>(psi.rank));
  EXPECT_EQ(z.tp, kTp);
  EXPECT_EQ(z.ranks, kDp); // ZeRO shards over dp, not the world
  EXPECT_EQ(z.stage, 1);
  EXPECT_EQ(z.stateBytesPerElement, 8u); // AdamW's two moments of the rank's blocks
  ASSERT_EQ(z.stages.size(), 4u);
  const uint64_t r = static_cast<uint64_t>(psi.rank);
  EXPECT_EQ(z.stages[0].formula, "16Ψ_rank");
  EXPECT_EQ(z.stages[0].totalBytes, 16 * r);
  EXPECT_EQ(z.stages[1].formula, "8Ψ_rank + 8Ψ_rank/N");
  EXPECT_EQ(z.stages[1].totalBytes, 8 * r + 8 * r / kDp);
  EXPECT_EQ(z.stages[3].formula, "16Ψ_rank/N");

  // What the buffers hold: the blocks of the parameters and of their gradients (whole until
  // the reduce-scatter), and the dp shards of the moments, padding included.
  const PlanModelState &m = s.ranks[0].modelState;
  EXPECT_EQ(m.trainedParameterBytes, 4 * r);
  EXPECT_EQ(m.wholeGradientBytes, 4 * r);
  EXPECT_EQ(m.gradientBytes, static_cast<uint64_t>(4 * shardTotal()));
  EXPECT_EQ(m.optimizerStateBytes, static_cast<uint64_t>(2 * 4 * shardTotal()));
  EXPECT_EQ(z.totalBytes, m.trainedParameterBytes + m.wholeGradientBytes + m.optimizerStateBytes);
  EXPECT_EQ(z.optimizerStatePaddingElements, statePaddingElements());
  EXPECT_EQ(z.parameterPaddingElements, 0);
  // The stage's formula plus each rank's part of the padding.
  EXPECT_EQ(z.totalBytes, z.stages[1].totalBytes + 4 * statePaddingElements() / kDp);

  // The dp theory in Ψ_rank over N = dp: 2Ψ_rank·4(N−1)/N.
  EXPECT_EQ(s.commTheory.dpAllReduceBytes, 2 * 4 * r * (kDp - 1) / kDp);
  EXPECT_EQ(s.commTheory.stageFormula, "2Ψ_rank·4(N−1)/N");
}

TEST(PlanTensorParallel, CommunicationPerGroup) {
  PlanSummary s = summarizePlan(makeBundle());
  const PlanComm &comm = s.ranks[0].comm;
  ASSERT_EQ(comm.collectives.size(), 6u);
  EXPECT_EQ(comm.collectives[0].group, "tp");
  EXPECT_EQ(comm.collectives[0].numRanks, kTp);
  EXPECT_EQ(comm.collectives[0].bytesSent, tpBytes());
  EXPECT_EQ(comm.collectives[0].theoryBytes, tpBytes());
  EXPECT_EQ(comm.collectives[1].group, "dp");
  EXPECT_EQ(comm.collectives[1].kind, "reduce_scatter");
  EXPECT_EQ(comm.collectives[3].group, "world"); // no group attribute
  EXPECT_EQ(comm.collectives[3].numRanks, kWorld);
  EXPECT_EQ(comm.collectives[3].bytesSent, worldBytes());

  ASSERT_EQ(comm.byGroup.size(), 3u); // the program's groups, then the world
  EXPECT_EQ(comm.byGroup[0].group, "tp");
  EXPECT_EQ(comm.byGroup[0].numRanks, kTp);
  EXPECT_EQ(comm.byGroup[0].bytesSent, tpBytes());
  EXPECT_EQ(comm.byGroup[1].group, "dp");
  EXPECT_EQ(comm.byGroup[1].numRanks, kDp);
  EXPECT_EQ(comm.byGroup[1].calls, 4u); // reduce-scatter, shard_slice, all-gather, loss
  EXPECT_EQ(comm.byGroup[1].bytesSent, dpBytes());
  EXPECT_EQ(comm.byGroup[1].theoryBytes, dpBytes());
  ASSERT_EQ(comm.byGroup[1].totals.size(), 4u);
  EXPECT_EQ(comm.byGroup[1].totals[1].kind, "reduce_scatter");
  EXPECT_EQ(comm.byGroup[1].totals[1].bytesSent,
            ringBytes("reduce_scatter", shardTotal() * kDp, kDp));
  EXPECT_EQ(comm.byGroup[2].group, "world");
  EXPECT_EQ(comm.byGroup[2].bytesSent, worldBytes());
  EXPECT_EQ(comm.bytesSent, tpBytes() + dpBytes() + worldBytes());
  EXPECT_TRUE(comm.matchesPlan());
}

TEST(PlanTensorParallel, Text) {
  const std::string text = formatPlan(makeBundle());
  const Psi psi = psiOf();
  for (const std::string &expected : std::vector<std::string>{
           "strategy: dp=2,tp=2,zero=1 = ZeRO-1 on dp + tensor parallelism on tp\n",
           "mesh: dp=2 x tp=2 (4 ranks, numbered row-major: rank = dp index · 2 + tp index)\n",
           "  dp=2: data parallelism over the 2 ranks of a dp group",
           "  tp=2: tensor parallelism: 2 trained parameters cut into 2 blocks",
           "groups (every collective runs over one of them, or over the whole world):\n",
           "  tp: 2 ranks along tp: {0, 1}, {2, 3}; 1 collective per step\n",
           "  dp: 2 ranks along dp: {0, 2}, {1, 3}; 4 collectives per step\n",
           "batch: 4 rows per step, split over dp: ranks 0-1: rows [0, 2); ranks 2-3: rows [2, 4)",
           "Ψ_split = " + std::to_string(psi.split) + " elements",
           "Ψ_replicated = " + std::to_string(psi.replicated) + " elements",
           "= " + std::to_string(psi.rank) + " trained elements", "[{tp}, {}]",
           "2 x [{}, {tp}] + flat/dp (padding 1)", "2 x flat/dp (padding 1)",
           "(Ψ_rank = " + std::to_string(psi.rank) + " trained elements per rank, N = dp = 2)\n",
           "* ZeRO-1       8Ψ_rank + 8Ψ_rank/N",
           "groups: tp = 2 ranks, dp = 2 ranks, world = 4 ranks)",
           "theory of the dp traffic (ring algorithms, fp32, Ψ_rank = " + std::to_string(psi.rank) +
               ", N = 2",
           "== rank 0 of 4 (ranks 1-3 run the same program on their own batch rows, tp blocks "
           "and shards)\nmesh: dp=0, tp=0; groups: tp {0, 1}, dp {0, 2}\n"})
    EXPECT_NE(text.find(expected), std::string::npos) << "missing: " << expected << "\n" << text;
  // The parameter rows: global shape and elements, the spec, the block's bytes.
  EXPECT_TRUE(
      std::regex_search(text, std::regex(R"(\n  w1 +trained +4x6 +24 +\[\{tp\}, \{\}\] +48 )")))
      << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\n  b +trained +3 +3 +replicated +12 )")))
      << text;
  // The per-group table: group, n, kind, calls, payload, theory, sent.
  const std::string tp = std::to_string(tpBytes());
  EXPECT_TRUE(std::regex_search(text, std::regex("\n    tp +2 +all_reduce +1 +" +
                                                 std::to_string(kActivationElements * 4) + " +" +
                                                 tp + " +" + tp + "\n")))
      << text;
  EXPECT_EQ(text.find("every collective runs over the dp axis"), std::string::npos);
  EXPECT_EQ(text.find("plain data parallelism"), std::string::npos);
}

TEST(PlanTensorParallel, Json) {
  runtime::Json root;
  ASSERT_TRUE(parsePlanJson(formatPlanJson(makeBundle()), &root));
  const auto &axes = root.at("mesh_axes");
  ASSERT_EQ(axes.size(), 2u);
  EXPECT_EQ(axes[1].at("name").get<std::string>(), "tp");
  EXPECT_EQ(u64Of(axes[1].at("size")), static_cast<uint64_t>(kTp));
  const auto &groups = root.at("groups");
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[1].at("name").get<std::string>(), "dp");
  EXPECT_EQ(groups[1].at("members").size(), 2u);

  const auto &params = root.at("parameters");
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[1].at("name").get<std::string>(), "w2");
  EXPECT_EQ(params[1].at("sharding_spec").get<std::string>(), "[{}, {tp}]");
  const auto &shape = params[1].at("global_shape");
  ASSERT_EQ(shape.size(), 2u);
  EXPECT_EQ(u64Of(shape[0]), 5u);
  EXPECT_EQ(u64Of(shape[1]), 6u);
  EXPECT_EQ(params[1].at("sharding").at("kind").get<std::string>(), "block");
  EXPECT_EQ(u64Of(params[1].at("sharding").at("block_elements")), 15u);
  EXPECT_EQ(
      params[1].at("optimizer_state").at(0).at("sharding_spec").get<std::string>(),
      "[{}, {tp}] + flat/dp");
  EXPECT_EQ(params[2].at("sharding_spec").get<std::string>(), "replicated");

  const Psi psi = psiOf();
  const runtime::Json &totals = root.at("parameter_totals");
  EXPECT_EQ(u64Of(totals.at("trained_split_elements")), static_cast<uint64_t>(psi.split));
  EXPECT_EQ(u64Of(totals.at("trained_replicated_elements")),
            static_cast<uint64_t>(psi.replicated));
  EXPECT_EQ(u64Of(totals.at("trained_elements_per_rank")), static_cast<uint64_t>(psi.rank));
  const runtime::Json &zero = root.at("zero_accounting");
  EXPECT_EQ(u64Of(zero.at("psi_rank")), static_cast<uint64_t>(psi.rank));
  EXPECT_EQ(u64Of(zero.at("ranks")), static_cast<uint64_t>(kDp));

  const runtime::Json &byGroup = root.at("communication").at("by_group");
  ASSERT_NE(byGroup, nullptr);
  EXPECT_EQ(u64Of(byGroup.at("tp")), tpBytes());
  EXPECT_EQ(u64Of(byGroup.at("dp")), dpBytes());
  EXPECT_EQ(u64Of(byGroup.at("world")), worldBytes());
  EXPECT_TRUE(root.at("communication").at("matches_plan").get<bool>());

  // Every key of this bundle's plan.json is documented.
  std::set<std::string> documented = documentedPlanJsonKeys(), present;
  ASSERT_GT(documented.size(), 40u);
  collectPlanJsonKeys(root, present);
  for (const std::string &key : present)
    EXPECT_TRUE(documented.count(key)) << "written but not documented: " << key;
}

TEST(PlanTensorParallel, LayoutDecisionsInTextAndJson) {
  // The compiler's tensor-parallel decisions (graph.tp_layout) travel as PlanNotes and are
  // printed as given, in order, in plan.txt and plan.json.
  PlanNotes notes;
  notes.layoutDecisions = {"split on tp 'w1' dim 0 (size 4): 24 parameter elements",
                           "replicated 'b' dim 0 (size 3): kept whole by --shard"};
  const std::string text = formatPlan(makeBundle(), notes);
  const std::string section = "== Tensor-parallel layout (what is split on tp, what stays whole "
                              "and why)\n  split on tp 'w1' dim 0 (size 4): 24 parameter "
                              "elements\n  replicated 'b' dim 0 (size 3): kept whole by --shard\n";
  EXPECT_NE(text.find(section), std::string::npos) << text;
  EXPECT_EQ(formatPlan(makeBundle()).find("Tensor-parallel layout"), std::string::npos);

  runtime::Json root;
  ASSERT_TRUE(parsePlanJson(formatPlanJson(makeBundle(), notes), &root));
  const auto &layout = root.at("tp_layout");
  ASSERT_EQ(layout.size(), 2u);
  EXPECT_EQ(layout[1].get<std::string>(), notes.layoutDecisions[1]);
}

} // namespace
