#include "tests/unit/runtime/group_program.h"

#include "runtime/common/comm_cost.h"
#include "runtime/common/planned_memory.h"
#include "tests/unit/runtime/test_util.h"

#include <string>

namespace shardc::runtime::testing {

namespace {

// Program.planned_comm_bytes as shardc computes it: each collective over its num_ranks.
uint64_t plannedBytes(const program::Program &p) {
  uint64_t total = 0;
  auto numel = [&](int buffer) {
    uint64_t n = 1;
    for (int64_t d : p.buffers(buffer).shape())
      n *= static_cast<uint64_t>(d);
    return n;
  };
  for (const program::Op &op : p.ops()) {
    auto ranksIt = op.attrs().find("num_ranks");
    if (ranksIt == op.attrs().end() || op.kernel() == "shard_slice")
      continue;
    const int ranks = static_cast<int>(ranksIt->second.i());
    if (op.kernel() == "all_reduce")
      total += collectiveBytesSent(CollectiveKind::AllReduce,
                                   paddedToRanks(numel(op.inputs(0)), ranks), ranks, sizeof(float));
    else if (op.kernel() == "reduce_scatter")
      total += collectiveBytesSent(CollectiveKind::ReduceScatter, numel(op.outputs(0)) * ranks,
                                   ranks, sizeof(float));
    else if (op.kernel() == "all_gather")
      total += collectiveBytesSent(CollectiveKind::AllGather, numel(op.inputs(0)) * ranks, ranks,
                                   sizeof(float));
  }
  return total;
}

} // namespace

std::vector<float> groupProgramInput(int rank) {
  const float v = static_cast<float>(rank + 1);
  return {v, 10 * v, 100 * v, 1000 * v};
}

program::Program groupProgram(int rank) {
  using program::ACTIVATION;
  using program::ARENA;
  using program::F32;
  program::Program p;
  p.set_rank(rank);
  p.set_world_size(kMeshRanks);
  addMesh2x2(&p);

  const int x = addBuffer(&p, "x", F32, {4}, program::INPUT, ARENA, 0);
  const int yTp = addBuffer(&p, "y_tp", F32, {4}, ACTIVATION, ARENA, 64);
  const int yDp = addBuffer(&p, "y_dp", F32, {4}, ACTIVATION, ARENA, 128);
  const int sTp = addBuffer(&p, "s_tp", F32, {2}, ACTIVATION, ARENA, 192);
  const int gDp = addBuffer(&p, "g_dp", F32, {4}, ACTIVATION, ARENA, 256);
  const int yWorld = addBuffer(&p, "y_world", F32, {4}, ACTIVATION, ARENA, 320);
  const int sliceTp = addBuffer(&p, "slice_tp", F32, {2}, ACTIVATION, ARENA, 384);
  auto collective = [&](const char *kernel, const char *name, int in, int out, int group) {
    const int op = addOp(&p, kernel, name, {in}, {out});
    auto &attrs = *p.mutable_ops(op)->mutable_attrs();
    attrs["num_ranks"].set_i(group < 0 ? kMeshRanks : 2);
    if (group >= 0)
      attrs["group"].set_i(group);
  };
  collective("all_reduce", "ar_tp", x, yTp, 0);
  collective("all_reduce", "ar_dp", x, yDp, 1);
  collective("reduce_scatter", "rs_tp", x, sTp, 0);
  collective("all_gather", "ag_dp", sTp, gDp, 1);
  collective("all_reduce", "ar_world", x, yWorld, -1);
  collective("shard_slice", "slice_tp", x, sliceTp, 0);

  auto bind = [](google::protobuf::RepeatedPtrField<program::Binding> *list, const char *name,
                 int buffer) {
    program::Binding *b = list->Add();
    b->set_name(name);
    b->set_buffer(buffer);
  };
  bind(p.mutable_inputs(), "x", x);
  bind(p.mutable_outputs(), "y_tp", yTp);
  bind(p.mutable_outputs(), "y_dp", yDp);
  bind(p.mutable_outputs(), "s_tp", sTp);
  bind(p.mutable_outputs(), "g_dp", gDp);
  bind(p.mutable_outputs(), "y_world", yWorld);
  bind(p.mutable_outputs(), "slice_tp", sliceTp);
  p.set_arena_bytes(448);
  p.set_workspace_bytes(512);
  p.set_planned_comm_bytes(plannedBytes(p));
  p.set_planned_peak_bytes(planPeakMemory(p).total);
  return p;
}

} // namespace shardc::runtime::testing
