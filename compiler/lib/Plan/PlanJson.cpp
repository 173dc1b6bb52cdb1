//===- PlanJson.cpp - plan.json ---------------------------------------------------------===//
//
// The plan as JSON (docs/plan-format.md, "plan.json"): the numbers of PlanSummary plus each
// distinct program's buffers and ops. Integers only; keys keep a fixed order (an
// nlohmann::ordered_json keeps insertion order) so the file is reproducible byte for byte.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Plan/PlanReport.h"
#include "shardc/Plan/PlanSummary.h"

#include "runtime/kernels/kernel.h"
#include "runtime/support/strict_json.h"

namespace shardc {

namespace {

using runtime::Json;

Json u64(uint64_t v) { return Json(v); }
Json i64(int64_t v) { return Json(v); }
Json str(const std::string &v) { return Json(v); }

template <typename Range> Json intArray(const Range &values) {
  Json a = Json::array();
  for (auto v : values)
    a.push_back(i64(static_cast<int64_t>(v)));
  return a;
}

Json rankArray(const std::vector<int> &ranks) {
  Json a = Json::array();
  for (int r : ranks)
    a.push_back(i64(r));
  return a;
}

Json strings(const std::vector<std::string> &lines) {
  Json a = Json::array();
  for (const std::string &line : lines)
    a.push_back(str(line));
  return a;
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

Json shardingJson(const PlanSharding &s, size_t dims) {
  Json o = Json::object();
  o.emplace("kind", str(shardingKind(s)));
  // One list per dim of the whole tensor: the mesh axes that cut it into blocks.
  Json dimAxes = Json::array();
  for (size_t i = 0; i < dims; ++i) {
    Json axes = Json::array();
    if (i < s.dimAxes.size())
      for (const std::string &axis : s.dimAxes[i])
        axes.push_back(str(axis));
    dimAxes.push_back(std::move(axes));
  }
  o.emplace("dim_axes", std::move(dimAxes));
  o.emplace("num_blocks", i64(s.numBlocks));
  o.emplace("block_groups", i64(s.blockGroups));
  o.emplace("block_elements", i64(s.blockElements));
  o.emplace("shard_axis", s.sharded ? str(s.shardAxis) : Json());
  o.emplace("num_shards", i64(s.numShards));
  o.emplace("shard_elements", i64(s.shardElements));
  o.emplace("padding_elements", i64(s.paddingElements));
  o.emplace("text", str(s.text()));
  return o;
}

Json tensorJson(const PlanTensor &t) {
  Json o = Json::object();
  o.emplace("name", str(t.name));
  o.emplace("global_shape", intArray(t.globalShape));
  o.emplace("elements", i64(t.elements));
  o.emplace("sharding", shardingJson(t.sharding, t.globalShape.size()));
  o.emplace("sharding_spec", str(t.sharding.spec()));
  o.emplace("bytes_per_rank", u64(t.bytesPerRank));
  return o;
}

Json parametersJson(const PlanSummary &s) {
  Json a = Json::array();
  for (const PlanParameter &p : s.parameters) {
    Json o = tensorJson(p.tensor);
    o.emplace("trained", Json(p.trained));
    Json states = Json::array();
    for (const PlanTensor &state : p.optimizerState)
      states.push_back(tensorJson(state));
    o.emplace("optimizer_state", std::move(states));
    o.emplace("optimizer_state_bytes_per_rank", u64(p.optimizerStateBytesPerRank()));
    a.push_back(std::move(o));
  }
  return a;
}

std::string peakPointText(const program::Program &p, int64_t point) {
  if (point < 0)
    return "inputs";
  if (point >= p.ops_size())
    return "outputs";
  return "op";
}

Json memoryJson(const program::Bundle &bundle, const PlanSummary &s,
                     const std::vector<int> &group) {
  const PlanRank &r = s.ranks[group.front()];
  const program::Program p = planProgramOfRank(bundle, r.rank);
  const runtime::PlannedMemory &m = r.memory;
  Json o = Json::object();
  o.emplace("ranks", rankArray(group));
  o.emplace("batch_rows", i64(r.batchRows));
  o.emplace("planned_peak_bytes", u64(r.plannedPeakBytes));
  Json arena = Json::object();
  arena.emplace("bytes", u64(m.arena));
  arena.emplace("peak_at", str(peakPointText(p, m.arenaPeakPoint)));
  arena.emplace("peak_op",
            i64(m.arenaPeakPoint >= 0 && m.arenaPeakPoint < p.ops_size() ? m.arenaPeakPoint : -1));
  Json live = Json::object();
  for (program::BufferRole role :
       {program::ROLE_PARAMETER, program::ROLE_GRADIENT, program::ROLE_OPTIMIZER_STATE,
        program::ROLE_INPUT, program::ROLE_ACTIVATION, program::ROLE_CONSTANT,
        program::ROLE_BUFFER, program::BUFFER_ROLE_UNSPECIFIED})
    live.emplace(roleKey(role), u64(m.arenaLiveByRole[static_cast<size_t>(role)]));
  arena.emplace("live_by_role", std::move(live));
  // The same bytes by role and element type: [{"role", "dtype", "bytes"}, ...].
  Json byDtype = Json::array();
  for (size_t role = 0; role < m.arenaLiveByRoleAndDtype.size(); ++role)
    for (auto [dtype, bytes] : m.arenaLiveByRoleAndDtype[role]) {
      Json entry = Json::object();
      entry.emplace("role", str(roleKey(static_cast<program::BufferRole>(role))));
      entry.emplace("dtype", str(runtime::dtypeName(dtype)));
      entry.emplace("bytes", u64(bytes));
      byDtype.push_back(std::move(entry));
    }
  arena.emplace("live_by_role_and_dtype", std::move(byDtype));
  arena.emplace("unused", u64(m.arenaUnused));
  o.emplace("arena", std::move(arena));
  Json weights = Json::object();
  weights.emplace("bytes", u64(m.weights));
  weights.emplace("parameters", u64(m.weightsParameters));
  weights.emplace("constants", u64(m.weightsConstants));
  weights.emplace("alignment", u64(m.weightsPadding));
  o.emplace("weights", std::move(weights));
  o.emplace("workspace_bytes", u64(m.workspace));
  o.emplace("workspace_op", i64(m.workspaceOp));
  o.emplace("comm_workspace_bytes", u64(m.commWorkspace));
  o.emplace("step_inputs_bytes", u64(m.stepInputs));
  o.emplace("step_outputs_bytes", u64(m.stepOutputs));
  Json state = Json::object();
  state.emplace("trained_parameter_bytes", u64(r.modelState.trainedParameterBytes));
  state.emplace("frozen_parameter_bytes", u64(r.modelState.frozenParameterBytes));
  state.emplace("gradient_bytes", u64(r.modelState.gradientBytes));
  state.emplace("whole_gradient_bytes", u64(r.modelState.wholeGradientBytes));
  state.emplace("optimizer_state_bytes", u64(r.modelState.optimizerStateBytes));
  o.emplace("model_state", std::move(state));
  o.emplace("comm_bytes_sent", u64(r.comm.bytesSent));
  o.emplace("planned_comm_bytes", u64(r.comm.plannedBytes));
  return o;
}

Json zeroJson(const PlanSummary &s) {
  const PlanZeroAccounting &z = s.zero;
  Json o = Json::object();
  o.emplace("psi", u64(z.psi));
  o.emplace("psi_split", u64(z.psiSplit));
  o.emplace("psi_replicated", u64(z.psiReplicated));
  o.emplace("psi_rank", u64(z.psiRank));
  o.emplace("tp_size", i64(z.tp));
  o.emplace("ranks", i64(z.ranks));
  o.emplace("stage", i64(z.stage));
  o.emplace("optimizer_state_bytes_per_element", u64(z.stateBytesPerElement));
  o.emplace("whole_optimizer_state_bytes", u64(z.wholeOptimizerStateBytes));
  o.emplace("mixed_precision", Json(z.mixedPrecision));
  o.emplace("parameter_bytes_per_element", u64(z.parameterBytesPerElement));
  o.emplace("gradient_bytes_per_element", u64(z.gradientBytesPerElement));
  Json stages = Json::array();
  for (const PlanZeroStage &row : z.stages) {
    Json r = Json::object();
    r.emplace("stage", i64(row.stage));
    r.emplace("label", str(row.label));
    r.emplace("formula", str(row.formula));
    r.emplace("parameter_bytes", u64(row.parameterBytes));
    r.emplace("gradient_bytes", u64(row.gradientBytes));
    r.emplace("optimizer_state_bytes", u64(row.optimizerStateBytes));
    r.emplace("total_bytes", u64(row.totalBytes));
    stages.push_back(std::move(r));
  }
  o.emplace("formulas", std::move(stages));
  Json actual = Json::object();
  actual.emplace("parameter_bytes", u64(z.parameterBytes));
  actual.emplace("gradient_bytes", u64(z.gradientBytes));
  actual.emplace("optimizer_state_bytes", u64(z.optimizerStateBytes));
  actual.emplace("total_bytes", u64(z.totalBytes));
  o.emplace("actual", std::move(actual));
  Json padding = Json::object();
  padding.emplace("parameter_elements", i64(z.parameterPaddingElements));
  padding.emplace("gradient_elements", i64(z.gradientPaddingElements));
  padding.emplace("optimizer_state_elements", i64(z.optimizerStatePaddingElements));
  o.emplace("padding", std::move(padding));
  return o;
}

Json commJson(const PlanSummary &s) {
  Json o = Json::object();
  if (s.ranks.empty())
    return o;
  const PlanComm &comm = s.ranks.front().comm;
  o.emplace("rank", i64(s.ranks.front().rank));
  Json list = Json::array();
  for (const PlanCollective &c : comm.collectives) {
    Json e = Json::object();
    e.emplace("op", i64(c.opIndex));
    e.emplace("name", str(c.name));
    e.emplace("kind", str(c.kind));
    e.emplace("group", str(c.group));
    e.emplace("num_ranks", i64(c.numRanks));
    e.emplace("bucket", c.bucket >= 0 ? i64(c.bucket) : Json());
    e.emplace("unit", c.unit.empty() ? Json() : str(c.unit));
    e.emplace("tensors", i64(c.tensors));
    e.emplace("elements", u64(c.elements));
    e.emplace("payload_elements", u64(c.payloadElements));
    e.emplace("payload_bytes", u64(c.payloadBytes));
    e.emplace("bytes_sent", u64(c.bytesSent));
    e.emplace("theory_bytes", u64(c.theoryBytes));
    list.push_back(std::move(e));
  }
  o.emplace("collectives", std::move(list));
  Json totals = Json::array();
  for (const PlanCommTotal &t : comm.totals) {
    Json e = Json::object();
    e.emplace("kind", str(t.kind));
    e.emplace("calls", u64(t.calls));
    e.emplace("elements", u64(t.elements));
    e.emplace("payload_bytes", u64(t.payloadBytes));
    e.emplace("bytes_sent", u64(t.bytesSent));
    totals.push_back(std::move(e));
  }
  o.emplace("totals", std::move(totals));
  // Group name -> bytes sent over it: a map, its keys are the program's group names.
  Json byGroup = Json::object();
  for (const PlanGroupComm &g : comm.byGroup)
    byGroup.emplace(g.group, u64(g.bytesSent));
  o.emplace("by_group", std::move(byGroup));
  Json groupTotals = Json::array();
  for (const PlanGroupComm &g : comm.byGroup)
    for (const PlanCommTotal &t : g.totals) {
      Json e = Json::object();
      e.emplace("group", str(g.group));
      e.emplace("num_ranks", i64(g.numRanks));
      e.emplace("kind", str(t.kind));
      e.emplace("calls", u64(t.calls));
      e.emplace("payload_bytes", u64(t.payloadBytes));
      e.emplace("theory_bytes", u64(t.theoryBytes));
      e.emplace("bytes_sent", u64(t.bytesSent));
      groupTotals.push_back(std::move(e));
    }
  o.emplace("group_totals", std::move(groupTotals));
  o.emplace("bytes_sent", u64(comm.bytesSent));
  o.emplace("planned_comm_bytes", u64(comm.plannedBytes));
  o.emplace("matches_plan", Json(comm.matchesPlan()));
  Json theory = Json::object();
  theory.emplace("dp_all_reduce_bytes", u64(s.commTheory.dpAllReduceBytes));
  theory.emplace("stage_formula", str(s.commTheory.stageFormula));
  theory.emplace("stage_bytes", u64(s.commTheory.stageBytes));
  o.emplace("theory", std::move(theory));
  return o;
}

Json bindingsJson(const google::protobuf::RepeatedPtrField<program::Binding> &bindings) {
  Json a = Json::array();
  for (const program::Binding &b : bindings) {
    Json e = Json::object();
    e.emplace("name", str(b.name()));
    e.emplace("buffer", i64(b.buffer()));
    e.emplace("in_place", Json(b.in_place()));
    if (b.has_sharding()) {
      Json sh = Json::object();
      sh.emplace("global_shape", intArray(b.sharding().global_shape()));
      sh.emplace("num_shards", i64(b.sharding().num_shards()));
      sh.emplace("shard_elements", i64(b.sharding().shard_numel()));
      sh.emplace("block_dim", i64(b.sharding().block_dim()));
      sh.emplace("num_blocks", i64(b.sharding().num_blocks()));
      sh.emplace("block_groups", i64(std::max(b.sharding().block_groups(), 1)));
      sh.emplace("block_axis", i64(b.sharding().block_axis()));
      sh.emplace("shard_axis", i64(b.sharding().shard_axis()));
      e.emplace("sharding", std::move(sh));
    } else {
      e.emplace("sharding", Json());
    }
    a.push_back(std::move(e));
  }
  return a;
}

Json programJson(const program::Program &p, const std::vector<int> &group) {
  Json o = Json::object();
  o.emplace("ranks", rankArray(group));
  o.emplace("rank", i64(p.rank()));
  o.emplace("batch_begin", i64(p.batch_begin()));
  o.emplace("batch_rows", i64(p.batch_rows()));
  o.emplace("global_batch_rows", i64(p.global_batch_rows()));
  o.emplace("arena_bytes", u64(p.arena_bytes()));
  o.emplace("weights_bytes", u64(p.weights_bytes()));
  o.emplace("workspace_bytes", u64(p.workspace_bytes()));
  o.emplace("comm_workspace_bytes", u64(p.comm_workspace_bytes()));
  o.emplace("planned_peak_bytes", u64(p.planned_peak_bytes()));
  o.emplace("planned_comm_bytes", u64(p.planned_comm_bytes()));
  o.emplace("inputs", bindingsJson(p.inputs()));
  o.emplace("outputs", bindingsJson(p.outputs()));
  Json buffers = Json::array();
  for (int i = 0; i < p.buffers_size(); ++i) {
    const program::Buffer &b = p.buffers(i);
    Json e = Json::object();
    e.emplace("index", i64(i));
    e.emplace("name", str(b.name()));
    e.emplace("dtype", str(runtime::dtypeName(b.dtype())));
    e.emplace("shape", intArray(b.shape()));
    e.emplace("kind", str(kindKey(b.kind())));
    e.emplace("region", str(b.region() == program::WEIGHTS ? "weights" : "arena"));
    e.emplace("offset", u64(b.offset()));
    e.emplace("size_bytes", u64(b.size_bytes()));
    e.emplace("role", str(roleKey(b.role())));
    buffers.push_back(std::move(e));
  }
  o.emplace("buffers", std::move(buffers));
  Json ops = Json::array();
  for (int i = 0; i < p.ops_size(); ++i) {
    const program::Op &op = p.ops(i);
    Json e = Json::object();
    e.emplace("index", i64(i));
    e.emplace("kernel", str(op.kernel()));
    e.emplace("name", str(op.name()));
    e.emplace("inputs", intArray(op.inputs()));
    e.emplace("outputs", intArray(op.outputs()));
    if (op.completes_before() != 0)
      e.emplace("completes_before", i64(op.completes_before()));
    ops.push_back(std::move(e));
  }
  o.emplace("ops", std::move(ops));
  return o;
}

} // namespace

std::string formatPlanJson(const program::Bundle &bundle, const PlanNotes &notes) {
  PlanSummary s = summarizePlan(bundle, notes);
  Json root = Json::object();
  root.emplace("format_version", i64(1));
  root.emplace("source_model", str(s.sourceModel));
  root.emplace("mode", str(s.mode));
  root.emplace("world_size", i64(s.worldSize));
  root.emplace("strategy", str(s.strategy));
  root.emplace("zero_stage", i64(s.zeroStage));
  root.emplace("micro_batches", i64(notes.microBatches));
  root.emplace("remat", strings(notes.remat));
  root.emplace("weights_present", Json(s.weightsPresent));
  {
    const PlanCastPoints c =
        bundle.programs_size() > 0 ? castPointsOf(bundle.programs(0)) : PlanCastPoints();
    Json casts = Json::object();
    casts.emplace("roundings", i64(c.roundings));
    casts.emplace("parameter_roundings", i64(c.parameterRoundings));
    casts.emplace("widenings", i64(c.widenings));
    casts.emplace("products", i64(c.products));
    casts.emplace("products_16bit_operands", i64(c.productsWith16BitOperands));
    casts.emplace("products_16bit_results", i64(c.productsWith16BitResults));
    root.emplace("cast_points", std::move(casts));
  }
  // [{nameKey: axis, "size": n}, ...]: the strategy's axes under "mesh" (key "axis"), the
  // program's under "mesh_axes" (key "name").
  auto axisList = [](const std::vector<std::pair<std::string, int>> &axes, const char *nameKey) {
    Json list = Json::array();
    for (const auto &[axis, size] : axes) {
      Json e = Json::object();
      e.emplace(nameKey, str(axis));
      e.emplace("size", i64(size));
      list.push_back(std::move(e));
    }
    return list;
  };
  root.emplace("mesh", axisList(s.mesh, "axis"));
  root.emplace("mesh_axes", axisList(s.meshAxes, "name"));
  Json groups = Json::array();
  for (const PlanGroup &g : s.groups) {
    Json e = Json::object();
    e.emplace("name", str(g.name));
    e.emplace("axes", strings(g.axes));
    e.emplace("size", i64(g.size));
    Json members = Json::array();
    for (const std::vector<int> &ranks : g.members)
      members.push_back(rankArray(ranks));
    e.emplace("members", std::move(members));
    groups.push_back(std::move(e));
  }
  root.emplace("groups", std::move(groups));
  root.emplace("global_batch_rows", i64(s.globalBatchRows));
  root.emplace("parameters", parametersJson(s));
  Json totals = Json::object();
  totals.emplace("trained_tensors", u64(s.trainedTensors));
  totals.emplace("trained_elements", u64(s.trainedElements));
  totals.emplace("trained_split_tensors", u64(s.trainedSplitTensors));
  totals.emplace("trained_split_elements", u64(s.trainedSplitElements));
  totals.emplace("trained_replicated_elements", u64(s.trainedReplicatedElements));
  totals.emplace("trained_elements_per_rank", u64(s.trainedRankElements));
  totals.emplace("frozen_tensors", u64(s.frozenTensors));
  totals.emplace("frozen_elements", u64(s.frozenElements));
  root.emplace("parameter_totals", std::move(totals));
  Json memory = Json::array();
  for (const std::vector<int> &group : s.memoryGroups)
    memory.push_back(memoryJson(bundle, s, group));
  root.emplace("memory_per_rank", std::move(memory));
  root.emplace("zero_accounting", s.trainedElements > 0 ? zeroJson(s) : Json());
  root.emplace("communication", commJson(s));
  root.emplace("strategy_decision", strings(s.strategyDecision));
  root.emplace("tp_layout", strings(s.layoutDecisions));
  root.emplace("warnings", strings(s.warnings));
  Json programs = Json::array();
  for (const std::vector<int> &group : s.programGroups)
    programs.push_back(programJson(planProgramOfRank(bundle, s.ranks[group.front()].rank), group));
  root.emplace("programs", std::move(programs));
  // Names come from the model: a byte sequence that is not UTF-8 is written as U+FFFD rather
  // than failing the compile over a report.
  return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

} // namespace shardc
