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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"

namespace shardc::sharding {

inline constexpr llvm::StringLiteral kResultShardingsAttr = "graph.shardings";
inline constexpr llvm::StringLiteral kArgShardingAttr = "graph.sharding";
// On a function whose batch is split: the global batch size (the rows the data-parallel axis
// cuts into blocks: every dimension in the batch's class is a multiple of it).
inline constexpr llvm::StringLiteral kBatchSizeAttr = "graph.batch_size";
// On a training dropout whose tensor is split along the batch: the whole tensor's shape, the
// split dimension and the elements of it per row of the batch (a device's block starts at
// its first row times that).
inline constexpr llvm::StringLiteral kDropoutGlobalShapeAttr = "graph.global_shape";
inline constexpr llvm::StringLiteral kDropoutSplitDimAttr = "graph.split_dim";
inline constexpr llvm::StringLiteral kDropoutSplitUnitAttr = "graph.split_unit";

// The sharding of `v`, or null when it is replicated.
mlir::mesh::MeshShardingAttr getSharding(mlir::Value v);
// Records `sharding` for `v` (null: replicated, the annotation is dropped).
void setSharding(mlir::Value v, mlir::mesh::MeshShardingAttr sharding);

// Per dimension of `v`: the mesh axes that split it (empty: whole).
llvm::SmallVector<llvm::SmallVector<mlir::mesh::MeshAxis>> splitAxes(mlir::Value v);
// True when `v` is a pending sum over some mesh axis.
bool isPartial(mlir::Value v);

// The sharding that splits dimension d of a tensor of rank `rank` on `axesOfDim[d]` and is
// pending over `partialAxes`; null when that is plain replication.
mlir::mesh::MeshShardingAttr
makeSharding(mlir::FlatSymbolRefAttr mesh,
             llvm::ArrayRef<llvm::SmallVector<mlir::mesh::MeshAxis>> axesOfDim,
             llvm::ArrayRef<mlir::mesh::MeshAxis> partialAxes = {});

} // namespace shardc::sharding

#endif
