//===- RankPrograms.cpp -----------------------------------------------------------------===//
#include "shardc/Lowering/RankPrograms.h"

#include "shardc/Lowering/MemoryPlanner.h"
#include "shardc/Lowering/MeshGroups.h"

#include "runtime/common/comm_cost.h"
#include "runtime/common/planned_memory.h"
#include "runtime/common/sharded_tensor.h"
#include "runtime/kernels/kernel.h"

#include <algorithm>
#include <map>
#include <string>

namespace shardc {

std::vector<RowSlice> splitRows(int64_t globalRows, int ranks) {
  std::vector<RowSlice> slices;
  int64_t begin = 0;
  for (int r = 0; r < ranks; ++r) {
    int64_t rows = globalRows / ranks + (r < globalRows % ranks ? 1 : 0);
    slices.push_back({begin, rows});
    begin += rows;
  }
  return slices;
}

namespace {

// Index of the ranges already in a shared region (the weights or the initial values), by
// content: a hash to find candidates, then a comparison (no copy of the bytes is kept).
class WeightsIndex {
public:
  explicit WeightsIndex(WeightsRegion &shared) : shared_(shared) {}

  void add(uint64_t offset, uint64_t size) {
    known_[{shared_.contentHash(offset, size), size}].push_back(offset);
  }

  // The offset in the shared region of the range of `from` at `offset`, appending (or for
  // absent data reserving) it when new.
  uint64_t place(const WeightsRegion &from, uint64_t offset, uint64_t size) {
    std::vector<uint64_t> &candidates = known_[{from.contentHash(offset, size), size}];
    for (uint64_t candidate : candidates)
      if (shared_.sameContent(candidate, from, offset, size))
        return candidate;
    const std::string *absent = from.absentName(offset);
    const uint64_t placed =
        absent != nullptr ? shared_.reserve(size, *absent)
                          : shared_.append(llvm::ArrayRef<char>(from.data(offset), size));
    candidates.push_back(placed);
    return placed;
  }

private:
  WeightsRegion &shared_;
  std::map<std::pair<uint64_t, uint64_t>, std::vector<uint64_t>> known_; // (hash, size)
};

// Bytes of the initial values a state init's value spans: the whole parameter, also when the
// binding is a shard and the init covers only rank 0's part of it.
uint64_t initSpan(const program::Program &p, const program::StateInit &init) {
  for (const program::Binding &b : p.inputs())
    if (b.name() == init.name() && b.has_sharding()) {
      uint64_t whole = 4;
      for (int64_t d : b.sharding().global_shape())
        whole *= static_cast<uint64_t>(d);
      return whole;
    }
  return init.size_bytes();
}

} // namespace

void mergeWeightsInto(EmittedProgram &base, EmittedProgram &variant) {
  WeightsIndex region(base.weights), initialValues(base.initialValues);
  for (const program::Buffer &b : base.program.buffers())
    if (b.region() == program::WEIGHTS)
      region.add(b.offset(), b.size_bytes());
  for (const program::StateInit &init : base.program.state_init())
    initialValues.add(init.offset(), initSpan(base.program, init));
  for (program::Buffer &b : *variant.program.mutable_buffers())
    if (b.region() == program::WEIGHTS)
      b.set_offset(region.place(variant.weights, b.offset(), b.size_bytes()));
  for (program::StateInit &init : *variant.program.mutable_state_init())
    init.set_offset(
        initialValues.place(variant.initialValues, init.offset(), initSpan(variant.program, init)));
}

uint64_t collectiveCallBytesSent(const std::string &kernel, int ranks, uint64_t inputElements,
                                 uint64_t outputElements, uint64_t elementBytes) {
  using runtime::CollectiveKind;
  CollectiveKind kind;
  if (!runtime::collectiveOfKernel(kernel, &kind))
    return 0;
  switch (kind) {
  case CollectiveKind::AllReduce:
    return runtime::collectiveBytesSent(kind, runtime::paddedToRanks(inputElements, ranks), ranks,
                                        elementBytes);
  case CollectiveKind::ReduceScatter: // outputs: this rank's shards
    return runtime::collectiveBytesSent(kind, outputElements * ranks, ranks, elementBytes);
  case CollectiveKind::AllGather: // inputs: this rank's shards
    return runtime::collectiveBytesSent(kind, inputElements * ranks, ranks, elementBytes);
  case CollectiveKind::AllToAll: // inputs: this rank's pieces for every rank
    return runtime::collectiveBytesSent(kind, inputElements, ranks, elementBytes);
  case CollectiveKind::SendRecv: // inputs: the message to the peer
    return runtime::collectiveBytesSent(kind, inputElements, ranks, elementBytes);
  }
  return 0;
}

uint64_t collectiveCallBytesSent(const std::string &kernel, int ranks,
                                 const std::vector<CollectiveOperand> &inputs,
                                 const std::vector<CollectiveOperand> &outputs) {
  // An all_gather or all_to_all of tensors of several dtypes moves raw bytes: every count is
  // then in bytes.
  bool mixed = false;
  for (const auto *list : {&inputs, &outputs})
    for (const CollectiveOperand &o : *list)
      mixed |= o.second != (inputs.empty() ? o.second : inputs.front().second);
  const uint64_t elementBytes = mixed || inputs.empty() ? 1 : inputs.front().second;
  uint64_t in = 0, out = 0;
  for (const CollectiveOperand &o : inputs)
    in += o.first * (mixed ? o.second : 1);
  for (const CollectiveOperand &o : outputs)
    out += o.first * (mixed ? o.second : 1);
  return collectiveCallBytesSent(kernel, ranks, in, out, elementBytes);
}

uint64_t opCollectiveBytesSent(const program::Program &program, const program::Op &op, int ranks) {
  auto operands = [&](const google::protobuf::RepeatedField<int32_t> &buffers) {
    std::vector<CollectiveOperand> list;
    for (int b : buffers) {
      if (b < 0 || b >= program.buffers_size())
        continue; // a malformed program's plan still prints
      uint64_t n = 1;
      for (int64_t d : program.buffers(b).shape())
        n *= static_cast<uint64_t>(d);
      list.emplace_back(n, runtime::dtypeSize(program.buffers(b).dtype()));
    }
    return list;
  };
  return collectiveCallBytesSent(op.kernel(), ranks, operands(op.inputs()), operands(op.outputs()));
}

uint64_t plannedCommBytes(const program::Program &program) {
  uint64_t total = 0;
  for (const program::Op &op : program.ops()) {
    auto ranksIt = op.attrs().find("num_ranks");
    if (ranksIt != op.attrs().end())
      total += opCollectiveBytesSent(program, op, static_cast<int>(ranksIt->second.i()));
  }
  return total;
}

InitialValueParts::InitialValueParts(WeightsRegion &initialValues) : values_(initialValues) {}

uint64_t InitialValueParts::block(uint64_t wholeOffset, const program::Sharding &sharding,
                                  int64_t index, size_t elementBytes) {
  auto key = std::make_pair(wholeOffset, index);
  if (auto it = placed_.find(key); it != placed_.end())
    return it->second;
  uint64_t elements = 1;
  for (int64_t d : runtime::blockShapeOf(sharding))
    elements *= static_cast<uint64_t>(d);
  std::vector<char> bytes(elements * elementBytes);
  runtime::copyBlock(sharding, index, values_.data(wholeOffset), bytes.data(), elementBytes);
  const uint64_t offset = values_.append(bytes);
  placed_.emplace(key, offset);
  return offset;
}

program::Program sharedProgram(const program::Program &compiled, int worldSize, int64_t rows,
                               int64_t globalRows, InitialValueParts &parts) {
  program::Program p = compiled;
  p.set_rank(0);
  p.set_world_size(worldSize);
  p.set_batch_begin(0);
  p.set_batch_rows(rows);
  p.set_global_batch_rows(globalRows);
  addMeshGroups(p);
  // A sharded parameter's init spans the whole value, and a parameter cut into tensor-
  // parallel blocks also gets a copy of each block (not contiguous in the whole): each rank
  // reads its flat shard of its block from there.
  std::map<std::string, const program::Binding *> sharded;
  for (const program::Binding &b : p.inputs())
    if (b.has_sharding())
      sharded[b.name()] = &b;
  for (program::StateInit &init : *p.mutable_state_init()) {
    auto it = sharded.find(init.name());
    if (it == sharded.end())
      continue;
    const program::Sharding &s = it->second->sharding();
    const size_t elementBytes = runtime::dtypeSize(p.buffers(it->second->buffer()).dtype());
    init.set_size_bytes(static_cast<uint64_t>(runtime::globalNumelOf(s)) * elementBytes);
    init.clear_block_offsets();
    if (runtime::hasBlocks(s))
      for (int64_t index = 0; index < s.num_blocks(); ++index)
        init.add_block_offsets(parts.block(init.offset(), s, index, elementBytes));
  }
  p.set_planned_comm_bytes(plannedCommBytes(p));
  return p;
}

} // namespace shardc
