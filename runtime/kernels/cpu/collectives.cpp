// The collective kernels: all_reduce, reduce_scatter, all_gather and all_to_all move data
// between the ranks of a communicator, KernelArgs::comm (the world's, or that of the group the
// op's "group" attribute names: the executor picks it); shard_slice cuts this rank's shard
// locally; send_recv is a point-to-point transfer between two of its ranks (pipeline stages).
//
// Shards follow the program's Sharding (runtime/program/program.proto): a tensor of n elements
// split over N ranks gives every rank k = ceil(n / N) elements, shard r holding the row-major
// elements [r*k, (r+1)*k), zero past n. Several tensors travel in one collective: their
// shards are packed back to back (rank-major for reduce_scatter and all_gather, so that the
// communicator's chunk r is exactly rank r's shards of every tensor).
//
// A reduction sums one dtype, f32, bf16 or f16 (a bf16 or f16 sum is rounded to its type at
// every ring step: runtime/comm/ring.h), so all_reduce and reduce_scatter take operands of one
// of them. all_gather, all_to_all and shard_slice only move data: their tensors may have any
// dtype (integer indices and boolean masks too, which resharding gathers) and differ in it (a
// shard has its tensor's); they are packed by bytes, and the communicator then moves
// CommDType::Bytes, or the float dtype itself when every tensor has the same.
//
// Every check, including the workspace, happens before the first byte is sent: a call that
// fails on one rank fails identically on all of them (the shapes and attributes are the same),
// so no rank is left waiting in a collective the others never enter.
#include "runtime/comm/communicator.h"
#include "runtime/common/comm_cost.h"
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

// The communicator's element type for a tensor dtype the collectives move; false for others.
bool commDTypeOf(DType dtype, CommDType *out) {
  switch (dtype) {
  case program::F32:
    *out = CommDType::F32;
    return true;
  case program::BF16:
    *out = CommDType::BF16;
    return true;
  case program::F16:
    *out = CommDType::F16;
    return true;
  default:
    return false;
  }
}

bool movable(DType dtype) {
  CommDType ignored;
  return commDTypeOf(dtype, &ignored);
}

std::string wrongDtype(const char *kernel, const std::string &role, const Tensor &t,
                       const std::string &expected) {
  return std::string(kernel) + ": " + role + " is " + dtypeName(t.dtype) + ", but " + expected;
}

// The "dtype" attribute (a DType), when present, names the element type of every operand; a
// `reduction` sums only the float dtypes.
Status readDtype(const char *kernel, const KernelArgs &args, bool reduction) {
  if (!hasAttr(args, "dtype"))
    return Status::ok();
  int64_t value = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "dtype", &value));
  const bool known = value >= 0 && value <= INT_MAX &&
                     program::DType_IsValid(static_cast<int>(value)) &&
                     dtypeSize(static_cast<DType>(value)) != 0;
  if (!known)
    return Status::error(std::string(kernel) + ": unknown dtype " + std::to_string(value));
  const DType dtype = static_cast<DType>(value);
  if (reduction && !movable(dtype))
    return Status::error(std::string(kernel) + ": dtype " + dtypeName(dtype) +
                         " is not supported (the collectives sum f32, bf16 and f16)");
  const std::string expected = std::string("the dtype attribute is ") + dtypeName(dtype);
  for (size_t i = 0; i < args.inputs.size(); ++i)
    if (args.inputs[i].dtype != dtype)
      return Status::error(wrongDtype(kernel, operandRole("input", i), args.inputs[i], expected));
  for (size_t i = 0; i < args.outputs.size(); ++i)
    if (args.outputs[i].dtype != dtype)
      return Status::error(wrongDtype(kernel, operandRole("output", i), args.outputs[i], expected));
  return Status::ok();
}

// What all four kernels share: n >= 1 inputs, as many outputs (f32, bf16 or f16 of one dtype
// for every operand of a `reduction`; any dtype, output i of input i's, for the others),
// `num_ranks` >= 1 and a "dtype" attribute, if any, that agrees with them.
Status readCommon(const char *kernel, const KernelArgs &args, bool reduction, int *ranks) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::atLeast(1), Arity::atLeast(1)));
  if (args.inputs.size() != args.outputs.size())
    return Status::error(std::string(kernel) + ": expected as many outputs as inputs, got " +
                         std::to_string(args.inputs.size()) + " inputs and " +
                         std::to_string(args.outputs.size()) + " outputs");
  // Sums take floats; all_gather, all_to_all and shard_slice move bytes of any dtype.
  auto expectMovable = [&](const char *kind, size_t i, const Tensor &t) -> Status {
    if (!reduction || movable(t.dtype))
      return Status::ok();
    return Status::error(std::string(kernel) + ": " + operandRole(kind, i) + " is " +
                         dtypeName(t.dtype) + " (the collectives sum f32, bf16 and f16)");
  };
  for (size_t i = 0; i < args.inputs.size(); ++i)
    SHARDC_RETURN_IF_ERROR(expectMovable("input", i, args.inputs[i]));
  for (size_t i = 0; i < args.outputs.size(); ++i)
    SHARDC_RETURN_IF_ERROR(expectMovable("output", i, args.outputs[i]));
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    if (reduction) {
      const std::string expected = std::string("input 0 is ") + dtypeName(args.inputs[0].dtype) +
                                   " (one call sums one dtype)";
      if (args.inputs[i].dtype != args.inputs[0].dtype)
        return Status::error(wrongDtype(kernel, operandRole("input", i), args.inputs[i], expected));
      if (args.outputs[i].dtype != args.inputs[0].dtype)
        return Status::error(
            wrongDtype(kernel, operandRole("output", i), args.outputs[i], expected));
    } else if (args.outputs[i].dtype != args.inputs[i].dtype) {
      return Status::error(wrongDtype(kernel, operandRole("output", i), args.outputs[i],
                                      operandRole("input", i) + " is " +
                                          dtypeName(args.inputs[i].dtype) +
                                          " (a shard has its tensor's dtype)"));
    }
  }
  SHARDC_RETURN_IF_ERROR(readDtype(kernel, args, reduction));
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

// The bytes of one element of `t`.
int64_t bytesPerElement(const Tensor &t) { return static_cast<int64_t>(dtypeSize(t.dtype)); }

// ---- all_reduce ---------------------------------------------------------------------------------

// What an all_reduce moves: the packed buffer, `count` elements of `dtype` (padded to a multiple
// of the ranks).
struct Reduction {
  int ranks = 0;
  CommDType dtype = CommDType::F32;
  int64_t elementBytes = 4;
  int64_t count = 0;
};

// Checks and returns the padded element count of the packed buffer.
Status allReducePlan(const KernelArgs &args, Reduction *plan) {
  const char *kernel = "all_reduce";
  SHARDC_RETURN_IF_ERROR(readCommon(kernel, args, true, &plan->ranks));
  for (size_t i = 0; i < args.inputs.size(); ++i)
    SHARDC_RETURN_IF_ERROR(expectShape(kernel, operandRole("output", i).c_str(), args.outputs[i],
                                       args.inputs[i].shape));
  commDTypeOf(args.inputs[0].dtype, &plan->dtype);
  plan->elementBytes = bytesPerElement(args.inputs[0]);
  int64_t total = 0;
  SHARDC_RETURN_IF_ERROR(sumOver(
      kernel, args.inputs.size(), plan->ranks,
      [&](size_t i) { return args.inputs[i].numel() * plan->elementBytes; }, &total));
  plan->count = static_cast<int64_t>(
      paddedToRanks(static_cast<uint64_t>(total / plan->elementBytes), plan->ranks));
  return Status::ok();
}

// ---- reduce_scatter and all_gather --------------------------------------------------------------

// Checks reduce_scatter (tensors = inputs, shards = outputs) or all_gather (the reverse), and
// returns the bytes of one rank's shards over all tensors (its chunk).
Status shardedPlan(const char *kernel, const KernelArgs &args, bool gather, int *ranks,
                   int64_t *chunkBytes) {
  SHARDC_RETURN_IF_ERROR(readCommon(kernel, args, !gather, ranks));
  const std::vector<Tensor> &tensors = gather ? args.outputs : args.inputs;
  const std::vector<Tensor> &shards = gather ? args.inputs : args.outputs;
  SHARDC_RETURN_IF_ERROR(
      expectShardShapes(kernel, tensors, shards, gather ? "input" : "output", *ranks));
  return sumOver(
      kernel, tensors.size(), *ranks,
      [&](size_t i) {
        return shardNumel(tensors[i].numel(), *ranks) * bytesPerElement(tensors[i]);
      },
      chunkBytes);
}

// The element type all_gather and all_to_all move: the tensors' dtype when they share one, else
// raw bytes.
CommDType gatherDType(const KernelArgs &args) {
  CommDType dtype = CommDType::Bytes;
  const DType first = args.inputs[0].dtype;
  for (const Tensor &t : args.inputs)
    if (t.dtype != first)
      return CommDType::Bytes;
  commDTypeOf(first, &dtype);
  return dtype;
}

// Copies rank r's shard of `tensor` (k elements, zero past its end) to `dst` and returns the
// end of what it wrote.
unsigned char *copyShard(const Tensor &tensor, int64_t k, int r, unsigned char *dst) {
  const int64_t n = tensor.numel(), size = bytesPerElement(tensor);
  const int64_t begin = std::min(n, static_cast<int64_t>(r) * k);
  const int64_t end = std::min(n, begin + k);
  const size_t copied = static_cast<size_t>((end - begin) * size);
  if (copied != 0)
    std::memcpy(dst, tensor.as<const unsigned char>() + begin * size, copied);
  std::memset(dst + copied, 0, static_cast<size_t>((k - (end - begin)) * size));
  return dst + k * size;
}

// The workspace pieces of reduce_scatter (`whole` N chunks, then `shard` one) and all_gather
// (`shard`, then `whole`), in bytes, in the order both the kernel and its size function take
// them.
Status takeShardedPieces(const char *kernel, Workspace &workspace, bool gather, int ranks,
                         int64_t chunkBytes, unsigned char **whole, unsigned char **shard) {
  const int64_t wholeBytes = chunkBytes * ranks;
  if (gather) {
    SHARDC_RETURN_IF_ERROR(workspace.take(kernel, chunkBytes, shard));
    return workspace.take(kernel, wholeBytes, whole);
  }
  SHARDC_RETURN_IF_ERROR(workspace.take(kernel, wholeBytes, whole));
  return workspace.take(kernel, chunkBytes, shard);
}

// Copies the bytes of `tensors` back to back to `dst`; returns the end of what it wrote.
unsigned char *pack(const std::vector<Tensor> &tensors, unsigned char *dst) {
  for (const Tensor &t : tensors) {
    const size_t bytes = t.sizeBytes();
    if (bytes != 0)
      std::memcpy(dst, t.data, bytes);
    dst += bytes;
  }
  return dst;
}

// The reverse of pack: fills `tensors` from the bytes at `src`.
void unpack(const unsigned char *src, const std::vector<Tensor> &tensors) {
  for (const Tensor &t : tensors) {
    const size_t bytes = t.sizeBytes();
    if (bytes != 0)
      std::memcpy(t.data, src, bytes);
    src += bytes;
  }
}

// ---- all_to_all -------------------------------------------------------------------------------

// Checks all_to_all (output i of input i's shape, whose numel the ranks divide: piece r of
// tensor i, its elements [r*k, (r+1)*k) with k = numel / N, goes to rank r) and returns the
// bytes of one rank's pieces over all tensors (the communicator's chunk).
Status allToAllPlan(const KernelArgs &args, int *ranks, int64_t *chunkBytes) {
  const char *kernel = "all_to_all";
  SHARDC_RETURN_IF_ERROR(readCommon(kernel, args, false, ranks));
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    SHARDC_RETURN_IF_ERROR(expectShape(kernel, operandRole("output", i).c_str(), args.outputs[i],
                                       args.inputs[i].shape));
    if (args.inputs[i].numel() % *ranks != 0)
      return Status::error(std::string(kernel) + ": " + operandRole("input", i) + " has " +
                           std::to_string(args.inputs[i].numel()) + " elements, not a multiple " +
                           "of its " + std::to_string(*ranks) + " ranks");
  }
  return sumOver(
      kernel, args.inputs.size(), *ranks,
      [&](size_t i) { return args.inputs[i].numel() / *ranks * bytesPerElement(args.inputs[i]); },
      chunkBytes);
}

// The workspace of all_to_all: the packed pieces to send (N chunks), then those received.
Status takeAllToAllPieces(Workspace &workspace, int ranks, int64_t chunkBytes,
                          unsigned char **send, unsigned char **received) {
  SHARDC_RETURN_IF_ERROR(workspace.take("all_to_all", chunkBytes * ranks, send));
  return workspace.take("all_to_all", chunkBytes * ranks, received);
}

} // namespace

Status allReduceKernel(KernelArgs &args) {
  const char *kernel = "all_reduce";
  Reduction plan;
  SHARDC_RETURN_IF_ERROR(allReducePlan(args, &plan));
  Communicator *comm = nullptr;
  SHARDC_RETURN_IF_ERROR(requireComm(kernel, args, plan.ranks, &comm));
  Workspace workspace(args);
  unsigned char *buffer = nullptr;
  SHARDC_RETURN_IF_ERROR(workspace.take(kernel, plan.count * plan.elementBytes, &buffer));

  // All-zero bits are +0 in every float type.
  std::fill(pack(args.inputs, buffer), buffer + plan.count * plan.elementBytes,
            static_cast<unsigned char>(0));
  SHARDC_RETURN_IF_ERROR(comm->allReduceSum(buffer, static_cast<size_t>(plan.count), plan.dtype));
  unpack(buffer, args.outputs);
  return Status::ok();
}

Status allReduceWorkspace(const KernelArgs &args, uint64_t *bytes) {
  Reduction plan;
  SHARDC_RETURN_IF_ERROR(allReducePlan(args, &plan));
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    unsigned char *buffer = nullptr;
    return workspace.take("all_reduce", plan.count * plan.elementBytes, &buffer);
  });
}

Status reduceScatterKernel(KernelArgs &args) {
  const char *kernel = "reduce_scatter";
  int ranks = 0;
  int64_t chunkBytes = 0;
  SHARDC_RETURN_IF_ERROR(shardedPlan(kernel, args, false, &ranks, &chunkBytes));
  Communicator *comm = nullptr;
  SHARDC_RETURN_IF_ERROR(requireComm(kernel, args, ranks, &comm));
  Workspace workspace(args);
  unsigned char *whole = nullptr, *reduced = nullptr;
  SHARDC_RETURN_IF_ERROR(
      takeShardedPieces(kernel, workspace, false, ranks, chunkBytes, &whole, &reduced));

  // Rank-major: chunk r of the buffer is every tensor's shard r, so the communicator's
  // reduce-scatter hands rank r the sum of exactly its shards.
  for (int r = 0; r < ranks; ++r) {
    unsigned char *chunk = whole + static_cast<int64_t>(r) * chunkBytes;
    for (const Tensor &g : args.inputs)
      chunk = copyShard(g, shardNumel(g.numel(), ranks), r, chunk);
  }
  CommDType dtype = CommDType::F32;
  commDTypeOf(args.inputs[0].dtype, &dtype);
  SHARDC_RETURN_IF_ERROR(comm->reduceScatterSum(
      whole, reduced, static_cast<size_t>(chunkBytes / bytesPerElement(args.inputs[0])), dtype));
  unpack(reduced, args.outputs);
  return Status::ok();
}

Status reduceScatterWorkspace(const KernelArgs &args, uint64_t *bytes) {
  const char *kernel = "reduce_scatter";
  int ranks = 0;
  int64_t chunkBytes = 0;
  SHARDC_RETURN_IF_ERROR(shardedPlan(kernel, args, false, &ranks, &chunkBytes));
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    unsigned char *whole = nullptr, *reduced = nullptr;
    return takeShardedPieces(kernel, workspace, false, ranks, chunkBytes, &whole, &reduced);
  });
}

Status allGatherKernel(KernelArgs &args) {
  const char *kernel = "all_gather";
  int ranks = 0;
  int64_t chunkBytes = 0;
  SHARDC_RETURN_IF_ERROR(shardedPlan(kernel, args, true, &ranks, &chunkBytes));
  Communicator *comm = nullptr;
  SHARDC_RETURN_IF_ERROR(requireComm(kernel, args, ranks, &comm));
  Workspace workspace(args);
  unsigned char *gathered = nullptr, *own = nullptr;
  SHARDC_RETURN_IF_ERROR(
      takeShardedPieces(kernel, workspace, true, ranks, chunkBytes, &gathered, &own));

  pack(args.inputs, own);
  const CommDType dtype = gatherDType(args);
  SHARDC_RETURN_IF_ERROR(comm->allGather(
      own, gathered, static_cast<size_t>(chunkBytes / static_cast<int64_t>(commDTypeSize(dtype))),
      dtype));
  // Rank r's chunk holds every tensor's shard r; the padding past each tensor's end is dropped.
  int64_t offset = 0;
  for (const Tensor &p : args.outputs) {
    const int64_t n = p.numel(), k = shardNumel(n, ranks), size = bytesPerElement(p);
    unsigned char *dst = p.as<unsigned char>();
    for (int r = 0; r < ranks; ++r) {
      const int64_t begin = std::min(n, static_cast<int64_t>(r) * k);
      const int64_t end = std::min(n, begin + k);
      const unsigned char *src = gathered + static_cast<int64_t>(r) * chunkBytes + offset;
      if (end > begin)
        std::memcpy(dst + begin * size, src, static_cast<size_t>((end - begin) * size));
    }
    offset += k * size;
  }
  return Status::ok();
}

Status allGatherWorkspace(const KernelArgs &args, uint64_t *bytes) {
  const char *kernel = "all_gather";
  int ranks = 0;
  int64_t chunkBytes = 0;
  SHARDC_RETURN_IF_ERROR(shardedPlan(kernel, args, true, &ranks, &chunkBytes));
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    unsigned char *gathered = nullptr, *own = nullptr;
    return takeShardedPieces(kernel, workspace, true, ranks, chunkBytes, &gathered, &own);
  });
}

Status allToAllKernel(KernelArgs &args) {
  const char *kernel = "all_to_all";
  int ranks = 0;
  int64_t chunkBytes = 0;
  SHARDC_RETURN_IF_ERROR(allToAllPlan(args, &ranks, &chunkBytes));
  Communicator *comm = nullptr;
  SHARDC_RETURN_IF_ERROR(requireComm(kernel, args, ranks, &comm));
  Workspace workspace(args);
  unsigned char *send = nullptr, *received = nullptr;
  SHARDC_RETURN_IF_ERROR(takeAllToAllPieces(workspace, ranks, chunkBytes, &send, &received));

  // Rank-major: chunk r holds every tensor's piece r, which goes to rank r.
  for (int r = 0; r < ranks; ++r) {
    unsigned char *chunk = send + static_cast<int64_t>(r) * chunkBytes;
    for (const Tensor &t : args.inputs)
      chunk = copyShard(t, t.numel() / ranks, r, chunk);
  }
  const CommDType dtype = gatherDType(args);
  SHARDC_RETURN_IF_ERROR(comm->allToAll(
      send, received,
      static_cast<size_t>(chunkBytes / static_cast<int64_t>(commDTypeSize(dtype))), dtype));
  // Received chunk r is rank r's pieces for this rank: output i's piece r.
  int64_t offset = 0;
  for (const Tensor &out : args.outputs) {
    const int64_t pieceBytes = out.numel() / ranks * bytesPerElement(out);
    for (int r = 0; r < ranks; ++r)
      if (pieceBytes != 0)
        std::memcpy(out.as<unsigned char>() + r * pieceBytes,
                    received + static_cast<int64_t>(r) * chunkBytes + offset,
                    static_cast<size_t>(pieceBytes));
    offset += pieceBytes;
  }
  return Status::ok();
}

Status allToAllWorkspace(const KernelArgs &args, uint64_t *bytes) {
  int ranks = 0;
  int64_t chunkBytes = 0;
  SHARDC_RETURN_IF_ERROR(allToAllPlan(args, &ranks, &chunkBytes));
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    unsigned char *send = nullptr, *received = nullptr;
    return takeAllToAllPieces(workspace, ranks, chunkBytes, &send, &received);
  });
}

// ---- send_recv ----------------------------------------------------------------------------------

// What a send_recv moves: its inputs, packed, to rank `to`; its outputs, packed, from rank
// `from` (Communicator::kNoPeer for a side without tensors).
struct Transfer {
  int ranks = 0;
  int to = Communicator::kNoPeer, from = Communicator::kNoPeer;
  int64_t sendBytes = 0, recvBytes = 0;
  bool posted = false; // "posted": the send half does not wait for its receiver
};

// Reads "to" (when there are inputs) or "from" (when there are outputs): a rank of the
// communicator, -1 or absent exactly when that side has no tensors.
Status readPeer(const char *kernel, const KernelArgs &args, const char *name, bool used,
                int ranks, int *peer) {
  int64_t value = Communicator::kNoPeer;
  if (hasAttr(args, name))
    SHARDC_RETURN_IF_ERROR(getIntAttr(args, name, &value));
  if (!used && value != Communicator::kNoPeer)
    return Status::error(std::string(kernel) + ": " + name + " is " + std::to_string(value) +
                         ", but there is nothing to " +
                         (std::string(name) == "to" ? "send" : "receive"));
  if (used && (value < 0 || value >= ranks))
    return Status::error(std::string(kernel) + ": " + name + " must be a rank in [0, " +
                         std::to_string(ranks) + "), got " + std::to_string(value));
  *peer = static_cast<int>(value);
  return Status::ok();
}

// Checks send_recv: any tensors to send (inputs) and to receive (outputs), at least one of
// them, of any dtypes; `num_ranks` and the peers; a "dtype" attribute, if any, agreeing.
Status sendRecvPlan(const KernelArgs &args, Transfer *plan) {
  const char *kernel = "send_recv";
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::atLeast(0), Arity::atLeast(0)));
  if (args.inputs.empty() && args.outputs.empty())
    return Status::error(std::string(kernel) + ": needs a tensor to send or to receive");
  SHARDC_RETURN_IF_ERROR(readDtype(kernel, args, false));
  int64_t numRanks = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "num_ranks", &numRanks));
  if (numRanks < 2 || numRanks > INT_MAX)
    return Status::error(std::string(kernel) + ": num_ranks must be at least 2, got " +
                         std::to_string(numRanks));
  plan->ranks = static_cast<int>(numRanks);
  if (hasAttr(args, "posted")) {
    int64_t posted = 0;
    SHARDC_RETURN_IF_ERROR(getIntAttr(args, "posted", &posted));
    if (posted != 0 && posted != 1)
      return Status::error(std::string(kernel) + ": posted must be 0 or 1, got " +
                           std::to_string(posted));
    plan->posted = posted == 1;
  }
  SHARDC_RETURN_IF_ERROR(
      readPeer(kernel, args, "to", !args.inputs.empty(), plan->ranks, &plan->to));
  SHARDC_RETURN_IF_ERROR(
      readPeer(kernel, args, "from", !args.outputs.empty(), plan->ranks, &plan->from));
  auto bytesOf = [&](const std::vector<Tensor> &tensors, int64_t *total) {
    return sumOver(
        kernel, tensors.size(), 1,
        [&](size_t i) { return static_cast<int64_t>(tensors[i].sizeBytes()); }, total);
  };
  SHARDC_RETURN_IF_ERROR(bytesOf(args.inputs, &plan->sendBytes));
  return bytesOf(args.outputs, &plan->recvBytes);
}

// The workspace of send_recv: the packed inputs when there are several (one is sent from its
// own buffer), then the packed outputs when there are several.
Status takeTransferPieces(Workspace &workspace, const KernelArgs &args, const Transfer &plan,
                          unsigned char **send, unsigned char **received) {
  if (args.inputs.size() > 1)
    SHARDC_RETURN_IF_ERROR(workspace.take("send_recv", plan.sendBytes, send));
  if (args.outputs.size() > 1)
    SHARDC_RETURN_IF_ERROR(workspace.take("send_recv", plan.recvBytes, received));
  return Status::ok();
}

Status sendRecvKernel(KernelArgs &args) {
  const char *kernel = "send_recv";
  Transfer plan;
  SHARDC_RETURN_IF_ERROR(sendRecvPlan(args, &plan));
  Communicator *comm = nullptr;
  SHARDC_RETURN_IF_ERROR(requireComm(kernel, args, plan.ranks, &comm));
  Workspace workspace(args);
  unsigned char *send = nullptr, *received = nullptr;
  SHARDC_RETURN_IF_ERROR(takeTransferPieces(workspace, args, plan, &send, &received));
  if (args.inputs.size() == 1)
    send = args.inputs[0].as<unsigned char>();
  else if (send != nullptr)
    pack(args.inputs, send);
  if (args.outputs.size() == 1)
    received = args.outputs[0].as<unsigned char>();
  // Bytes: the two sides may hold different dtypes, and nothing is added.
  const size_t sendBytes = static_cast<size_t>(plan.sendBytes),
               recvBytes = static_cast<size_t>(plan.recvBytes);
  SHARDC_RETURN_IF_ERROR(
      plan.posted ? comm->transferPosted(send, sendBytes, plan.to, received, recvBytes, plan.from,
                                         CommDType::Bytes)
                  : comm->transfer(send, sendBytes, plan.to, received, recvBytes, plan.from,
                                   CommDType::Bytes));
  if (args.outputs.size() > 1)
    unpack(received, args.outputs);
  return Status::ok();
}

Status sendRecvWorkspace(const KernelArgs &args, uint64_t *bytes) {
  Transfer plan;
  SHARDC_RETURN_IF_ERROR(sendRecvPlan(args, &plan));
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    unsigned char *send = nullptr, *received = nullptr;
    return takeTransferPieces(workspace, args, plan, &send, &received);
  });
}

Status shardSliceKernel(KernelArgs &args) {
  const char *kernel = "shard_slice";
  int ranks = 0;
  SHARDC_RETURN_IF_ERROR(readCommon(kernel, args, false, &ranks));
  SHARDC_RETURN_IF_ERROR(expectShardShapes(kernel, args.inputs, args.outputs, "output", ranks));
  Communicator *comm = nullptr;
  SHARDC_RETURN_IF_ERROR(requireComm(kernel, args, ranks, &comm));
  const int rank = comm->rank();
  for (size_t i = 0; i < args.inputs.size(); ++i)
    copyShard(args.inputs[i], args.outputs[i].numel(), rank, args.outputs[i].as<unsigned char>());
  return Status::ok();
}

} // namespace shardc::runtime::cpu
