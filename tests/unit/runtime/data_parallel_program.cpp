#include "tests/unit/runtime/data_parallel_program.h"

#include "runtime/common/comm_cost.h"
#include "runtime/common/planned_memory.h"
#include "runtime/loader/bundle.h"
#include "tests/unit/runtime/test_util.h"

#include <algorithm>
#include <cstring>

namespace shardc::runtime::testing {

namespace {

int shardNumel(int world) { return (kLinearFeatures + world - 1) / world; }

void setInts(program::Program *p, int op, const char *name, std::vector<int64_t> values) {
  auto *list = (*p->mutable_ops(op)->mutable_attrs())[name].mutable_ints();
  for (int64_t v : values)
    list->add_values(v);
}

void setInt(program::Program *p, int op, const char *name, int64_t value) {
  (*p->mutable_ops(op)->mutable_attrs())[name].set_i(value);
}

void bindTo(google::protobuf::RepeatedPtrField<program::Binding> *bindings, const std::string &name,
            int buffer, const program::Sharding *sharding) {
  program::Binding *b = bindings->Add();
  b->set_name(name);
  b->set_buffer(buffer);
  if (sharding != nullptr)
    *b->mutable_sharding() = *sharding;
}

program::Program linearProgram(int rank, int world, int batch) {
  using program::ARENA;
  using program::WEIGHTS;
  const bool parallel = world > 1;
  const int64_t k = parallel ? shardNumel(world) : kLinearFeatures;
  const int64_t rows = batch / world;
  program::Program p;
  p.set_rank(rank);
  p.set_world_size(world);
  int w = addBuffer(&p, "w", program::F32, {k}, program::INPUT, ARENA, 0);
  int buf = addBuffer(&p, "w.momentum_buffer", program::F32, {k}, program::INPUT, ARENA, 64);
  int step = addBuffer(&p, "step", program::I64, {}, program::INPUT, ARENA, 128);
  int lr = addBuffer(&p, "lr", program::F32, {}, program::INPUT, ARENA, 192);
  // The batch's buffers (x, xw) have 128 bytes each at kLinearBatch; a larger batch moves what
  // follows each of them by `extra`.
  const uint64_t batchBytes = static_cast<uint64_t>(rows * kLinearFeatures) * sizeof(float);
  const uint64_t extra = batchBytes > 128 ? (batchBytes - 128 + 63) / 64 * 64 : 0;
  int x = addBuffer(&p, "x", program::F32, {rows, kLinearFeatures}, program::INPUT, ARENA, 256);
  int one = addBuffer(&p, "one", program::I64, {}, program::CONSTANT, WEIGHTS, 0);
  int wFull = addBuffer(&p, "w_full", program::F32, {kLinearFeatures}, program::ACTIVATION, ARENA,
                        384 + extra);
  int xw = addBuffer(&p, "xw", program::F32, {rows, kLinearFeatures}, program::ACTIVATION, ARENA,
                     448 + extra);
  int partialLoss =
      addBuffer(&p, "loss_partial", program::F32, {}, program::ACTIVATION, ARENA, 576 + 2 * extra);
  int loss = addBuffer(&p, "loss", program::F32, {}, program::ACTIVATION, ARENA, 640 + 2 * extra);
  int grad = addBuffer(&p, "grad", program::F32, {kLinearFeatures}, program::ACTIVATION, ARENA,
                       704 + 2 * extra);
  int gradShard =
      addBuffer(&p, "grad_shard", program::F32, {k}, program::ACTIVATION, ARENA, 768 + 2 * extra);
  int newStep =
      addBuffer(&p, "step_new", program::I64, {}, program::ACTIVATION, ARENA, 832 + 2 * extra);
  int newW = addBuffer(&p, "w_new", program::F32, {k}, program::ACTIVATION, ARENA, 896 + 2 * extra);
  int newBuf =
      addBuffer(&p, "buf_new", program::F32, {k}, program::ACTIVATION, ARENA, 960 + 2 * extra);

  uint64_t commBytes = 0;
  auto collective = [&](const char *kernel, CollectiveKind kind, int in, int out,
                        uint64_t elements) {
    int op = addOp(&p, kernel, kernel, {in}, {out});
    setInt(&p, op, "num_ranks", world);
    commBytes += collectiveBytesSent(kind, paddedToRanks(elements, world), world, sizeof(float));
  };
  if (parallel)
    collective("all_gather", CollectiveKind::AllGather, w, wFull, kLinearFeatures);
  addOp(&p, "mul", "score", {x, parallel ? wFull : w}, {xw});
  int sum = addOp(&p, "reduce_sum", "loss_sum", {xw}, {parallel ? partialLoss : loss});
  setInts(&p, sum, "axes", {0, 1});
  setInt(&p, sum, "keepdims", 0);
  if (parallel)
    collective("all_reduce", CollectiveKind::AllReduce, partialLoss, loss, 1);
  int gradSum = addOp(&p, "reduce_sum", "grad_sum", {x}, {parallel ? grad : gradShard});
  setInts(&p, gradSum, "axes", {0});
  setInt(&p, gradSum, "keepdims", 0);
  if (parallel)
    collective("reduce_scatter", CollectiveKind::ReduceScatter, grad, gradShard, kLinearFeatures);
  addOp(&p, "add", "count", {step, one}, {newStep});
  int sgd = addOp(&p, "sgd_update", "sgd", {w, gradShard, buf, newStep, lr}, {newW, newBuf});
  for (const char *name : {"momentum", "dampening", "weight_decay"})
    (*p.mutable_ops(sgd)->mutable_attrs())[name].set_d(0.0);
  setInt(&p, sgd, "nesterov", 0);

  program::Sharding sharding;
  for (int64_t d : {int64_t(kLinearFeatures)})
    sharding.add_global_shape(d);
  sharding.set_num_shards(world);
  sharding.set_shard_numel(k);
  const program::Sharding *sharded = parallel ? &sharding : nullptr;
  bindTo(p.mutable_inputs(), "w", w, sharded);
  bindTo(p.mutable_inputs(), "w.momentum_buffer", buf, sharded);
  bindTo(p.mutable_inputs(), "step", step, nullptr);
  bindTo(p.mutable_inputs(), "lr", lr, nullptr);
  bindTo(p.mutable_inputs(), "x", x, nullptr);
  bindTo(p.mutable_outputs(), "loss", loss, nullptr);
  bindTo(p.mutable_outputs(), "w", newW, sharded);
  bindTo(p.mutable_outputs(), "w.momentum_buffer", newBuf, sharded);
  bindTo(p.mutable_outputs(), "step", newStep, nullptr);

  program::StateInit *init = p.add_state_init();
  init->set_name("w");
  const int64_t first = std::min<int64_t>(rank * k, kLinearFeatures);
  init->set_offset(64 + static_cast<uint64_t>(first) * sizeof(float));
  init->set_size_bytes(static_cast<uint64_t>(std::min<int64_t>(k, kLinearFeatures - first)) *
                       sizeof(float));
  if (parallel) {
    p.set_batch_begin(rank * rows);
    p.set_batch_rows(rows);
    p.set_global_batch_rows(batch);
  }
  p.set_arena_bytes(1024 + 2 * extra);
  p.set_weights_bytes(64);
  p.set_workspace_bytes(256);
  p.set_planned_comm_bytes(commBytes);
  p.set_planned_peak_bytes(planPeakMemory(p).total);
  return p;
}

} // namespace

std::vector<float> linearInitialWeights() { return {1, 2, 3, 4, 5}; }

program::Bundle linearSgdBundle(int world, int batch) {
  program::Bundle bundle;
  bundle.set_format_version(kBundleFormatVersion);
  bundle.set_mode("train");
  bundle.set_source_model("linear.onnx");
  bundle.set_world_size(world);
  bundle.set_weights_file("weights.bin");
  if (world > 1)
    bundle.set_strategy("dp=" + std::to_string(world) + ",zero=3");
  for (int r = 0; r < world; ++r)
    *bundle.add_programs() = linearProgram(r, world, batch);
  return bundle;
}

uint64_t linearSgdMeshWorldBytes() {
  return linearSgdBundle(4, kLinearMeshBatch).programs(0).planned_comm_bytes() -
         collectiveBytesSent(CollectiveKind::AllReduce, paddedToRanks(1, 4), 4, sizeof(float));
}

program::Bundle linearSgdMeshBundle() {
  program::Bundle bundle = linearSgdBundle(4, kLinearMeshBatch);
  bundle.set_strategy("dp=2,tp=2");
  for (program::Program &p : *bundle.mutable_programs()) {
    addMesh2x2(&p);
    // w and its momentum stay flat shards over the whole world (rank r holds shard r).
    for (auto *bindings : {p.mutable_inputs(), p.mutable_outputs()})
      for (program::Binding &b : *bindings)
        if (b.has_sharding())
          b.mutable_sharding()->set_shard_axis(-1);

    // all_reduce(loss_partial -> loss) becomes tp: loss_partial -> loss_tp, dp: loss_tp -> loss.
    const int lossTp = addBuffer(&p, "loss_tp", program::F32, {}, program::ACTIVATION,
                                 program::ARENA, p.arena_bytes());
    p.set_arena_bytes(p.arena_bytes() + 64);
    google::protobuf::RepeatedPtrField<program::Op> ops;
    for (const program::Op &op : p.ops()) {
      if (op.kernel() != "all_reduce") {
        *ops.Add() = op;
        continue;
      }
      program::Op overTp = op, overDp = op;
      overTp.set_name("all_reduce_tp");
      overTp.set_outputs(0, lossTp);
      (*overTp.mutable_attrs())["num_ranks"].set_i(2);
      (*overTp.mutable_attrs())["group"].set_i(0);
      overDp.set_name("all_reduce_dp");
      overDp.set_inputs(0, lossTp);
      (*overDp.mutable_attrs())["num_ranks"].set_i(2);
      (*overDp.mutable_attrs())["group"].set_i(1);
      *ops.Add() = overTp;
      *ops.Add() = overDp;
    }
    p.mutable_ops()->Swap(&ops);
    p.set_planned_comm_bytes(linearSgdMeshWorldBytes() + kMeshTpBytes + kMeshDpBytes);
    p.set_planned_peak_bytes(planPeakMemory(p).total);
  }
  return bundle;
}

std::string linearSgdWeights() {
  std::string weights(64 + kLinearFeatures * sizeof(float), '\0');
  const int64_t one = 1;
  std::memcpy(&weights[0], &one, sizeof one);
  const std::vector<float> w = linearInitialWeights();
  std::memcpy(&weights[64], w.data(), w.size() * sizeof(float));
  return weights;
}

HostTensor linearData(int rows) {
  HostTensor x = makeHostTensor(program::F32, {rows, kLinearFeatures});
  for (int i = 0; i < rows * kLinearFeatures; ++i)
    x.as<float>()[i] = static_cast<float>((i * 3) % 7 - 3);
  return x;
}

} // namespace shardc::runtime::testing
