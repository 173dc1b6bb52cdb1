//===- ValueSharding.h - reading and writing the sharding of a value --------------------===//
//
// A value's sharding is an upstream `#mesh.shard<@mesh, [[axes of dim 0], ...], partial =
// sum[axes]>`: which mesh axes split each dimension, and over which axes the value is a
// pending sum. It is stored on the value's producer: `graph.sharding` on a function argument,
// `graph.shardings` (one per result) on an op. A value without one is replicated.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SHARDING_VALUESHARDING_H
#define SHARDC_PASSES_SHARDING_VALUESHARDING_H

#include "shardc/Dialect/Graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"

namespace shardc::sharding {

inline constexpr llvm::StringLiteral kResultShardingsAttr = "graph.shardings";
inline constexpr llvm::StringLiteral kArgShardingAttr = graph::kShardingAttr;

// The sharding of `v`, or null when it is replicated.
mlir::mesh::MeshShardingAttr getSharding(mlir::Value v);
// Records `sharding` for `v` (null: replicated, the annotation is dropped).
void setSharding(mlir::Value v, mlir::mesh::MeshShardingAttr sharding);

// Per dimension of `v`: the equal groups its split cuts (graph::kSplitGroupsAttr; 1: one).
llvm::SmallVector<int64_t> splitGroups(mlir::Value v);
// Records `groups` for `v` (all 1: the annotation is dropped).
void setSplitGroups(mlir::Value v, llvm::ArrayRef<int64_t> groups);

// Per dimension of `v`: the mesh axes that split it (empty: whole).
llvm::SmallVector<llvm::SmallVector<mlir::mesh::MeshAxis>> splitAxes(mlir::Value v);

// The sharding that splits dimension d of a tensor of rank `rank` on `axesOfDim[d]` and is
// pending over `partialAxes`; null when that is plain replication.
mlir::mesh::MeshShardingAttr
makeSharding(mlir::FlatSymbolRefAttr mesh,
             llvm::ArrayRef<llvm::SmallVector<mlir::mesh::MeshAxis>> axesOfDim,
             llvm::ArrayRef<mlir::mesh::MeshAxis> partialAxes = {});

// The bytes the runtime stores one element of `type` in (a bool in one).
int64_t bytesPerElement(mlir::RankedTensorType type);

} // namespace shardc::sharding

#endif
