//===- PlanJson.cpp - plan.json ---------------------------------------------------------===//
//
// The plan as JSON (docs/plan-format.md, "plan.json"): the structs of PlanSummary plus each
// distinct program's buffers and ops. Each struct has one description here, its `to_json`,
// one line per key in the order the file has them; nlohmann finds it by argument-dependent
// lookup wherever a value of that type, or a vector of them, becomes JSON, and converts
// vectors, strings, integers and booleans itself. Adding a field to a struct of PlanSummary.h
// is one line in its `to_json`. Integers only; an nlohmann::ordered_json keeps the keys in
// insertion order, so the file is reproducible byte for byte.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Plan/PlanReport.h"
#include "shardc/Plan/PlanSummary.h"

#include "runtime/kernels/kernel.h"
#include "runtime/support/strict_json.h"

#include <algorithm>

namespace shardc {

using runtime::Json;

namespace {

// The cost model's numbers (PlanNotes::Prediction).
Json predictionJson(const PlanNotes::Prediction &p) {
  return Json{{"step_seconds", p.stepSeconds},
              {"tokens_per_second", p.tokensPerSecond},
              {"model_flops_per_device", p.modelFlopsPerDevice},
              {"mfu", p.mfu},
              {"bubble_fraction", p.bubbleFraction},
              {"exposed_comm_seconds", p.exposedCommSeconds},
              {"recompute_seconds", p.recomputeSeconds},
              {"peak_bytes", p.peakBytes}};
}

// `value` when the plan has one, else null.
} // namespace

std::string formatPredictionJson(const PlanNotes::Prediction &prediction) {
  return predictionJson(prediction).dump();
}

namespace {

template <typename T> Json orNull(bool present, const T &value) {
  return present ? Json(value) : Json();
}

// JSON spellings of the program's enums: lower-case, singular, stable.
const char *roleKey(program::BufferRole role) {
  switch (role) {
  case program::ROLE_PARAMETER:
    return "parameter";
  case program::ROLE_GRADIENT:
    return "gradient";
  case program::ROLE_OPTIMIZER_STATE:
    return "optimizer_state";
  case program::ROLE_INPUT:
    return "input";
  case program::ROLE_ACTIVATION:
    return "activation";
  case program::ROLE_CONSTANT:
    return "constant";
  case program::ROLE_BUFFER:
    return "buffer";
  default:
    return "unclassified";
  }
}

const char *kindKey(program::BufferKind kind) {
  switch (kind) {
  case program::ACTIVATION:
    return "activation";
  case program::INPUT:
    return "input";
  case program::PARAMETER:
    return "parameter";
  case program::CONSTANT:
    return "constant";
  default:
    return "unspecified";
  }
}

const char *shardingKind(const PlanSharding &s) {
  if (s.blocked())
    return s.sharded ? "block_flat_shard" : "block";
  return s.sharded ? "flat_shard" : "replicated";
}

const char *peakPointText(const program::Program &p, int64_t point) {
  if (point < 0)
    return "inputs";
  if (point >= p.ops_size())
    return "outputs";
  return "op";
}

// [{nameKey: axis, "size": n}, ...]: the strategy's axes under "mesh" (key "axis"), the
// program's under "mesh_axes" (key "name").
Json axisList(const std::vector<std::pair<std::string, int>> &axes, const char *nameKey) {
  Json list = Json::array();
  for (const auto &[axis, size] : axes)
    list.push_back(Json{{nameKey, axis}, {"size", size}});
  return list;
}

} // namespace

// Each `to_json` is declared in the namespace of its type, where argument-dependent lookup
// finds it (`static`: it is this file's; the views below are in an anonymous namespace with
// theirs).

// The program's own messages.
namespace program {

static void to_json(Json &j, const Sharding &s) {
  j = Json{{"global_shape", s.global_shape()},
           {"num_shards", s.num_shards()},
           {"shard_elements", s.shard_numel()},
           {"block_dim", s.block_dim()},
           {"num_blocks", s.num_blocks()},
           {"block_groups", std::max(s.block_groups(), 1)},
           {"block_axis", s.block_axis()},
           {"shard_axis", s.shard_axis()},
           {"padded_dim_size", s.padded_dim_size()}};
}

static void to_json(Json &j, const Binding &b) {
  j = Json{{"name", b.name()},
           {"buffer", b.buffer()},
           {"in_place", b.in_place()},
           {"batch_dim", b.batch_dim()},
           {"sharding", orNull(b.has_sharding(), b.sharding())}};
}

} // namespace program

// The structs of PlanSummary.h.

// PlanSharding as the sharding of a tensor of `dims` dims: "dim_axes" has one list per dim,
// also when the tensor is not cut into blocks (PlanSharding::dimAxes is empty then).
namespace {
struct TensorSharding {
  const PlanSharding &sharding;
  size_t dims;
};

void to_json(Json &j, const TensorSharding &t) {
  const PlanSharding &s = t.sharding;
  std::vector<std::vector<std::string>> dimAxes = s.dimAxes;
  dimAxes.resize(t.dims);
  j = Json{{"kind", shardingKind(s)},
           {"dim_axes", dimAxes},
           {"num_blocks", s.numBlocks},
           {"block_groups", s.blockGroups},
           {"padded_dim_size", s.paddedDimSize},
           {"block_elements", s.blockElements},
           {"shard_axis", orNull(s.sharded, s.shardAxis)},
           {"num_shards", s.numShards},
           {"shard_elements", s.shardElements},
           {"padding_elements", s.paddingElements},
           {"text", s.text()}};
}
} // namespace

static void to_json(Json &j, const PlanTensor &t) {
  j = Json{{"name", t.name},
           {"global_shape", t.globalShape},
           {"elements", t.elements},
           {"sharding", TensorSharding{t.sharding, t.globalShape.size()}},
           {"sharding_spec", t.sharding.spec()},
           {"bytes_per_rank", t.bytesPerRank}};
}

// The tensor's keys, then the parameter's own.
static void to_json(Json &j, const PlanParameter &p) {
  to_json(j, p.tensor);
  j["trained"] = p.trained;
  j["optimizer_state"] = p.optimizerState;
  j["optimizer_state_bytes_per_rank"] = p.optimizerStateBytesPerRank();
}

static void to_json(Json &j, const PlanModelState &m) {
  j = Json{{"trained_parameter_bytes", m.trainedParameterBytes},
           {"frozen_parameter_bytes", m.frozenParameterBytes},
           {"gradient_bytes", m.gradientBytes},
           {"whole_gradient_bytes", m.wholeGradientBytes},
           {"optimizer_state_bytes", m.optimizerStateBytes}};
}

static void to_json(Json &j, const PlanCollective &c) {
  j = Json{{"op", c.opIndex},
           {"name", c.name},
           {"kind", c.kind},
           {"group", c.group},
           {"num_ranks", c.numRanks},
           {"bucket", orNull(c.bucket >= 0, c.bucket)},
           {"unit", orNull(!c.unit.empty(), c.unit)},
           {"tensors", c.tensors},
           {"elements", c.elements},
           {"payload_elements", c.payloadElements},
           {"payload_bytes", c.payloadBytes},
           {"bytes_sent", c.bytesSent},
           {"theory_bytes", c.theoryBytes}};
}

static void to_json(Json &j, const PlanCommTotal &t) {
  j = Json{{"kind", t.kind},
           {"calls", t.calls},
           {"elements", t.elements},
           {"payload_bytes", t.payloadBytes},
           {"bytes_sent", t.bytesSent}};
}

// One kind's total over one group ("group_totals": a flat list over the groups).
namespace {
struct GroupTotal {
  const PlanGroupComm &group;
  const PlanCommTotal &total;
};

void to_json(Json &j, const GroupTotal &g) {
  j = Json{{"group", g.group.group},
           {"num_ranks", g.group.numRanks},
           {"kind", g.total.kind},
           {"calls", g.total.calls},
           {"payload_bytes", g.total.payloadBytes},
           {"theory_bytes", g.total.theoryBytes},
           {"bytes_sent", g.total.bytesSent}};
}
} // namespace

static void to_json(Json &j, const PlanComm &c) {
  // Group name -> bytes sent over it: a map, its keys are the program's group names.
  Json byGroup = Json::object();
  Json groupTotals = Json::array();
  for (const PlanGroupComm &g : c.byGroup) {
    byGroup.emplace(g.group, g.bytesSent);
    for (const PlanCommTotal &t : g.totals)
      groupTotals.push_back(GroupTotal{g, t});
  }
  j = Json{{"collectives", c.collectives},
           {"totals", c.totals},
           {"by_group", std::move(byGroup)},
           {"group_totals", std::move(groupTotals)},
           {"bytes_sent", c.bytesSent},
           {"planned_comm_bytes", c.plannedBytes},
           {"matches_plan", c.matchesPlan()}};
}

static void to_json(Json &j, const PlanCommTheory &t) {
  j = Json{{"dp_all_reduce_bytes", t.dpAllReduceBytes},
           {"stage_formula", t.stageFormula},
           {"stage_bytes", t.stageBytes}};
}

static void to_json(Json &j, const PlanZeroStage &z) {
  j = Json{{"stage", z.stage},
           {"label", z.label},
           {"formula", z.formula},
           {"parameter_bytes", z.parameterBytes},
           {"gradient_bytes", z.gradientBytes},
           {"optimizer_state_bytes", z.optimizerStateBytes},
           {"total_bytes", z.totalBytes}};
}

static void to_json(Json &j, const PlanZeroAccounting &z) {
  j = Json{{"psi", z.psi},
           {"psi_split", z.psiSplit},
           {"psi_replicated", z.psiReplicated},
           {"psi_rank", z.psiRank},
           {"tp_size", z.tp},
           {"ranks", z.ranks},
           {"stage", z.stage},
           {"optimizer_state_bytes_per_element", z.stateBytesPerElement},
           {"whole_optimizer_state_bytes", z.wholeOptimizerStateBytes},
           {"mixed_precision", z.mixedPrecision},
           {"parameter_bytes_per_element", z.parameterBytesPerElement},
           {"gradient_bytes_per_element", z.gradientBytesPerElement},
           {"formulas", z.stages},
           {"actual",
            {{"parameter_bytes", z.parameterBytes},
             {"gradient_bytes", z.gradientBytes},
             {"optimizer_state_bytes", z.optimizerStateBytes},
             {"total_bytes", z.totalBytes}}},
           {"padding",
            {{"parameter_elements", z.parameterPaddingElements},
             {"gradient_elements", z.gradientPaddingElements},
             {"optimizer_state_elements", z.optimizerStatePaddingElements}}}};
}

static void to_json(Json &j, const PlanGroup &g) {
  j = Json{{"name", g.name}, {"axes", g.axes}, {"size", g.size}, {"members", g.members}};
}

static void to_json(Json &j, const PlanCastPoints &c) {
  j = Json{{"roundings", c.roundings},
           {"parameter_roundings", c.parameterRoundings},
           {"widenings", c.widenings},
           {"products", c.products},
           {"products_16bit_operands", c.productsWith16BitOperands},
           {"products_16bit_results", c.productsWith16BitResults}};
}

// The listings plan.json adds: per group of ranks, the memory of its first rank
// ("memory_per_rank") and the program it runs ("programs").
namespace {

struct RankMemory {
  const std::vector<int> &ranks;
  const PlanRank &rank;
  program::Program program; // the rank's, as planProgramOfRank builds it
};

struct ProgramListing {
  const std::vector<int> &ranks;
  program::Program program;
};

// Buffer `index` and op `index` of a program.
struct BufferAt {
  int index;
  const program::Buffer &buffer;
};

struct OpAt {
  int index;
  const program::Op &op;
};

// The arena's live bytes at its peak by role, in the roles' order, and by role and element
// type: [{"role", "dtype", "bytes"}, ...].
Json liveByRole(const runtime::PlannedMemory &m) {
  Json live = Json::object();
  for (program::BufferRole role :
       {program::ROLE_PARAMETER, program::ROLE_GRADIENT, program::ROLE_OPTIMIZER_STATE,
        program::ROLE_INPUT, program::ROLE_ACTIVATION, program::ROLE_CONSTANT,
        program::ROLE_BUFFER, program::BUFFER_ROLE_UNSPECIFIED})
    live.emplace(roleKey(role), m.arenaLiveByRole[static_cast<size_t>(role)]);
  return live;
}

Json liveByRoleAndDtype(const runtime::PlannedMemory &m) {
  Json list = Json::array();
  for (size_t role = 0; role < m.arenaLiveByRoleAndDtype.size(); ++role)
    for (auto [dtype, bytes] : m.arenaLiveByRoleAndDtype[role])
      list.push_back(Json{{"role", roleKey(static_cast<program::BufferRole>(role))},
                          {"dtype", runtime::dtypeName(dtype)},
                          {"bytes", bytes}});
  return list;
}

void to_json(Json &j, const RankMemory &r) {
  const runtime::PlannedMemory &m = r.rank.memory;
  const int64_t peak = m.arenaPeakPoint;
  j = Json{{"ranks", r.ranks},
           {"batch_rows", r.rank.batchRows},
           {"planned_peak_bytes", r.rank.plannedPeakBytes},
           {"arena",
            {{"bytes", m.arena},
             {"peak_at", peakPointText(r.program, peak)},
             {"peak_op", peak >= 0 && peak < r.program.ops_size() ? peak : -1},
             {"live_by_role", liveByRole(m)},
             {"live_by_role_and_dtype", liveByRoleAndDtype(m)},
             {"unused", m.arenaUnused}}},
           {"weights",
            {{"bytes", m.weights},
             {"parameters", m.weightsParameters},
             {"constants", m.weightsConstants},
             {"alignment", m.weightsPadding}}},
           {"workspace_bytes", m.workspace},
           {"workspace_op", m.workspaceOp},
           {"comm_workspace_bytes", m.commWorkspace},
           {"step_inputs_bytes", m.stepInputs},
           {"step_outputs_bytes", m.stepOutputs},
           {"model_state", r.rank.modelState},
           {"comm_bytes_sent", r.rank.comm.bytesSent},
           {"planned_comm_bytes", r.rank.comm.plannedBytes}};
}

void to_json(Json &j, const BufferAt &b) {
  j = Json{{"index", b.index},
           {"name", b.buffer.name()},
           {"dtype", runtime::dtypeName(b.buffer.dtype())},
           {"shape", b.buffer.shape()},
           {"kind", kindKey(b.buffer.kind())},
           {"region", b.buffer.region() == program::WEIGHTS ? "weights" : "arena"},
           {"offset", b.buffer.offset()},
           {"size_bytes", b.buffer.size_bytes()},
           {"role", roleKey(b.buffer.role())}};
}

void to_json(Json &j, const OpAt &o) {
  j = Json{{"index", o.index},
           {"kernel", o.op.kernel()},
           {"name", o.op.name()},
           {"inputs", o.op.inputs()},
           {"outputs", o.op.outputs()}};
  if (o.op.completes_before() != 0) // only on asynchronous collectives
    j["completes_before"] = o.op.completes_before();
}

void to_json(Json &j, const ProgramListing &l) {
  const program::Program &p = l.program;
  Json buffers = Json::array(), ops = Json::array();
  for (int i = 0; i < p.buffers_size(); ++i)
    buffers.push_back(BufferAt{i, p.buffers(i)});
  for (int i = 0; i < p.ops_size(); ++i)
    ops.push_back(OpAt{i, p.ops(i)});
  j = Json{{"ranks", l.ranks},
           {"rank", p.rank()},
           {"batch_begin", p.batch_begin()},
           {"batch_rows", p.batch_rows()},
           {"global_batch_rows", p.global_batch_rows()},
           {"arena_bytes", p.arena_bytes()},
           {"weights_bytes", p.weights_bytes()},
           {"workspace_bytes", p.workspace_bytes()},
           {"comm_workspace_bytes", p.comm_workspace_bytes()},
           {"planned_peak_bytes", p.planned_peak_bytes()},
           {"planned_comm_bytes", p.planned_comm_bytes()},
           {"planned_flops", p.planned_flops()},
           {"inputs", p.inputs()},
           {"outputs", p.outputs()},
           {"buffers", std::move(buffers)},
           {"ops", std::move(ops)}};
}

// Rank 0's collectives (PlanComm) between its rank and the theory of the whole plan; {}
// without ranks.
Json communicationJson(const PlanSummary &s) {
  if (s.ranks.empty())
    return Json::object();
  Json j = Json{{"rank", s.ranks.front().rank}};
  j.update(Json(s.ranks.front().comm));
  j["theory"] = s.commTheory;
  return j;
}

} // namespace

std::string formatPlanJson(const program::Bundle &bundle, const PlanNotes &notes) {
  PlanSummary s = summarizePlan(bundle, notes);
  Json memory = Json::array(), programs = Json::array();
  for (const std::vector<int> &group : s.memoryGroups) {
    const PlanRank &r = s.ranks[group.front()];
    memory.push_back(RankMemory{group, r, planProgramOfRank(bundle, r.rank)});
  }
  for (const std::vector<int> &group : s.programGroups) {
    const PlanRank &r = s.ranks[group.front()];
    programs.push_back(ProgramListing{group, planProgramOfRank(bundle, r.rank)});
  }
  const PlanCastPoints casts =
      bundle.programs_size() > 0 ? castPointsOf(bundle.programs(0)) : PlanCastPoints();
  Json root = Json{
      {"format_version", 1},
      {"source_model", s.sourceModel},
      {"mode", s.mode},
      {"world_size", s.worldSize},
      {"strategy", s.strategy},
      {"zero_stage", s.zeroStage},
      {"micro_batches", notes.microBatches},
      {"remat", notes.remat},
      {"weights_present", s.weightsPresent},
      {"cast_points", casts},
      {"mesh", axisList(s.mesh, "axis")},
      {"mesh_axes", axisList(s.meshAxes, "name")},
      {"groups", s.groups},
      {"global_batch_rows", s.globalBatchRows},
      {"parameters", s.parameters},
      {"parameter_totals",
       {{"trained_tensors", s.trainedTensors},
        {"trained_elements", s.trainedElements},
        {"trained_split_tensors", s.trainedSplitTensors},
        {"trained_split_elements", s.trainedSplitElements},
        {"trained_replicated_elements", s.trainedReplicatedElements},
        {"trained_elements_per_rank", s.trainedRankElements},
        {"frozen_tensors", s.frozenTensors},
        {"frozen_elements", s.frozenElements}}},
      {"memory_per_rank", std::move(memory)},
      {"zero_accounting", orNull(s.trainedElements > 0, s.zero)},
      {"communication", communicationJson(s)},
      {"strategy_decision", s.strategyDecision},
      {"prediction", orNull(notes.predicted, predictionJson(notes.prediction))},
      {"tp_layout", s.layoutDecisions},
      {"resharding", s.reshardings},
      {"pipeline", s.pipeline},
      {"warnings", s.warnings},
      {"programs", std::move(programs)},
  };
  // Names come from the model: a byte sequence that is not UTF-8 is written as U+FFFD rather
  // than failing the compile over a report.
  return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

} // namespace shardc
