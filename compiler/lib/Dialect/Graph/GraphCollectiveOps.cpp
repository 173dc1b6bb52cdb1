//===- GraphCollectiveOps.cpp - verifiers of the coalesced collectives ------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace shardc::graph;

namespace {

// The number of ranks a collective on `meshOp` over `axes` (absent: the mesh's one axis) runs
// over; 0 when they do not name static axes of the mesh.
int64_t ranksOver(mesh::MeshOp meshOp, std::optional<ArrayRef<int16_t>> axes) {
  if (!meshOp)
    return 0;
  if (!axes)
    return meshOp.getRank() == 1 && !ShapedType::isDynamic(meshOp.getShape()[0])
               ? meshOp.getShape()[0]
               : 0;
  int64_t n = 1;
  for (int16_t a : *axes) {
    if (a < 0 || a >= meshOp.getRank() || ShapedType::isDynamic(meshOp.getShape()[a]))
      return 0;
    n *= meshOp.getShape()[a];
  }
  return axes->empty() ? 0 : n;
}

// The ranks a collective runs over, or an error naming the mesh and its axes.
FailureOr<int64_t> lookupRanks(Operation *op, FlatSymbolRefAttr symbol,
                               std::optional<ArrayRef<int16_t>> axes,
                               SymbolTableCollection &symbols) {
  auto meshOp = symbols.lookupNearestSymbolFrom<mesh::MeshOp>(op, symbol);
  if (!meshOp)
    return op->emitOpError("mesh ") << symbol << " is not a mesh.mesh";
  int64_t ranks = ranksOver(meshOp, axes);
  if (!ranks)
    return op->emitOpError("mesh_axes must name static axes of mesh ")
           << symbol << " (they may be left out only on a mesh of one axis)";
  return ranks;
}

int64_t numelOf(Type t) { return cast<RankedTensorType>(t).getNumElements(); }

// k = ceil(numel / N): the size of each rank's flat shard.
int64_t shardSize(int64_t numel, int64_t ranks) { return (numel + ranks - 1) / ranks; }

bool isFlatShard(Type shard, Type whole, int64_t ranks) {
  auto t = cast<RankedTensorType>(shard);
  return t.getRank() == 1 && t.getDimSize(0) == shardSize(numelOf(whole), ranks);
}

// Checks operand/result pairs: `wholeIsInput` says which side is the whole tensor for the
// sharding collectives; `sameType` is for all_reduce.
LogicalResult verifyPairs(Operation *op, FlatSymbolRefAttr meshName,
                          std::optional<ArrayRef<int16_t>> axes, ValueRange inputs,
                          ValueRange results, SymbolTableCollection &symbols, bool sameType,
                          bool wholeIsInput) {
  FailureOr<int64_t> meshRanks = lookupRanks(op, meshName, axes, symbols);
  if (failed(meshRanks))
    return failure();
  if (inputs.size() != results.size() || inputs.empty())
    return op->emitOpError("needs as many results as operands, at least one");
  int64_t ranks = *meshRanks;
  for (auto [i, in, out] : llvm::enumerate(inputs.getTypes(), results.getTypes())) {
    if (cast<RankedTensorType>(in).getElementType() != cast<RankedTensorType>(out).getElementType())
      return op->emitOpError("operand ")
             << i << " (" << in << ") and result " << i << " (" << out
             << ") have different element types";
    if (sameType ? in != out
                 : !(wholeIsInput ? isFlatShard(out, in, ranks) : isFlatShard(in, out, ranks)))
      return op->emitOpError("operand ")
             << i << " (" << in << ") and result " << i << " (" << out << ") do not match: "
             << (sameType ? "they must have the same type"
                          : "the shard must be tensor<ceil(numel / ranks)>");
  }
  return success();
}

template <typename Op> int64_t meshRanks(Op op) {
  SymbolTableCollection symbols;
  return ranksOver(symbols.lookupNearestSymbolFrom<mesh::MeshOp>(op, op.getMeshAttr()),
                   op.getMeshAxes());
}

} // namespace

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPairs(*this, getMeshAttr(), getMeshAxes(), getInputs(), getResults(), symbols, true, false);
}
LogicalResult ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPairs(*this, getMeshAttr(), getMeshAxes(), getInputs(), getResults(), symbols, false, true);
}
LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPairs(*this, getMeshAttr(), getMeshAxes(), getInputs(), getResults(), symbols, false, false);
}
LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(verifyPairs(*this, getMeshAttr(), getMeshAxes(), getInputs(), getResults(), symbols,
                         true, false)))
    return failure();
  const int64_t ranks = getNumRanks();
  for (auto [i, in] : llvm::enumerate(getInputs().getTypes()))
    if (numelOf(in) % ranks != 0)
      return emitOpError("operand ") << i << " (" << in << ") has " << numelOf(in)
                                     << " elements, not a multiple of its " << ranks << " ranks";
  return success();
}
LogicalResult ShardSliceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPairs(*this, getMeshAttr(), getMeshAxes(), getInputs(), getResults(), symbols, false, true);
}

LogicalResult SendRecvOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> ranks = lookupRanks(*this, getMeshAttr(), getMeshAxes(), symbols);
  if (failed(ranks))
    return failure();
  if (*ranks < 2)
    return emitOpError("runs over ") << *ranks << " rank: a transfer needs a peer";
  if (getInputs().empty() && getResults().empty())
    return emitOpError("needs a tensor to send or to receive");
  auto checkPeer = [&](std::optional<int64_t> peer, bool used, StringRef name,
                       StringRef side) -> LogicalResult {
    if (!used && peer)
      return emitOpError(name) << " is given, but there is nothing to " << side;
    if (used && !peer)
      return emitOpError("has tensors to ") << side << " but no " << name;
    if (used && (*peer < 0 || *peer >= *ranks))
      return emitOpError(name) << " " << *peer << " is not a rank of its " << *ranks << " ranks";
    return success();
  };
  return failure(failed(checkPeer(getSendTo(), !getInputs().empty(), "send_to", "send")) ||
                 failed(checkPeer(getRecvFrom(), !getResults().empty(), "recv_from", "receive")));
}

int64_t AllReduceOp::getNumRanks() { return meshRanks(*this); }
int64_t SendRecvOp::getNumRanks() { return meshRanks(*this); }
int64_t ReduceScatterOp::getNumRanks() { return meshRanks(*this); }
int64_t AllGatherOp::getNumRanks() { return meshRanks(*this); }
int64_t AllToAllOp::getNumRanks() { return meshRanks(*this); }
int64_t ShardSliceOp::getNumRanks() { return meshRanks(*this); }
