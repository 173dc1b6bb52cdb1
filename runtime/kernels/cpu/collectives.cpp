// The collective kernels: all_reduce, reduce_scatter and all_gather move data between the ranks
// of a communicator, KernelArgs::comm (the world's, or that of the group the op's "group"
// attribute names: the executor picks it); shard_slice cuts this rank's shard locally.
//
// Shards follow the program's Sharding (runtime/program/program.proto): a tensor of n elements
// split over N ranks gives every rank k = ceil(n / N) elements, shard r holding the row-major
// elements [r*k, (r+1)*k), zero past n. Several tensors travel in one collective: their
// shards are packed back to back (rank-major for reduce_scatter and all_gather, so that the
// communicator's chunk r is exactly rank r's shards of every tensor).
//
// Every check, including the workspace, happens before the first byte is sent: a call that
// fails on one rank fails identically on all of them (the shapes and attributes are the same),
// so no rank is left waiting in a collective the others never enter.
#include "runtime/comm/comm_cost.h"
#include "runtime/comm/communicator.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/workspace.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <string>

namespace shardc::runtime::cpu {

namespace {

std::string operandRole(const char *kind, size_t index) {
  return std::string(kind) + " " + std::to_string(index);
}

// Elements per rank of a tensor of `numel` elements split over `ranks`.
int64_t shardNumel(int64_t numel, int ranks) { return (numel + ranks - 1) / ranks; }

// The element type the collective moves: the "dtype" attribute (a DType), f32 when absent. Only
// f32 is implemented; the attribute exists so that other types need no new interface.
Status readDtype(const char *kernel, const KernelArgs &args) {
  if (!hasAttr(args, "dtype"))
    return Status::ok();
  int64_t value = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "dtype", &value));
  const bool known = value >= 0 && value <= INT_MAX &&
                     program::DType_IsValid(static_cast<int>(value)) &&
                     dtypeSize(static_cast<DType>(value)) != 0;
  if (!known)
    return Status::error(std::string(kernel) + ": unknown dtype " + std::to_string(value));
  if (value != program::F32)
    return Status::error(std::string(kernel) + ": dtype " + dtypeName(static_cast<DType>(value)) +
                         " is not supported (the collectives move f32 only)");
  return Status::ok();
}

// What all four kernels share: n >= 1 f32 inputs, as many f32 outputs, `num_ranks` >= 1 and
// the dtype f32.
Status readCommon(const char *kernel, const KernelArgs &args, int *ranks) {
  SHARDC_RETURN_IF_ERROR(readDtype(kernel, args));
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::atLeast(1), Arity::atLeast(1)));
  if (args.inputs.size() != args.outputs.size())
    return Status::error(std::string(kernel) + ": expected as many outputs as inputs, got " +
                         std::to_string(args.inputs.size()) + " inputs and " +
                         std::to_string(args.outputs.size()) + " outputs");
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    SHARDC_RETURN_IF_ERROR(
        expectDtype(kernel, operandRole("input", i).c_str(), args.inputs[i], program::F32));
    SHARDC_RETURN_IF_ERROR(
        expectDtype(kernel, operandRole("output", i).c_str(), args.outputs[i], program::F32));
  }
  int64_t numRanks = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "num_ranks", &numRanks));
  if (numRanks < 1 || numRanks > INT_MAX)
    return Status::error(std::string(kernel) + ": num_ranks must be a positive int, got " +
                         std::to_string(numRanks));
  *ranks = static_cast<int>(numRanks);
  return Status::ok();
}

// The op's communicator (its group's, or the world's), which must exist and have num_ranks
// ranks.
Status requireComm(const char *kernel, const KernelArgs &args, int ranks, Communicator **comm) {
  if (args.comm == nullptr)
    return Status::error(std::string(kernel) + ": needs the rank's communicator (num_ranks = " +
                         std::to_string(ranks) + "), but the run has none");
  if (args.comm->size() != ranks)
    return Status::error(std::string(kernel) + ": num_ranks is " + std::to_string(ranks) +
                         ", but the communicator" + args.comm->groupSuffix() + " has " +
                         std::to_string(args.comm->size()) + " ranks");
  *comm = args.comm;
  return Status::ok();
}

// Sum of `value(i)` over the operands, refusing totals whose buffers could not be addressed
// (N of them must still fit an int64 count of bytes).
template <typename Fn>
Status sumOver(const char *kernel, size_t n, int ranks, Fn value, int64_t *total) {
  const int64_t limit = std::numeric_limits<int64_t>::max() / 8 / ranks;
  int64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    sum += value(i);
    if (sum > limit)
      return Status::error(std::string(kernel) + ": the operands are too large to pack");
  }
  *total = sum;
  return Status::ok();
}

// Checks that output i has shape [ceil(numel(tensors[i]) / ranks)].
Status expectShardShapes(const char *kernel, const std::vector<Tensor> &tensors,
                         const std::vector<Tensor> &shards, const char *shardKind, int ranks) {
  for (size_t i = 0; i < tensors.size(); ++i)
    SHARDC_RETURN_IF_ERROR(expectShape(kernel, operandRole(shardKind, i).c_str(), shards[i],
                                       {shardNumel(tensors[i].numel(), ranks)}));
  return Status::ok();
}

// ---- all_reduce ---------------------------------------------------------------------------------

// Checks and returns the padded element count of the packed buffer.
Status allReducePlan(const KernelArgs &args, int *ranks, int64_t *padded) {
  const char *kernel = "all_reduce";
  SHARDC_RETURN_IF_ERROR(readCommon(kernel, args, ranks));
  for (size_t i = 0; i < args.inputs.size(); ++i)
    SHARDC_RETURN_IF_ERROR(expectShape(kernel, operandRole("output", i).c_str(), args.outputs[i],
                                       args.inputs[i].shape));
  int64_t total = 0;
  SHARDC_RETURN_IF_ERROR(sumOver(
      kernel, args.inputs.size(), *ranks, [&](size_t i) { return args.inputs[i].numel(); },
      &total));
  *padded = static_cast<int64_t>(paddedToRanks(static_cast<uint64_t>(total), *ranks));
  return Status::ok();
}

// ---- reduce_scatter and all_gather --------------------------------------------------------------

// Checks reduce_scatter (tensors = inputs, shards = outputs) or all_gather (the reverse), and
// returns K, the shard elements of one rank over all tensors.
Status shardedPlan(const char *kernel, const KernelArgs &args, bool gather, int *ranks,
                   int64_t *shardTotal) {
  SHARDC_RETURN_IF_ERROR(readCommon(kernel, args, ranks));
  const std::vector<Tensor> &tensors = gather ? args.outputs : args.inputs;
  const std::vector<Tensor> &shards = gather ? args.inputs : args.outputs;
  SHARDC_RETURN_IF_ERROR(
      expectShardShapes(kernel, tensors, shards, gather ? "input" : "output", *ranks));
  return sumOver(
      kernel, tensors.size(), *ranks,
      [&](size_t i) { return shardNumel(tensors[i].numel(), *ranks); }, shardTotal);
}

// Copies rank r's shard of `tensor` (k elements, zero past its end) to `dst`.
void copyShard(const Tensor &tensor, int64_t k, int r, float *dst) {
  const int64_t n = tensor.numel();
  const int64_t begin = std::min(n, static_cast<int64_t>(r) * k);
  const int64_t end = std::min(n, begin + k);
  const float *src = tensor.as<float>();
  std::copy(src + begin, src + end, dst);
  std::fill(dst + (end - begin), dst + k, 0.0f);
}

// The workspace pieces of reduce_scatter (`whole` N*K floats, then `shard` K) and all_gather
// (`shard`, then `whole`), in the order both the kernel and its size function take them.
Status takeShardedPieces(const char *kernel, Workspace &workspace, bool gather, int ranks,
                         int64_t shardTotal, float **whole, float **shard) {
  const int64_t wholeCount = shardTotal * ranks;
  if (gather) {
    SHARDC_RETURN_IF_ERROR(workspace.take(kernel, shardTotal, shard));
    return workspace.take(kernel, wholeCount, whole);
  }
  SHARDC_RETURN_IF_ERROR(workspace.take(kernel, wholeCount, whole));
  return workspace.take(kernel, shardTotal, shard);
}

} // namespace

Status allReduceKernel(KernelArgs &args) {
  const char *kernel = "all_reduce";
  int ranks = 0;
  int64_t padded = 0;
  SHARDC_RETURN_IF_ERROR(allReducePlan(args, &ranks, &padded));
  Communicator *comm = nullptr;
  SHARDC_RETURN_IF_ERROR(requireComm(kernel, args, ranks, &comm));
  Workspace workspace(args);
  float *buffer = nullptr;
  SHARDC_RETURN_IF_ERROR(workspace.take(kernel, padded, &buffer));

  float *cursor = buffer;
  for (const Tensor &x : args.inputs)
    cursor = std::copy(x.as<float>(), x.as<float>() + x.numel(), cursor);
  std::fill(cursor, buffer + padded, 0.0f);
  SHARDC_RETURN_IF_ERROR(comm->allReduceSum(buffer, static_cast<size_t>(padded)));
  cursor = buffer;
  for (const Tensor &y : args.outputs) {
    std::copy(cursor, cursor + y.numel(), y.as<float>());
    cursor += y.numel();
  }
  return Status::ok();
}

Status allReduceWorkspace(const KernelArgs &args, uint64_t *bytes) {
  int ranks = 0;
  int64_t padded = 0;
  SHARDC_RETURN_IF_ERROR(allReducePlan(args, &ranks, &padded));
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    float *buffer = nullptr;
    return workspace.take("all_reduce", padded, &buffer);
  });
}

Status reduceScatterKernel(KernelArgs &args) {
  const char *kernel = "reduce_scatter";
  int ranks = 0;
  int64_t shardTotal = 0;
  SHARDC_RETURN_IF_ERROR(shardedPlan(kernel, args, false, &ranks, &shardTotal));
  Communicator *comm = nullptr;
  SHARDC_RETURN_IF_ERROR(requireComm(kernel, args, ranks, &comm));
  Workspace workspace(args);
  float *whole = nullptr, *reduced = nullptr;
  SHARDC_RETURN_IF_ERROR(
      takeShardedPieces(kernel, workspace, false, ranks, shardTotal, &whole, &reduced));

  // Rank-major: chunk r of the buffer is every tensor's shard r, so the communicator's
  // reduce-scatter hands rank r the sum of exactly its shards.
  for (int r = 0; r < ranks; ++r) {
    float *chunk = whole + static_cast<int64_t>(r) * shardTotal;
    for (const Tensor &g : args.inputs) {
      const int64_t k = shardNumel(g.numel(), ranks);
      copyShard(g, k, r, chunk);
      chunk += k;
    }
  }
  SHARDC_RETURN_IF_ERROR(comm->reduceScatterSum(whole, reduced, static_cast<size_t>(shardTotal)));
  const float *cursor = reduced;
  for (const Tensor &s : args.outputs) {
    std::copy(cursor, cursor + s.numel(), s.as<float>());
    cursor += s.numel();
  }
  return Status::ok();
}

Status reduceScatterWorkspace(const KernelArgs &args, uint64_t *bytes) {
  const char *kernel = "reduce_scatter";
  int ranks = 0;
  int64_t shardTotal = 0;
  SHARDC_RETURN_IF_ERROR(shardedPlan(kernel, args, false, &ranks, &shardTotal));
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    float *whole = nullptr, *reduced = nullptr;
    return takeShardedPieces(kernel, workspace, false, ranks, shardTotal, &whole, &reduced);
  });
}

Status allGatherKernel(KernelArgs &args) {
  const char *kernel = "all_gather";
  int ranks = 0;
  int64_t shardTotal = 0;
  SHARDC_RETURN_IF_ERROR(shardedPlan(kernel, args, true, &ranks, &shardTotal));
  Communicator *comm = nullptr;
  SHARDC_RETURN_IF_ERROR(requireComm(kernel, args, ranks, &comm));
  Workspace workspace(args);
  float *gathered = nullptr, *own = nullptr;
  SHARDC_RETURN_IF_ERROR(
      takeShardedPieces(kernel, workspace, true, ranks, shardTotal, &gathered, &own));

  float *cursor = own;
  for (const Tensor &s : args.inputs)
    cursor = std::copy(s.as<float>(), s.as<float>() + s.numel(), cursor);
  SHARDC_RETURN_IF_ERROR(comm->allGather(own, gathered, static_cast<size_t>(shardTotal)));
  // Rank r's chunk holds every tensor's shard r; the padding past each tensor's end is dropped.
  int64_t offset = 0;
  for (const Tensor &p : args.outputs) {
    const int64_t n = p.numel(), k = shardNumel(n, ranks);
    float *dst = p.as<float>();
    for (int r = 0; r < ranks; ++r) {
      const int64_t begin = std::min(n, static_cast<int64_t>(r) * k);
      const int64_t end = std::min(n, begin + k);
      const float *src = gathered + static_cast<int64_t>(r) * shardTotal + offset;
      std::copy(src, src + (end - begin), dst + begin);
    }
    offset += k;
  }
  return Status::ok();
}

Status allGatherWorkspace(const KernelArgs &args, uint64_t *bytes) {
  const char *kernel = "all_gather";
  int ranks = 0;
  int64_t shardTotal = 0;
  SHARDC_RETURN_IF_ERROR(shardedPlan(kernel, args, true, &ranks, &shardTotal));
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    float *gathered = nullptr, *own = nullptr;
    return takeShardedPieces(kernel, workspace, true, ranks, shardTotal, &gathered, &own);
  });
}

Status shardSliceKernel(KernelArgs &args) {
  const char *kernel = "shard_slice";
  int ranks = 0;
  SHARDC_RETURN_IF_ERROR(readCommon(kernel, args, &ranks));
  SHARDC_RETURN_IF_ERROR(expectShardShapes(kernel, args.inputs, args.outputs, "output", ranks));
  Communicator *comm = nullptr;
  SHARDC_RETURN_IF_ERROR(requireComm(kernel, args, ranks, &comm));
  const int rank = comm->rank();
  for (size_t i = 0; i < args.inputs.size(); ++i)
    copyShard(args.inputs[i], args.outputs[i].numel(), rank, args.outputs[i].as<float>());
  return Status::ok();
}

} // namespace shardc::runtime::cpu

namespace shardc::runtime {

bool isCollectiveKernel(const std::string &kernel) {
  return kernel == "all_reduce" || kernel == "reduce_scatter" || kernel == "all_gather" ||
         kernel == "shard_slice";
}

} // namespace shardc::runtime
