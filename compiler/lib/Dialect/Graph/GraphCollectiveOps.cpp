//===- GraphCollectiveOps.cpp - verifiers of the coalesced collectives ------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace shardc::graph;

namespace {

// The 1-D mesh a collective runs on, or an error naming the symbol.
FailureOr<mesh::MeshOp> lookupMesh(Operation *op, FlatSymbolRefAttr symbol,
                                   SymbolTableCollection &symbols) {
  auto meshOp = symbols.lookupNearestSymbolFrom<mesh::MeshOp>(op, symbol);
  if (!meshOp)
    return op->emitOpError("mesh ") << symbol << " is not a mesh.mesh";
  if (meshOp.getRank() != 1 || ShapedType::isDynamic(meshOp.getShape()[0]))
    return op->emitOpError("mesh ") << symbol << " must have one static axis (data parallel)";
  return meshOp;
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
LogicalResult verifyPairs(Operation *op, FlatSymbolRefAttr meshName, ValueRange inputs,
                          ValueRange results, SymbolTableCollection &symbols, bool sameType,
                          bool wholeIsInput) {
  FailureOr<mesh::MeshOp> meshOp = lookupMesh(op, meshName, symbols);
  if (failed(meshOp))
    return failure();
  if (inputs.size() != results.size() || inputs.empty())
    return op->emitOpError("needs as many results as operands, at least one");
  int64_t ranks = meshOp->getShape()[0];
  for (auto [i, in, out] : llvm::enumerate(inputs.getTypes(), results.getTypes())) {
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
  auto meshOp = symbols.lookupNearestSymbolFrom<mesh::MeshOp>(op, op.getMeshAttr());
  return meshOp && meshOp.getRank() == 1 ? meshOp.getShape()[0] : 0;
}

} // namespace

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPairs(*this, getMeshAttr(), getInputs(), getResults(), symbols, true, false);
}
LogicalResult ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPairs(*this, getMeshAttr(), getInputs(), getResults(), symbols, false, true);
}
LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPairs(*this, getMeshAttr(), getInputs(), getResults(), symbols, false, false);
}
LogicalResult ShardSliceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPairs(*this, getMeshAttr(), getInputs(), getResults(), symbols, false, true);
}

int64_t AllReduceOp::getNumRanks() { return meshRanks(*this); }
int64_t ReduceScatterOp::getNumRanks() { return meshRanks(*this); }
int64_t AllGatherOp::getNumRanks() { return meshRanks(*this); }
int64_t ShardSliceOp::getNumRanks() { return meshRanks(*this); }
