//===- LocalSharding.h - what an op's own partitioning may ask of the partitioner -------===//
//
// The partitioner (shardc-partition, passes/sharding) rewrites each op of the global program
// to its local form, the op on each device's blocks. The op's sharding rule says most of it:
// the partitioner gives every result its local type and tracks pending sums generically. What
// the rule cannot say, an op says itself through ShardingRuleOpInterface's two hooks
// (ShardingRuleInterface.td): buildLocalForm, for an op whose local form is other ops
// (graph.global_norm), and localizeOp, for an op that holds shapes in its attributes or
// operands (split sizes, slice ends, a constant's value, a dropout's whole tensor). The hooks
// ask the partitioner through this context: what the global program held, how values are
// split and what a split leaves each device, and to build the collectives it owns.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_LOCALSHARDING_H
#define SHARDC_DIALECT_GRAPH_LOCALSHARDING_H

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace shardc::graph {

class LocalShardingContext {
public:
  virtual ~LocalShardingContext() = default;

  // The type `result`, a result of the op being rewritten, had in the global program (its
  // local type is set between the two hooks: buildLocalForm sees the global one still).
  virtual mlir::Type globalType(mlir::OpResult result) const = 0;

  // Per dimension of `v`: the mesh axes that split it (empty: whole).
  virtual llvm::SmallVector<llvm::SmallVector<mlir::mesh::MeshAxis>>
  splitAxes(mlir::Value v) const = 0;
  // Per dimension of `v`: the equal groups its split cuts (1: one; ShardingRule.h, strided).
  virtual llvm::SmallVector<int64_t> splitGroups(mlir::Value v) const = 0;
  // The mesh axes that split some dimension of `v`, ascending (empty: `v` is whole).
  virtual llvm::SmallVector<mlir::mesh::MeshAxis> axesSplitting(mlir::Value v) const = 0;

  // The local size of a dimension of global size `size` split on `axes`: the batch's rows on
  // the data-parallel axis (0), an even block on any other.
  virtual int64_t localSize(int64_t size, llvm::ArrayRef<mlir::mesh::MeshAxis> axes) const = 0;
  // The global batch's rows (of which each device holds its own).
  virtual int64_t batchSize() const = 0;

  // The sum of `v` over the mesh axes `axes` (every device then holds it): an all-reduce on the
  // step's mesh, built at `builder`'s insertion point and named for `loc`.
  virtual mlir::Value buildAllReduce(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value v,
                                     llvm::ArrayRef<mlir::mesh::MeshAxis> axes) = 0;
};

// The block of the constant `dense` a device of local type `local` holds, when it is the same
// on every device (a splat, or a constant split along the batch that repeats for every row);
// nullopt when the devices' blocks differ (the partitioner then slices the whole constant).
std::optional<mlir::DenseElementsAttr>
sameBlockOnEveryDevice(mlir::DenseElementsAttr dense, mlir::RankedTensorType local,
                       llvm::ArrayRef<llvm::SmallVector<mlir::mesh::MeshAxis>> axes,
                       int64_t batch);

} // namespace shardc::graph

#endif
