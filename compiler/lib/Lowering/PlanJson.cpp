//===- PlanJson.cpp - plan.json ---------------------------------------------------------===//
//
// The plan as JSON (docs/plan-format.md, "plan.json"): the numbers of PlanSummary plus each
// distinct program's buffers and ops. Integers only (runtime/support/json.h writes no
// fractions); keys keep a fixed order so the file is reproducible byte for byte.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Lowering/Bundle.h"
#include "shardc/Lowering/PlanSummary.h"

#include "runtime/kernels/kernel.h"
#include "runtime/support/json.h"

namespace shardc {

namespace {

using runtime::JsonValue;

JsonValue u64(uint64_t v) { return JsonValue::unsignedInteger(v); }
JsonValue i64(int64_t v) { return JsonValue::integer(v); }
JsonValue str(const std::string &v) { return JsonValue::string(v); }

template <typename Range> JsonValue intArray(const Range &values) {
  JsonValue a = JsonValue::array();
  for (auto v : values)
    a.push(i64(static_cast<int64_t>(v)));
  return a;
}

JsonValue rankArray(const std::vector<int> &ranks) {
  JsonValue a = JsonValue::array();
  for (int r : ranks)
    a.push(i64(r));
  return a;
}

JsonValue strings(const std::vector<std::string> &lines) {
  JsonValue a = JsonValue::array();
  for (const std::string &line : lines)
    a.push(str(line));
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

JsonValue shardingJson(const PlanSharding &s, size_t dims) {
  JsonValue o = JsonValue::object();
  o.add("kind", str(shardingKind(s)));
  // One list per dim of the whole tensor: the mesh axes that cut it into blocks.
  JsonValue dimAxes = JsonValue::array();
  for (size_t i = 0; i < dims; ++i) {
    JsonValue axes = JsonValue::array();
    if (i < s.dimAxes.size())
      for (const std::string &axis : s.dimAxes[i])
        axes.push(str(axis));
    dimAxes.push(std::move(axes));
  }
  o.add("dim_axes", std::move(dimAxes));
  o.add("num_blocks", i64(s.numBlocks));
  o.add("block_groups", i64(s.blockGroups));
  o.add("block_elements", i64(s.blockElements));
  o.add("shard_axis", s.sharded ? str(s.shardAxis) : JsonValue());
  o.add("num_shards", i64(s.numShards));
  o.add("shard_elements", i64(s.shardElements));
  o.add("padding_elements", i64(s.paddingElements));
  o.add("text", str(s.text()));
  return o;
}

JsonValue tensorJson(const PlanTensor &t) {
  JsonValue o = JsonValue::object();
  o.add("name", str(t.name));
  o.add("global_shape", intArray(t.globalShape));
  o.add("elements", i64(t.elements));
  o.add("sharding", shardingJson(t.sharding, t.globalShape.size()));
  o.add("sharding_spec", str(t.sharding.spec()));
  o.add("bytes_per_rank", u64(t.bytesPerRank));
  return o;
}

JsonValue parametersJson(const PlanSummary &s) {
  JsonValue a = JsonValue::array();
  for (const PlanParameter &p : s.parameters) {
    JsonValue o = tensorJson(p.tensor);
    o.add("trained", JsonValue::boolean(p.trained));
    JsonValue states = JsonValue::array();
    for (const PlanTensor &state : p.optimizerState)
      states.push(tensorJson(state));
    o.add("optimizer_state", std::move(states));
    o.add("optimizer_state_bytes_per_rank", u64(p.optimizerStateBytesPerRank()));
    a.push(std::move(o));
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

JsonValue memoryJson(const program::Bundle &bundle, const PlanSummary &s,
                     const std::vector<int> &group) {
  const PlanRank &r = s.ranks[group.front()];
  const program::Program p = planProgramOfRank(bundle, r.rank);
  const runtime::PlannedMemory &m = r.memory;
  JsonValue o = JsonValue::object();
  o.add("ranks", rankArray(group));
  o.add("batch_rows", i64(r.batchRows));
  o.add("planned_peak_bytes", u64(r.plannedPeakBytes));
  JsonValue arena = JsonValue::object();
  arena.add("bytes", u64(m.arena));
  arena.add("peak_at", str(peakPointText(p, m.arenaPeakPoint)));
  arena.add("peak_op",
            i64(m.arenaPeakPoint >= 0 && m.arenaPeakPoint < p.ops_size() ? m.arenaPeakPoint : -1));
  JsonValue live = JsonValue::object();
  for (program::BufferRole role :
       {program::ROLE_PARAMETER, program::ROLE_GRADIENT, program::ROLE_OPTIMIZER_STATE,
        program::ROLE_INPUT, program::ROLE_ACTIVATION, program::ROLE_CONSTANT,
        program::ROLE_BUFFER, program::BUFFER_ROLE_UNSPECIFIED})
    live.add(roleKey(role), u64(m.arenaLiveByRole[static_cast<size_t>(role)]));
  arena.add("live_by_role", std::move(live));
  // The same bytes by role and element type: [{"role", "dtype", "bytes"}, ...].
  JsonValue byDtype = JsonValue::array();
  for (size_t role = 0; role < m.arenaLiveByRoleAndDtype.size(); ++role)
    for (auto [dtype, bytes] : m.arenaLiveByRoleAndDtype[role]) {
      JsonValue entry = JsonValue::object();
      entry.add("role", str(roleKey(static_cast<program::BufferRole>(role))));
      entry.add("dtype", str(runtime::dtypeName(dtype)));
      entry.add("bytes", u64(bytes));
      byDtype.push(std::move(entry));
    }
  arena.add("live_by_role_and_dtype", std::move(byDtype));
  arena.add("unused", u64(m.arenaUnused));
  o.add("arena", std::move(arena));
  JsonValue weights = JsonValue::object();
  weights.add("bytes", u64(m.weights));
  weights.add("parameters", u64(m.weightsParameters));
  weights.add("constants", u64(m.weightsConstants));
  weights.add("alignment", u64(m.weightsPadding));
  o.add("weights", std::move(weights));
  o.add("workspace_bytes", u64(m.workspace));
  o.add("workspace_op", i64(m.workspaceOp));
  o.add("step_inputs_bytes", u64(m.stepInputs));
  o.add("step_outputs_bytes", u64(m.stepOutputs));
  JsonValue state = JsonValue::object();
  state.add("trained_parameter_bytes", u64(r.modelState.trainedParameterBytes));
  state.add("frozen_parameter_bytes", u64(r.modelState.frozenParameterBytes));
  state.add("gradient_bytes", u64(r.modelState.gradientBytes));
  state.add("whole_gradient_bytes", u64(r.modelState.wholeGradientBytes));
  state.add("optimizer_state_bytes", u64(r.modelState.optimizerStateBytes));
  o.add("model_state", std::move(state));
  o.add("comm_bytes_sent", u64(r.comm.bytesSent));
  o.add("planned_comm_bytes", u64(r.comm.plannedBytes));
  return o;
}

JsonValue zeroJson(const PlanSummary &s) {
  const PlanZeroAccounting &z = s.zero;
  JsonValue o = JsonValue::object();
  o.add("psi", u64(z.psi));
  o.add("psi_split", u64(z.psiSplit));
  o.add("psi_replicated", u64(z.psiReplicated));
  o.add("psi_rank", u64(z.psiRank));
  o.add("tp_size", i64(z.tp));
  o.add("ranks", i64(z.ranks));
  o.add("stage", i64(z.stage));
  o.add("optimizer_state_bytes_per_element", u64(z.stateBytesPerElement));
  o.add("whole_optimizer_state_bytes", u64(z.wholeOptimizerStateBytes));
  o.add("mixed_precision", JsonValue::boolean(z.mixedPrecision));
  o.add("parameter_bytes_per_element", u64(z.parameterBytesPerElement));
  o.add("gradient_bytes_per_element", u64(z.gradientBytesPerElement));
  JsonValue stages = JsonValue::array();
  for (const PlanZeroStage &row : z.stages) {
    JsonValue r = JsonValue::object();
    r.add("stage", i64(row.stage));
    r.add("label", str(row.label));
    r.add("formula", str(row.formula));
    r.add("parameter_bytes", u64(row.parameterBytes));
    r.add("gradient_bytes", u64(row.gradientBytes));
    r.add("optimizer_state_bytes", u64(row.optimizerStateBytes));
    r.add("total_bytes", u64(row.totalBytes));
    stages.push(std::move(r));
  }
  o.add("formulas", std::move(stages));
  JsonValue actual = JsonValue::object();
  actual.add("parameter_bytes", u64(z.parameterBytes));
  actual.add("gradient_bytes", u64(z.gradientBytes));
  actual.add("optimizer_state_bytes", u64(z.optimizerStateBytes));
  actual.add("total_bytes", u64(z.totalBytes));
  o.add("actual", std::move(actual));
  JsonValue padding = JsonValue::object();
  padding.add("parameter_elements", i64(z.parameterPaddingElements));
  padding.add("gradient_elements", i64(z.gradientPaddingElements));
  padding.add("optimizer_state_elements", i64(z.optimizerStatePaddingElements));
  o.add("padding", std::move(padding));
  return o;
}

JsonValue commJson(const PlanSummary &s) {
  JsonValue o = JsonValue::object();
  if (s.ranks.empty())
    return o;
  const PlanComm &comm = s.ranks.front().comm;
  o.add("rank", i64(s.ranks.front().rank));
  JsonValue list = JsonValue::array();
  for (const PlanCollective &c : comm.collectives) {
    JsonValue e = JsonValue::object();
    e.add("op", i64(c.opIndex));
    e.add("name", str(c.name));
    e.add("kind", str(c.kind));
    e.add("group", str(c.group));
    e.add("num_ranks", i64(c.numRanks));
    e.add("bucket", c.bucket >= 0 ? i64(c.bucket) : JsonValue());
    e.add("unit", c.unit.empty() ? JsonValue() : str(c.unit));
    e.add("tensors", i64(c.tensors));
    e.add("elements", u64(c.elements));
    e.add("payload_elements", u64(c.payloadElements));
    e.add("payload_bytes", u64(c.payloadBytes));
    e.add("bytes_sent", u64(c.bytesSent));
    e.add("theory_bytes", u64(c.theoryBytes));
    list.push(std::move(e));
  }
  o.add("collectives", std::move(list));
  JsonValue totals = JsonValue::array();
  for (const PlanCommTotal &t : comm.totals) {
    JsonValue e = JsonValue::object();
    e.add("kind", str(t.kind));
    e.add("calls", u64(t.calls));
    e.add("elements", u64(t.elements));
    e.add("payload_bytes", u64(t.payloadBytes));
    e.add("bytes_sent", u64(t.bytesSent));
    totals.push(std::move(e));
  }
  o.add("totals", std::move(totals));
  // Group name -> bytes sent over it: a map, its keys are the program's group names.
  JsonValue byGroup = JsonValue::object();
  for (const PlanGroupComm &g : comm.byGroup)
    byGroup.add(g.group, u64(g.bytesSent));
  o.add("by_group", std::move(byGroup));
  JsonValue groupTotals = JsonValue::array();
  for (const PlanGroupComm &g : comm.byGroup)
    for (const PlanCommTotal &t : g.totals) {
      JsonValue e = JsonValue::object();
      e.add("group", str(g.group));
      e.add("num_ranks", i64(g.numRanks));
      e.add("kind", str(t.kind));
      e.add("calls", u64(t.calls));
      e.add("payload_bytes", u64(t.payloadBytes));
      e.add("theory_bytes", u64(t.theoryBytes));
      e.add("bytes_sent", u64(t.bytesSent));
      groupTotals.push(std::move(e));
    }
  o.add("group_totals", std::move(groupTotals));
  o.add("bytes_sent", u64(comm.bytesSent));
  o.add("planned_comm_bytes", u64(comm.plannedBytes));
  o.add("matches_plan", JsonValue::boolean(comm.matchesPlan()));
  JsonValue theory = JsonValue::object();
  theory.add("dp_all_reduce_bytes", u64(s.commTheory.dpAllReduceBytes));
  theory.add("stage_formula", str(s.commTheory.stageFormula));
  theory.add("stage_bytes", u64(s.commTheory.stageBytes));
  o.add("theory", std::move(theory));
  return o;
}

JsonValue bindingsJson(const google::protobuf::RepeatedPtrField<program::Binding> &bindings) {
  JsonValue a = JsonValue::array();
  for (const program::Binding &b : bindings) {
    JsonValue e = JsonValue::object();
    e.add("name", str(b.name()));
    e.add("buffer", i64(b.buffer()));
    e.add("in_place", JsonValue::boolean(b.in_place()));
    if (b.has_sharding()) {
      JsonValue sh = JsonValue::object();
      sh.add("global_shape", intArray(b.sharding().global_shape()));
      sh.add("num_shards", i64(b.sharding().num_shards()));
      sh.add("shard_elements", i64(b.sharding().shard_numel()));
      sh.add("block_dim", i64(b.sharding().block_dim()));
      sh.add("num_blocks", i64(b.sharding().num_blocks()));
      sh.add("block_groups", i64(std::max(b.sharding().block_groups(), 1)));
      sh.add("block_axis", i64(b.sharding().block_axis()));
      sh.add("shard_axis", i64(b.sharding().shard_axis()));
      e.add("sharding", std::move(sh));
    } else {
      e.add("sharding", JsonValue());
    }
    a.push(std::move(e));
  }
  return a;
}

JsonValue programJson(const program::Program &p, const std::vector<int> &group) {
  JsonValue o = JsonValue::object();
  o.add("ranks", rankArray(group));
  o.add("rank", i64(p.rank()));
  o.add("batch_begin", i64(p.batch_begin()));
  o.add("batch_rows", i64(p.batch_rows()));
  o.add("global_batch_rows", i64(p.global_batch_rows()));
  o.add("arena_bytes", u64(p.arena_bytes()));
  o.add("weights_bytes", u64(p.weights_bytes()));
  o.add("workspace_bytes", u64(p.workspace_bytes()));
  o.add("planned_peak_bytes", u64(p.planned_peak_bytes()));
  o.add("planned_comm_bytes", u64(p.planned_comm_bytes()));
  o.add("inputs", bindingsJson(p.inputs()));
  o.add("outputs", bindingsJson(p.outputs()));
  JsonValue buffers = JsonValue::array();
  for (int i = 0; i < p.buffers_size(); ++i) {
    const program::Buffer &b = p.buffers(i);
    JsonValue e = JsonValue::object();
    e.add("index", i64(i));
    e.add("name", str(b.name()));
    e.add("dtype", str(runtime::dtypeName(b.dtype())));
    e.add("shape", intArray(b.shape()));
    e.add("kind", str(kindKey(b.kind())));
    e.add("region", str(b.region() == program::WEIGHTS ? "weights" : "arena"));
    e.add("offset", u64(b.offset()));
    e.add("size_bytes", u64(b.size_bytes()));
    e.add("role", str(roleKey(b.role())));
    buffers.push(std::move(e));
  }
  o.add("buffers", std::move(buffers));
  JsonValue ops = JsonValue::array();
  for (int i = 0; i < p.ops_size(); ++i) {
    const program::Op &op = p.ops(i);
    JsonValue e = JsonValue::object();
    e.add("index", i64(i));
    e.add("kernel", str(op.kernel()));
    e.add("name", str(op.name()));
    e.add("inputs", intArray(op.inputs()));
    e.add("outputs", intArray(op.outputs()));
    ops.push(std::move(e));
  }
  o.add("ops", std::move(ops));
  return o;
}

} // namespace

std::string formatPlanJson(const program::Bundle &bundle, const PlanNotes &notes) {
  PlanSummary s = summarizePlan(bundle, notes);
  JsonValue root = JsonValue::object();
  root.add("format_version", i64(1));
  root.add("source_model", str(s.sourceModel));
  root.add("mode", str(s.mode));
  root.add("world_size", i64(s.worldSize));
  root.add("strategy", str(s.strategy));
  root.add("zero_stage", i64(s.zeroStage));
  root.add("micro_batches", i64(notes.microBatches));
  root.add("remat", strings(notes.remat));
  root.add("weights_present", JsonValue::boolean(s.weightsPresent));
  {
    const PlanCastPoints c =
        bundle.programs_size() > 0 ? castPointsOf(bundle.programs(0)) : PlanCastPoints();
    JsonValue casts = JsonValue::object();
    casts.add("roundings", i64(c.roundings));
    casts.add("parameter_roundings", i64(c.parameterRoundings));
    casts.add("widenings", i64(c.widenings));
    casts.add("products", i64(c.products));
    casts.add("products_16bit_operands", i64(c.productsWith16BitOperands));
    casts.add("products_16bit_results", i64(c.productsWith16BitResults));
    root.add("cast_points", std::move(casts));
  }
  // [{nameKey: axis, "size": n}, ...]: the strategy's axes under "mesh" (key "axis"), the
  // program's under "mesh_axes" (key "name").
  auto axisList = [](const std::vector<std::pair<std::string, int>> &axes, const char *nameKey) {
    JsonValue list = JsonValue::array();
    for (const auto &[axis, size] : axes) {
      JsonValue e = JsonValue::object();
      e.add(nameKey, str(axis));
      e.add("size", i64(size));
      list.push(std::move(e));
    }
    return list;
  };
  root.add("mesh", axisList(s.mesh, "axis"));
  root.add("mesh_axes", axisList(s.meshAxes, "name"));
  JsonValue groups = JsonValue::array();
  for (const PlanGroup &g : s.groups) {
    JsonValue e = JsonValue::object();
    e.add("name", str(g.name));
    e.add("axes", strings(g.axes));
    e.add("size", i64(g.size));
    JsonValue members = JsonValue::array();
    for (const std::vector<int> &ranks : g.members)
      members.push(rankArray(ranks));
    e.add("members", std::move(members));
    groups.push(std::move(e));
  }
  root.add("groups", std::move(groups));
  root.add("global_batch_rows", i64(s.globalBatchRows));
  root.add("parameters", parametersJson(s));
  JsonValue totals = JsonValue::object();
  totals.add("trained_tensors", u64(s.trainedTensors));
  totals.add("trained_elements", u64(s.trainedElements));
  totals.add("trained_split_tensors", u64(s.trainedSplitTensors));
  totals.add("trained_split_elements", u64(s.trainedSplitElements));
  totals.add("trained_replicated_elements", u64(s.trainedReplicatedElements));
  totals.add("trained_elements_per_rank", u64(s.trainedRankElements));
  totals.add("frozen_tensors", u64(s.frozenTensors));
  totals.add("frozen_elements", u64(s.frozenElements));
  root.add("parameter_totals", std::move(totals));
  JsonValue memory = JsonValue::array();
  for (const std::vector<int> &group : s.memoryGroups)
    memory.push(memoryJson(bundle, s, group));
  root.add("memory_per_rank", std::move(memory));
  root.add("zero_accounting", s.trainedElements > 0 ? zeroJson(s) : JsonValue());
  root.add("communication", commJson(s));
  root.add("strategy_decision", strings(s.strategyDecision));
  root.add("tp_layout", strings(s.layoutDecisions));
  root.add("warnings", strings(s.warnings));
  JsonValue programs = JsonValue::array();
  for (const std::vector<int> &group : s.programGroups)
    programs.push(programJson(planProgramOfRank(bundle, s.ranks[group.front()].rank), group));
  root.add("programs", std::move(programs));
  return runtime::writeJsonPretty(root);
}

} // namespace shardc
