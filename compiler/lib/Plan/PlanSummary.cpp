//===- PlanSummary.cpp - the numbers behind plan.txt and plan.json -----------------------===//
#include "shardc/Plan/PlanSummary.h"
#include "shardc/Lowering/RankPrograms.h"
#include "shardc/Parallel/ParallelStrategy.h"

#include "runtime/common/comm_cost.h"
#include "runtime/common/mesh.h"
#include "runtime/common/sharded_tensor.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/kernel_traits.h"
#include "runtime/loader/op_workspace.h"
#include "runtime/loader/rank_program.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

namespace shardc {

namespace {

constexpr uint64_t kF32Bytes = 4;

bool validBuffer(const program::Program &p, int64_t id) { return id >= 0 && id < p.buffers_size(); }

uint64_t numel(const google::protobuf::RepeatedField<int64_t> &shape) {
  uint64_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
  return n;
}

uint64_t bufferNumel(const program::Program &p, int id) {
  return validBuffer(p, id) ? numel(p.buffers(id).shape()) : 0;
}

// Bytes per element of buffer `id` (0 for an unknown dtype).
uint64_t bufferElementBytes(const program::Program &p, int id) {
  return validBuffer(p, id) ? runtime::dtypeSize(p.buffers(id).dtype()) : 0;
}

uint64_t bufferBytes(const program::Program &p, int id) {
  return validBuffer(p, id) ? p.buffers(id).size_bytes() : 0;
}

bool isOptimizerKernel(const std::string &kernel) {
  return runtime::kernelHasTrait(kernel, runtime::kOptimizerUpdateKernel);
}

// The strategy the bundle records (Bundle.strategy, ParallelStrategy::canonical()), read by
// the command line's parser for the bundle's world; none when absent (one rank) or not a
// strategy of this world.
std::optional<ParallelStrategy> recordedStrategy(const std::string &text, int worldSize) {
  ParallelStrategy strategy;
  if (text.empty() || parseStrategy(text, worldSize, strategy) || strategy.automatic)
    return std::nullopt;
  return strategy;
}

// The name of mesh axis `axis` of `p`, for the sharding specs.
std::string axisName(const program::Program &p, int axis) {
  if (axis >= 0 && axis < p.mesh_axes_size())
    return p.mesh_axes(axis).name();
  return "axis " + std::to_string(axis);
}

// The axis a ZeRO flat shard spans (program.proto, Sharding.shard_axis): without a mesh the
// world, which is the dp axis; -1 the whole world.
std::string shardAxisName(const program::Program &p, int axis) {
  if (p.mesh_axes_size() == 0)
    return "dp";
  return axis == -1 ? "world" : axisName(p, axis);
}

PlanTensor tensorOf(const program::Program &p, const program::Binding &binding) {
  PlanTensor t;
  t.name = binding.name();
  const bool valid = validBuffer(p, binding.buffer());
  t.bytesPerRank = valid ? p.buffers(binding.buffer()).size_bytes() : 0;
  const program::Sharding *s = binding.has_sharding() ? &binding.sharding() : nullptr;
  const bool blocked = s && s->num_blocks() > 1, flat = s && s->num_shards() > 1;
  // The buffer holds the rank's part; the whole tensor's shape is the sharding's.
  if (blocked || flat) {
    t.globalShape.assign(s->global_shape().begin(), s->global_shape().end());
    t.elements = static_cast<int64_t>(numel(s->global_shape()));
  } else if (valid) {
    const program::Buffer &b = p.buffers(binding.buffer());
    t.globalShape.assign(b.shape().begin(), b.shape().end());
    t.elements = static_cast<int64_t>(numel(b.shape()));
  }
  PlanSharding &sh = t.sharding;
  sh.blockElements = t.elements;
  if (blocked) {
    // Equal blocks along block_dim (padded first when it has padded_dim_size): the rank's
    // block is the buffer's.
    sh.numBlocks = s->num_blocks();
    sh.blockElements = runtime::blockNumelOf(*s);
    sh.dimAxes.assign(t.globalShape.size(), {});
    if (s->block_dim() >= 0 && s->block_dim() < static_cast<int>(t.globalShape.size()))
      sh.dimAxes[s->block_dim()].push_back(axisName(p, s->block_axis()));
    sh.blockGroups = std::max(s->block_groups(), 1);
    sh.paddedDimSize = s->padded_dim_size();
  }
  if (flat) {
    sh.sharded = true;
    sh.shardAxis = shardAxisName(p, s->shard_axis());
    sh.numShards = s->num_shards();
    sh.shardElements = s->shard_numel();
    sh.paddingElements =
        static_cast<int64_t>(s->num_shards()) * s->shard_numel() - sh.blockElements;
  } else {
    sh.shardElements = sh.blockElements;
  }
  return t;
}

PlanTensor tensorOf(const program::Buffer &b) {
  PlanTensor t;
  t.name = b.name();
  t.globalShape.assign(b.shape().begin(), b.shape().end());
  t.elements = static_cast<int64_t>(numel(b.shape()));
  t.sharding.blockElements = t.elements;
  t.sharding.shardElements = t.elements;
  t.bytesPerRank = b.size_bytes();
  return t;
}

// The trained parameter an optimizer-state input belongs to: the longest parameter name P with
// state == P + "." + slot; -1 when none.
int ownerOf(const std::string &state, const std::vector<PlanParameter> &params) {
  int best = -1;
  size_t bestLength = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string &name = params[i].tensor.name;
    if (params[i].trained && state.size() > name.size() + 1 &&
        state.compare(0, name.size(), name) == 0 && state[name.size()] == '.' &&
        name.size() >= bestLength) {
      best = static_cast<int>(i);
      bestLength = name.size();
    }
  }
  return best;
}

// Which op (and which of its results) writes each buffer.
std::vector<std::pair<int, int>> producers(const program::Program &p) {
  std::vector<std::pair<int, int>> producer(p.buffers_size(), {-1, -1});
  for (int i = 0; i < p.ops_size(); ++i)
    for (int j = 0; j < p.ops(i).outputs_size(); ++j)
      if (validBuffer(p, p.ops(i).outputs(j)))
        producer[p.ops(i).outputs(j)] = {i, j};
  return producer;
}

// The gradient an optimizer op reads, followed back through scale_by_clip to the reduce_scatter
// that made it a shard: (whole gradient bytes, padding elements over all ranks).
std::pair<uint64_t, int64_t> wholeGradient(const program::Program &p,
                                           const std::vector<std::pair<int, int>> &producer,
                                           int grad) {
  int current = grad;
  for (int hops = 0; hops < 4 && validBuffer(p, current); ++hops) {
    auto [opIndex, result] = producer[current];
    if (opIndex < 0)
      break;
    const program::Op &op = p.ops(opIndex);
    if (runtime::kernelHasTrait(op.kernel(), runtime::kGradientClipKernel) &&
        op.inputs_size() > 0) {
      current = op.inputs(0);
      continue;
    }
    runtime::CollectiveKind collective;
    if (runtime::collectiveOfKernel(op.kernel(), &collective) &&
        collective == runtime::CollectiveKind::ReduceScatter && result < op.inputs_size()) {
      const int whole = op.inputs(result);
      const uint64_t n = bufferNumel(p, whole), k = bufferNumel(p, current);
      auto ranks = op.attrs().find("num_ranks");
      const int64_t numRanks = ranks != op.attrs().end() ? ranks->second.i() : 1;
      return {bufferBytes(p, whole), static_cast<int64_t>(k) * numRanks - static_cast<int64_t>(n)};
    }
    break;
  }
  return {bufferBytes(p, grad), 0};
}

PlanModelState modelStateOf(const program::Program &p) {
  PlanModelState s;
  for (const program::Binding &b : p.inputs()) {
    if (!validBuffer(p, b.buffer()))
      continue;
    const program::Buffer &buf = p.buffers(b.buffer());
    if (buf.role() == program::ROLE_PARAMETER)
      s.trainedParameterBytes += buf.size_bytes();
    else if (buf.role() == program::ROLE_OPTIMIZER_STATE)
      s.optimizerStateBytes += buf.size_bytes();
  }
  for (const program::Buffer &buf : p.buffers())
    if (buf.kind() == program::PARAMETER)
      s.frozenParameterBytes += buf.size_bytes();
  std::vector<std::pair<int, int>> producer = producers(p);
  for (const program::Op &op : p.ops()) {
    if (!isOptimizerKernel(op.kernel()) || op.inputs_size() < 2 || !validBuffer(p, op.inputs(1)))
      continue;
    s.gradientBytes += bufferBytes(p, op.inputs(1));
    s.wholeGradientBytes += wholeGradient(p, producer, op.inputs(1)).first;
  }
  return s;
}

bool collectiveKind(const std::string &kernel, runtime::CollectiveKind *kind) {
  for (int k = 0; k < runtime::kCollectiveKinds; ++k) {
    auto candidate = static_cast<runtime::CollectiveKind>(k);
    if (kernel == runtime::collectiveName(candidate)) {
      *kind = candidate;
      return true;
    }
  }
  return false;
}

// The ring algorithms' bytes one rank sends for a payload of `payloadBytes` over `ranks`:
// all-reduce 2S(n−1)/n (a reduce-scatter then an all-gather), reduce-scatter, all-gather and
// all-to-all S(n−1)/n (for the all-to-all, S is this rank's buffer). The payload is padded to a multiple of n floats, so the division is exact.
uint64_t ringTheoryBytes(const std::string &kind, uint64_t payloadBytes, int ranks) {
  if (ranks <= 1 || kind == "shard_slice")
    return 0;
  const uint64_t n = static_cast<uint64_t>(ranks), passes = kind == "all_reduce" ? 2 : 1;
  return passes * payloadBytes * (n - 1) / n;
}

constexpr const char *kKindOrder[] = {"all_reduce", "reduce_scatter", "all_gather", "all_to_all",
                                      "shard_slice"};

// The totals per kind of the collectives that `keep` selects, in kKindOrder.
template <typename Keep>
std::vector<PlanCommTotal> totalsByKind(const std::vector<PlanCollective> &collectives, Keep keep) {
  std::vector<PlanCommTotal> totals;
  for (const char *kind : kKindOrder) {
    PlanCommTotal total;
    total.kind = kind;
    for (const PlanCollective &c : collectives)
      if (c.kind == kind && keep(c)) {
        ++total.calls;
        total.elements += c.elements;
        total.payloadBytes += c.payloadBytes;
        total.bytesSent += c.bytesSent;
        total.theoryBytes += c.theoryBytes;
      }
    if (total.calls > 0)
      totals.push_back(total);
  }
  return totals;
}

PlanComm commOf(const program::Program &p, int worldSize) {
  PlanComm comm;
  comm.plannedBytes = p.planned_comm_bytes();
  const bool hasMesh = p.mesh_axes_size() > 0;
  // Without a mesh every collective runs over the world, which is the dp axis.
  const std::string ungrouped = hasMesh ? "world" : "dp";
  for (int i = 0; i < p.ops_size(); ++i) {
    const program::Op &op = p.ops(i);
    runtime::CollectiveKind kind = runtime::CollectiveKind::AllReduce;
    const bool communicates = collectiveKind(op.kernel(), &kind);
    if (!communicates && op.kernel() != "shard_slice")
      continue;
    PlanCollective c;
    c.opIndex = i;
    c.name = op.name();
    c.kind = op.kernel();
    c.group = ungrouped;
    int groupSize = worldSize;
    if (auto group = op.attrs().find("group"); group != op.attrs().end()) {
      const int64_t index = group->second.i();
      if (index >= 0 && index < p.groups_size()) {
        c.group = p.groups(static_cast<int>(index)).name();
        groupSize = p.groups(static_cast<int>(index)).ranks_size();
      } else {
        c.group = "group " + std::to_string(index);
      }
    }
    auto attr = op.attrs().find("num_ranks");
    c.numRanks = attr != op.attrs().end() ? static_cast<int>(attr->second.i()) : groupSize;
    if (c.numRanks < 1)
      c.numRanks = 1;
    if (auto bucket = op.attrs().find("bucket"); bucket != op.attrs().end())
      c.bucket = bucket->second.i();
    if (auto unit = op.attrs().find("unit"); unit != op.attrs().end())
      c.unit = unit->second.s();
    c.tensors = op.inputs_size();
    const auto &wholes = c.kind == "all_gather" ? op.outputs() : op.inputs();
    const auto &shards = c.kind == "all_gather" ? op.inputs() : op.outputs();
    for (int b : wholes)
      c.elements += bufferNumel(p, b);
    if (communicates) {
      if (kind == runtime::CollectiveKind::AllReduce) {
        // One dtype per reduction (the kernel refuses more).
        c.payloadElements = runtime::paddedToRanks(c.elements, c.numRanks);
        c.payloadBytes = c.payloadElements * bufferElementBytes(p, wholes.empty() ? -1 : wholes[0]);
      } else if (kind == runtime::CollectiveKind::AllToAll) {
        // This rank's buffer, a piece of it for every rank (its own piece stays).
        c.payloadElements = c.elements;
        for (int b : wholes)
          c.payloadBytes += bufferNumel(p, b) * bufferElementBytes(p, b);
      } else {
        uint64_t shardTotal = 0, shardBytes = 0;
        for (int b : shards) {
          shardTotal += bufferNumel(p, b);
          shardBytes += bufferNumel(p, b) * bufferElementBytes(p, b);
        }
        c.payloadElements = shardTotal * static_cast<uint64_t>(c.numRanks);
        c.payloadBytes = shardBytes * static_cast<uint64_t>(c.numRanks);
      }
      // Each op with its own group's size: what the runtime's communicator of that group sends
      // (the same count as the program's planned_comm_bytes).
      c.bytesSent = opCollectiveBytesSent(p, op, c.numRanks);
      c.theoryBytes = ringTheoryBytes(c.kind, c.payloadBytes, c.numRanks);
    }
    comm.bytesSent += c.bytesSent;
    comm.collectives.push_back(std::move(c));
  }
  comm.totals = totalsByKind(comm.collectives, [](const PlanCollective &) { return true; });

  // By group: every group of the program, then the collectives over the world.
  std::vector<std::pair<std::string, int>> groups;
  for (const program::CommGroup &g : p.groups())
    groups.push_back({g.name(), g.ranks_size()});
  for (const PlanCollective &c : comm.collectives)
    if (std::none_of(groups.begin(), groups.end(),
                     [&](const std::pair<std::string, int> &g) { return g.first == c.group; }))
      groups.push_back({c.group, c.numRanks});
  for (const auto &[name, size] : groups) {
    PlanGroupComm g;
    g.group = name;
    g.numRanks = size;
    g.totals = totalsByKind(comm.collectives,
                            [&name = name](const PlanCollective &c) { return c.group == name; });
    for (const PlanCommTotal &t : g.totals) {
      g.calls += t.calls;
      g.bytesSent += t.bytesSent;
      g.theoryBytes += t.theoryBytes;
    }
    comm.byGroup.push_back(std::move(g));
  }
  return comm;
}

bool sameMemory(const runtime::PlannedMemory &a, const runtime::PlannedMemory &b) {
  return a.arena == b.arena && a.arenaPeakPoint == b.arenaPeakPoint &&
         a.arenaLiveByRole == b.arenaLiveByRole &&
         a.arenaLiveByRoleAndDtype == b.arenaLiveByRoleAndDtype && a.arenaLive == b.arenaLive &&
         a.arenaUnused == b.arenaUnused && a.weights == b.weights &&
         a.weightsParameters == b.weightsParameters &&
         a.weightsConstants == b.weightsConstants && a.weightsPadding == b.weightsPadding &&
         a.workspace == b.workspace && a.workspaceOp == b.workspaceOp &&
         a.stepInputs == b.stepInputs && a.stepOutputs == b.stepOutputs && a.total == b.total;
}

bool sameNumbers(const PlanRank &a, const PlanRank &b) {
  return a.batchRows == b.batchRows && a.plannedPeakBytes == b.plannedPeakBytes &&
         sameMemory(a.memory, b.memory) && a.modelState == b.modelState &&
         a.comm.bytesSent == b.comm.bytesSent && a.comm.plannedBytes == b.comm.plannedBytes;
}

// The program without what differs between ranks that run the same step: the rank, its batch
// rows, its part of the initial parameters and its place in the mesh (its coordinate and the
// ranks of its groups; the groups' names and axes stay).
program::Program comparable(const program::Program &p) {
  program::Program q = p;
  q.clear_rank();
  q.clear_batch_begin();
  q.clear_state_init();
  q.clear_mesh_coordinate();
  for (program::CommGroup &g : *q.mutable_groups())
    g.clear_ranks();
  return q;
}

// Groups indices 0..n-1 by an equivalence, keeping first-appearance order.
template <typename Same> std::vector<std::vector<int>> groupBy(int n, Same same) {
  std::vector<std::vector<int>> groups;
  for (int i = 0; i < n; ++i) {
    bool placed = false;
    for (std::vector<int> &g : groups)
      if (same(g.front(), i)) {
        g.push_back(i);
        placed = true;
        break;
      }
    if (!placed)
      groups.push_back({i});
  }
  return groups;
}

uint64_t ceilDiv(uint64_t a, uint64_t b) { return b == 0 ? a : (a + b - 1) / b; }

std::string psiTerm(uint64_t coefficient, bool perRank, const std::string &psi) {
  return std::to_string(coefficient) + psi + (perRank ? "/N" : "");
}

// "8Ψ + 8Ψ/N" from the replicated and the sharded bytes per element; "O" stands for the
// optimizer state when it is not a whole number of bytes per element.
std::string formulaText(uint64_t replicated, uint64_t sharded, bool stateReplicated,
                        bool stateSharded, const std::string &psi) {
  std::string r = replicated ? psiTerm(replicated, false, psi) : "";
  if (stateReplicated)
    r += r.empty() ? "O" : " + O";
  std::string s = sharded ? psiTerm(sharded, true, psi) : "";
  if (stateSharded)
    s = s.empty() ? "O/N" : "(" + std::to_string(sharded) + psi + " + O)/N";
  if (r.empty())
    return s.empty() ? "0" : s;
  return s.empty() ? r : r + " + " + s;
}

// The buffers of the trained parameters `p` takes as inputs (or their ZeRO shards).
std::set<int> trainedParameterBuffers(const program::Program &p) {
  std::set<int> buffers;
  for (const program::Binding &b : p.inputs())
    if (validBuffer(p, b.buffer()) && p.buffers(b.buffer()).role() == program::ROLE_PARAMETER)
      buffers.insert(b.buffer());
  return buffers;
}

// Mixed precision: the bytes of the working copies rank 0's program makes of the trained
// parameters for the products. At stages 1 and 2 the whole copies its start-of-step gathers
// (parameters/...) produce; at stage 3 the shards its forward gathers (forward/<unit>) take,
// 16-bit where the products round them; otherwise (one rank, plain DP) the 16-bit casts of the
// parameters, followed through copies and transposes.
uint64_t workingCopyBytes(const program::Program &p, int stage) {
  uint64_t bytes = 0;
  auto startsWith = [](const std::string &s, const char *prefix) { return s.rfind(prefix, 0) == 0; };
  if (stage >= 1) {
    for (const program::Op &op : p.ops()) {
      if (op.kernel() != "all_gather")
        continue;
      if (stage <= 2 && startsWith(op.name(), "parameters/"))
        for (int b : op.outputs())
          bytes += bufferBytes(p, b);
      if (stage >= 3 && startsWith(op.name(), "forward/"))
        for (int b : op.inputs())
          bytes += bufferBytes(p, b);
    }
    return bytes;
  }
  std::set<int> fromParameters = trainedParameterBuffers(p);
  for (const program::Op &op : p.ops()) {
    if (op.inputs_size() != 1 || op.outputs_size() != 1 || !fromParameters.count(op.inputs(0)))
      continue;
    const int out = op.outputs(0);
    if (runtime::kernelHasTrait(op.kernel(), runtime::kRearrangesValuesKernel))
      fromParameters.insert(out);
    else if (runtime::kernelHasTrait(op.kernel(), runtime::kConvertsDtypeKernel) && validBuffer(p, out) &&
             runtime::dtypeSize(p.buffers(out).dtype()) == 2)
      bytes += bufferBytes(p, out);
  }
  return bytes;
}

void addZeroAccounting(PlanSummary &s, const program::Program &rank0, const PlanNotes &notes) {
  PlanZeroAccounting &z = s.zero;
  z.mixedPrecision = notes.mixedPrecision;
  z.parameterBytesPerElement = z.mixedPrecision ? 2 : kF32Bytes;
  z.gradientBytesPerElement = z.mixedPrecision ? notes.reducedGradientBytes : kF32Bytes;
  z.psi = s.trainedElements;
  z.psiSplit = s.trainedSplitElements;
  z.psiReplicated = s.trainedReplicatedElements;
  z.psiRank = s.trainedRankElements;
  z.tp = s.axisSize("tp");
  // With a mesh the formulas count what one rank holds of the tp-split parameters; the plain
  // Ψ of data parallelism keeps its name.
  z.psiName = s.hasMesh() ? "Ψ_rank" : "Ψ";
  // ZeRO shards over the dp axis (the world without a mesh).
  z.ranks = s.hasMesh() ? s.axisSize("dp") : s.worldSize;
  z.stage = s.zeroStage;
  // The optimizer state before ZeRO: one tp block of each state tensor.
  for (const PlanParameter &param : s.parameters)
    for (const PlanTensor &state : param.optimizerState)
      z.wholeOptimizerStateBytes += static_cast<uint64_t>(state.sharding.blockElements) * kF32Bytes;
  // Optimizer state that matches no parameter still counts.
  for (const program::Binding &b : rank0.inputs()) {
    if (!validBuffer(rank0, b.buffer()) ||
        rank0.buffers(b.buffer()).role() != program::ROLE_OPTIMIZER_STATE ||
        ownerOf(b.name(), s.parameters) >= 0)
      continue;
    z.wholeOptimizerStateBytes +=
        static_cast<uint64_t>(tensorOf(rank0, b).sharding.blockElements) * kF32Bytes;
  }
  // Mixed precision: the f32 master weights are optimizer state.
  if (z.mixedPrecision)
    z.wholeOptimizerStateBytes += kF32Bytes * z.psiRank;
  const bool stateDivides = z.psiRank > 0 && z.wholeOptimizerStateBytes % z.psiRank == 0;
  z.stateBytesPerElement = stateDivides ? z.wholeOptimizerStateBytes / z.psiRank : 0;
  const uint64_t n = static_cast<uint64_t>(std::max(1, z.ranks));
  const uint64_t paramWhole = z.parameterBytesPerElement * z.psiRank;
  const uint64_t gradWhole = z.gradientBytesPerElement * z.psiRank;
  const uint64_t stateWhole = z.wholeOptimizerStateBytes;
  const char *labels[] = {"DP (ZeRO-0)", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
  for (int stage = 0; stage <= 3; ++stage) {
    PlanZeroStage row;
    row.stage = stage;
    row.label = labels[stage];
    const bool paramSharded = stage >= 3, gradSharded = stage >= 2, stateSharded = stage >= 1;
    row.parameterBytes = paramSharded ? ceilDiv(paramWhole, n) : paramWhole;
    row.gradientBytes = gradSharded ? ceilDiv(gradWhole, n) : gradWhole;
    row.optimizerStateBytes = stateSharded ? ceilDiv(stateWhole, n) : stateWhole;
    row.totalBytes = row.parameterBytes + row.gradientBytes + row.optimizerStateBytes;
    uint64_t replicated = 0, sharded = 0;
    (paramSharded ? sharded : replicated) += z.parameterBytesPerElement;
    (gradSharded ? sharded : replicated) += z.gradientBytesPerElement;
    if (stateDivides)
      (stateSharded ? sharded : replicated) += z.stateBytesPerElement;
    row.formula = formulaText(replicated, sharded, !stateDivides && !stateSharded,
                              !stateDivides && stateSharded && stateWhole > 0, z.psiName);
    z.stages.push_back(row);
  }
  if (!s.ranks.empty()) {
    const PlanModelState &m = s.ranks.front().modelState;
    z.parameterBytes =
        z.mixedPrecision ? workingCopyBytes(rank0, z.stage) : m.trainedParameterBytes;
    // Stages 0 and 1 keep whole gradients until they are reduced; 2 and 3 only the shards.
    z.gradientBytes = z.stage <= 1 ? m.wholeGradientBytes : m.gradientBytes;
    z.optimizerStateBytes =
        m.optimizerStateBytes + (z.mixedPrecision ? m.trainedParameterBytes : 0);
    z.totalBytes = z.parameterBytes + z.gradientBytes + z.optimizerStateBytes;
  }
  for (const PlanParameter &param : s.parameters) {
    if (!param.trained)
      continue;
    z.parameterPaddingElements += param.tensor.sharding.paddingElements;
    for (const PlanTensor &state : param.optimizerState)
      z.optimizerStatePaddingElements += state.sharding.paddingElements;
  }
  if (z.stage >= 2) {
    std::vector<std::pair<int, int>> producer = producers(rank0);
    for (const program::Op &op : rank0.ops())
      if (isOptimizerKernel(op.kernel()) && op.inputs_size() >= 2 &&
          validBuffer(rank0, op.inputs(1)))
        z.gradientPaddingElements += wholeGradient(rank0, producer, op.inputs(1)).second;
  }

  PlanCommTheory &t = s.commTheory;
  // 2Ψ·4(N−1)/N and 3Ψ·4(N−1)/N, rounded to the nearest byte.
  t.dpAllReduceBytes = (2 * kF32Bytes * z.psiRank * (n - 1) + n / 2) / n;
  if (z.stage >= 3) {
    t.stageBytes = (3 * kF32Bytes * z.psiRank * (n - 1) + n / 2) / n;
    t.stageFormula = "3" + z.psiName + "·4(N−1)/N";
  } else {
    t.stageBytes = t.dpAllReduceBytes;
    t.stageFormula = "2" + z.psiName + "·4(N−1)/N";
  }
}

// The groups of rank `rank` (their ranks listed): a placed bundle's follow from the rank's
// place on the mesh (only the mesh and the groups are placed, not the whole program).
std::vector<program::CommGroup> groupsOfRank(const program::Bundle &bundle, int rank) {
  const int index = runtime::programIndexOfRank(bundle, rank);
  if (index < 0)
    return {};
  const program::Program &p = bundle.programs(index);
  program::Program mesh;
  if (runtime::isPlacedBundle(bundle)) {
    mesh.set_world_size(p.world_size());
    *mesh.mutable_mesh_axes() = p.mesh_axes();
    *mesh.mutable_groups() = p.groups();
    if (runtime::placeOnMesh(rank, &mesh).isOk())
      return {mesh.groups().begin(), mesh.groups().end()};
  }
  return {p.groups().begin(), p.groups().end()};
}

// Every group of every rank, by name in rank 0's order: the distinct rank lists.
std::vector<PlanGroup> groupsOf(const program::Bundle &bundle) {
  std::vector<PlanGroup> groups;
  for (int rank = 0; rank < bundle.world_size(); ++rank)
    for (const program::CommGroup &g : groupsOfRank(bundle, rank)) {
      const program::Program &p = bundle.programs(runtime::programIndexOfRank(bundle, rank));
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const PlanGroup &known) { return known.name == g.name(); });
      if (it == groups.end()) {
        PlanGroup group;
        group.name = g.name();
        for (int axis : g.mesh_axes())
          group.axes.push_back(axisName(p, axis));
        group.size = g.ranks_size();
        groups.push_back(std::move(group));
        it = groups.end() - 1;
      }
      std::vector<int> ranks(g.ranks().begin(), g.ranks().end());
      if (std::find(it->members.begin(), it->members.end(), ranks) == it->members.end())
        it->members.push_back(std::move(ranks));
    }
  for (PlanGroup &g : groups)
    std::sort(g.members.begin(), g.members.end());
  return groups;
}

// "[{tp}, {}]": the mesh axes splitting each dim ("3x{tp}": a strided split, each of 3 equal
// groups of the dim split on tp); "" when the tensor is not cut into blocks.
std::string blockSpec(const PlanSharding &s) {
  if (!s.blocked())
    return "";
  std::string out = "[";
  for (size_t i = 0; i < s.dimAxes.size(); ++i) {
    out += i ? ", " : "";
    if (s.blockGroups > 1 && !s.dimAxes[i].empty())
      out += std::to_string(s.blockGroups) + "x"; // each of the groups split on the axes
    out += "{";
    for (size_t j = 0; j < s.dimAxes[i].size(); ++j)
      out += (j ? ", " : "") + s.dimAxes[i][j];
    out += "}";
  }
  return out + "]";
}

} // namespace

std::string PlanSharding::spec() const {
  std::string out = blockSpec(*this);
  if (sharded)
    out += (out.empty() ? "flat/" : " + flat/") + shardAxis;
  return out.empty() ? "replicated" : out;
}

std::string PlanSharding::text() const {
  std::string flat = sharded ? "flat_shard " + std::to_string(shardElements) + "/" +
                                   std::to_string(numShards) + ", padding " +
                                   std::to_string(paddingElements) + " elements"
                             : "";
  std::string blocks = blockSpec(*this);
  if (blocks.empty())
    return sharded ? flat : "replicated";
  return sharded ? blocks + " + " + flat : blocks;
}

int PlanSummary::axisSize(const std::string &name) const {
  for (const auto &[axis, size] : mesh)
    if (axis == name)
      return size;
  return 1;
}

uint64_t PlanParameter::optimizerStateBytesPerRank() const {
  uint64_t bytes = 0;
  for (const PlanTensor &state : optimizerState)
    bytes += state.bytesPerRank;
  return bytes;
}

bool PlanModelState::operator==(const PlanModelState &o) const {
  return trainedParameterBytes == o.trainedParameterBytes &&
         frozenParameterBytes == o.frozenParameterBytes && gradientBytes == o.gradientBytes &&
         wholeGradientBytes == o.wholeGradientBytes && optimizerStateBytes == o.optimizerStateBytes;
}

std::string formatRankSet(const std::vector<int> &ranks) {
  std::string out;
  size_t i = 0;
  int runs = 0;
  bool plural = ranks.size() > 1;
  while (i < ranks.size()) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    out += runs++ ? ", " : "";
    out += std::to_string(ranks[i]);
    if (j > i)
      out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return (plural ? "ranks " : "rank ") + out;
}

program::Program planProgramOfRank(const program::Bundle &bundle, int rank) {
  program::Program p;
  if (runtime::programOfRank(bundle, rank, &p).isOk())
    return p;
  const int index = runtime::programIndexOfRank(bundle, rank);
  return index >= 0 ? bundle.programs(index) : program::Program();
}

PlanCastPoints castPointsOf(const program::Program &p) {
  PlanCastPoints points;
  auto halfBuffer = [&](int b) {
    return validBuffer(p, b) && (p.buffers(b).dtype() == program::BF16 ||
                                 p.buffers(b).dtype() == program::F16);
  };
  const std::set<int> parameters = trainedParameterBuffers(p);
  for (const program::Op &op : p.ops()) {
    if (runtime::kernelHasTrait(op.kernel(), runtime::kConvertsDtypeKernel) &&
        op.inputs_size() == 1 && op.outputs_size() == 1) {
      const int in = op.inputs(0), out = op.outputs(0);
      if (halfBuffer(out) && validBuffer(p, in) && p.buffers(in).dtype() == program::F32) {
        ++points.roundings;
        points.parameterRoundings += parameters.count(in) ? 1 : 0;
      } else if (halfBuffer(in) && validBuffer(p, out) &&
                 p.buffers(out).dtype() == program::F32) {
        ++points.widenings;
      }
    }
    if (runtime::kernelHasTrait(op.kernel(), runtime::kMatrixProductKernel)) {
      ++points.products;
      bool halfOperand = false;
      for (int i = 0; i < std::min(2, op.inputs_size()); ++i)
        halfOperand |= halfBuffer(op.inputs(i));
      points.productsWith16BitOperands += halfOperand ? 1 : 0;
      points.productsWith16BitResults += op.outputs_size() > 0 && halfBuffer(op.outputs(0));
    }
  }
  return points;
}

PlanSummary summarizePlan(const program::Bundle &bundle, const PlanNotes &notes) {
  PlanSummary s;
  s.sourceModel = bundle.source_model();
  s.mode = bundle.mode();
  s.strategy = bundle.strategy();
  s.worldSize = std::max(1, bundle.world_size());
  s.weightsPresent = !bundle.weights_file().empty();
  s.strategyDecision = notes.strategyDecision;
  s.layoutDecisions = notes.layoutDecisions;
  s.reshardings = notes.reshardings;
  s.pipeline = notes.pipeline;
  const std::optional<ParallelStrategy> recorded = recordedStrategy(s.strategy, s.worldSize);
  s.sequenceParallel = recorded && recorded->sequenceParallel;
  if (bundle.programs_size() > 0)
    for (const program::MeshAxis &axis : bundle.programs(0).mesh_axes())
      s.meshAxes.push_back({axis.name(), axis.size()});
  // The strategy's sizes, else the mesh's; without either, data parallelism over the world.
  auto meshSize = [&](const std::string &name, int fallback) {
    for (const auto &[axis, size] : s.meshAxes)
      if (axis == name)
        return size;
    return fallback;
  };
  const int tp = recorded ? recorded->tp : meshSize("tp", 1);
  s.mesh = {{"dp", recorded ? recorded->dp : meshSize("dp", std::max(1, s.worldSize / tp))},
            {"tp", tp},
            {"pp", recorded ? recorded->pp : meshSize("pp", 1)}};
  if (bundle.programs_size() == 0)
    return s;
  const bool placed = runtime::isPlacedBundle(bundle);
  const program::Program rank0Placed = placed ? planProgramOfRank(bundle, 0) : program::Program();
  const program::Program &rank0 = placed ? rank0Placed : bundle.programs(0);
  s.globalBatchRows = rank0.global_batch_rows();
  s.groups = groupsOf(bundle);

  // Parameters: trained ones (input order), then the weights' PARAMETER buffers.
  for (const program::Binding &b : rank0.inputs())
    if (validBuffer(rank0, b.buffer()) &&
        rank0.buffers(b.buffer()).role() == program::ROLE_PARAMETER) {
      PlanParameter param;
      param.tensor = tensorOf(rank0, b);
      param.trained = true;
      ++s.trainedTensors;
      const PlanSharding &sharding = param.tensor.sharding;
      const uint64_t elements = static_cast<uint64_t>(param.tensor.elements);
      s.trainedElements += elements;
      if (sharding.blocked()) {
        ++s.trainedSplitTensors;
        s.trainedSplitElements += elements;
      } else {
        s.trainedReplicatedElements += elements;
      }
      s.trainedRankElements += static_cast<uint64_t>(sharding.blockElements);
      s.parameters.push_back(std::move(param));
    }
  for (const program::Binding &b : rank0.inputs()) {
    if (!validBuffer(rank0, b.buffer()) ||
        rank0.buffers(b.buffer()).role() != program::ROLE_OPTIMIZER_STATE)
      continue;
    int owner = ownerOf(b.name(), s.parameters);
    if (owner >= 0)
      s.parameters[owner].optimizerState.push_back(tensorOf(rank0, b));
    else
      s.warnings.push_back("optimizer state '" + b.name() + "' belongs to no trained parameter");
  }
  for (const program::Buffer &buf : rank0.buffers())
    if (buf.kind() == program::PARAMETER) {
      PlanParameter param;
      param.tensor = tensorOf(buf);
      ++s.frozenTensors;
      s.frozenElements += static_cast<uint64_t>(param.tensor.elements);
      s.parameters.push_back(std::move(param));
    }

  if (recorded) {
    s.zeroStage = recorded->zero;
  } else {
    // No strategy recorded: the shardings tell stage 3 (sharded parameters) from a sharded
    // optimizer state (stage 1 or 2; reported as 2) and plain DP.
    for (const PlanParameter &param : s.parameters) {
      if (param.trained && param.tensor.sharding.sharded)
        s.zeroStage = 3;
      for (const PlanTensor &state : param.optimizerState)
        if (state.sharding.sharded && s.zeroStage < 2)
          s.zeroStage = 2;
    }
  }

  auto rankOf = [&](const program::Program &p) {
    PlanRank r;
    r.rank = p.rank();
    r.batchBegin = p.batch_begin();
    r.batchRows = p.batch_rows();
    r.meshCoordinate.assign(p.mesh_coordinate().begin(), p.mesh_coordinate().end());
    r.plannedPeakBytes = p.planned_peak_bytes();
    r.memory = runtime::planPeakMemory(p, &runtime::opWorkspaceBytes);
    r.modelState = modelStateOf(p);
    r.comm = commOf(p, s.worldSize);
    return r;
  };
  if (placed) {
    // The numbers of a shared program once, from its first rank; every rank's own place.
    std::map<int, PlanRank> numbers;
    std::vector<int> programOf;
    for (int rank = 0; rank < bundle.ranks_size(); ++rank) {
      const int index = runtime::programIndexOfRank(bundle, rank);
      if (index < 0)
        continue;
      auto it = numbers.find(index);
      if (it == numbers.end())
        it = numbers.emplace(index, rankOf(planProgramOfRank(bundle, rank))).first;
      PlanRank r = it->second;
      r.rank = rank;
      r.batchBegin = bundle.ranks(rank).batch_begin();
      r.meshCoordinate.clear();
      std::vector<int64_t> sizes;
      for (const program::MeshAxis &axis : bundle.programs(index).mesh_axes())
        sizes.push_back(axis.size());
      if (!it->second.meshCoordinate.empty())
        for (int64_t c : runtime::meshCoordinate(sizes, rank))
          r.meshCoordinate.push_back(static_cast<int>(c));
      s.ranks.push_back(std::move(r));
      programOf.push_back(index);
    }
    const int n = static_cast<int>(s.ranks.size());
    s.memoryGroups =
        groupBy(n, [&](int a, int b) { return sameNumbers(s.ranks[a], s.ranks[b]); });
    s.programGroups = groupBy(n, [&](int a, int b) { return programOf[a] == programOf[b]; });
  } else {
    for (const program::Program &p : bundle.programs())
      s.ranks.push_back(rankOf(p));
    const int n = static_cast<int>(s.ranks.size());
    s.memoryGroups =
        groupBy(n, [&](int a, int b) { return sameNumbers(s.ranks[a], s.ranks[b]); });
    std::vector<program::Program> comparables;
    for (const program::Program &p : bundle.programs())
      comparables.push_back(comparable(p));
    s.programGroups = groupBy(n, [&](int a, int b) {
      return google::protobuf::util::MessageDifferencer::Equals(comparables[a], comparables[b]);
    });
  }
  for (const std::vector<int> &group : s.memoryGroups) {
    const PlanComm &comm = s.ranks[group.front()].comm;
    if (!comm.matchesPlan())
      s.warnings.push_back(formatRankSet(group) + ": the collectives send " +
                           std::to_string(comm.bytesSent) +
                           " bytes per step (runtime/common/comm_cost.h), but the program's "
                           "planned_comm_bytes is " +
                           std::to_string(comm.plannedBytes));
  }
  addZeroAccounting(s, rank0, notes);
  return s;
}

} // namespace shardc
