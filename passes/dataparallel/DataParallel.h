//===- DataParallel.h - what the data-parallel passes share ------------------------------===//
//
// The attributes that describe how a training step is laid out on the data-parallel mesh, and
// the analysis of @train_step that the collective-inserting passes (AllReduceGradients,
// ShardOptimizerState, ShardParameters) start from.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_DATAPARALLEL_DATAPARALLEL_H
#define SHARDC_PASSES_DATAPARALLEL_DATAPARALLEL_H

#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <string>

namespace shardc::dp {

// The layout attributes, shared with the program emitter.
using graph::kMeshAttr;
using graph::kShardingAttr;
using graph::kZeroStageAttr;

// One trained parameter of @train_step and the values around its optimizer update.
struct TrainedParam {
  std::string name;
  mlir::BlockArgument param;
  mlir::Value grad;                 // the gradient, as the backward pass leaves it
  graph::ScaleByClipOp clip;        // grad -> clipped grad, when clipping is on
  mlir::Operation *update = nullptr; // graph.adamw_update or graph.sgd_update
  llvm::SmallVector<mlir::BlockArgument> state;
  unsigned paramResult = 0;         // index of the updated parameter among the results
  llvm::SmallVector<unsigned> stateResults;
};

struct TrainStepView {
  mlir::func::FuncOp func;
  mlir::mesh::MeshOp mesh;
  // The mesh axes the data-parallel collectives run over: null on a 1-D mesh (its one axis),
  // [0] (dp) on a dp x tp mesh.
  mlir::DenseI16ArrayAttr dpAxes;
  int64_t ranks = 1; // devices on the data-parallel axis
  int zeroStage = 0;
  llvm::SmallVector<TrainedParam> params; // in argument order
  // When clipping is on: the total norm the clips read, and the graph.global_norm ops it is
  // computed from (one, or one per tensor-parallel layout after shardc-partition).
  mlir::Value totalNorm;
  llvm::SmallVector<graph::GlobalNormOp> norms;
  mlir::Operation *lossDef = nullptr;     // the op computing the loss: forward ends here
  // Whether shardc-partition annotated the step (graph.shardings on some op); a step written
  // by hand without them is every rank's pending part (pendingOverDataParallel).
  bool partitioned = false;
};

// Reads @train_step's layout (set by shardc-place-on-mesh); an error when it is missing.
mlir::FailureOr<TrainStepView> analyzeTrainStep(mlir::func::FuncOp func);

// k = ceil(numel / ranks): the length of each rank's flat shard.
int64_t shardLength(int64_t numel, int64_t ranks);
mlir::RankedTensorType flatShardType(mlir::Type whole, int64_t ranks);

// Whether `v` is a pending sum over the data-parallel axis (mesh axis 0), as shardc-partition
// annotates the loss and the gradients of each rank's rows. A loss or gradient that adds a
// term that does not depend on the batch (a regulariser of the weights) to a sum over it is
// already whole: the partitioner summed the batch part before the addition. A step that was
// not partitioned (no op annotated: written by hand, as the passes' own tests are) is taken
// as every rank's pending part, as the passes did before the partitioner existed.
bool pendingOverDataParallel(const TrainStepView &view, mlir::Value v);

// Makes the loss global: the step returns the sum over the ranks of each rank's (already
// partitioned: a pending sum) loss, with an upstream mesh.all_reduce before the return; a loss
// that is already whole is returned as it is.
void allReduceLoss(TrainStepView &view);

// The gradients of `view` that are pending sums over dp (to reduce), and the whole ones.
void splitPendingGradients(TrainStepView &view, llvm::SmallVectorImpl<mlir::Value> &pending,
                           llvm::SmallVectorImpl<mlir::Value> &whole);

// With sharded gradients, each rank's total norm covers only its shards: square it, sum over
// the dp ranks (mesh.all_reduce) and take the root, so clipping uses the global norm.
void globalizeGradientNorm(TrainStepView &view);

// Groups `values` (in the order they become final) into buckets of at least `bucketBytes`
// bytes each (the last may be smaller; a tensor larger than that is a bucket of its own).
llvm::SmallVector<llvm::SmallVector<mlir::Value>> formBuckets(llvm::ArrayRef<mlir::Value> values,
                                                              uint64_t bucketBytes);

// The op after which `values` are all computed (the latest defining op in block order).
mlir::Operation *lastDefinition(llvm::ArrayRef<mlir::Value> values);

// Sorts values by the position of their defining op (arguments first).
void sortByDefinition(llvm::SmallVectorImpl<mlir::Value> &values);

// Replaces the uses of `from` that come after `after` (in block order) by `to`.
void replaceUsesAfter(mlir::Value from, mlir::Value to, mlir::Operation *after);

// Changes an argument of `func` (and its type in the signature) to `type`.
void setArgumentType(mlir::func::FuncOp func, mlir::BlockArgument arg, mlir::Type type);
// Recomputes the function type from the block arguments and the return operands.
void refreshFunctionType(mlir::func::FuncOp func);

// The tensor-parallel split a sharding attribute holds: a #mesh.shard that splits some
// dimension, or a flat shard's block; null otherwise.
mlir::mesh::MeshShardingAttr tensorParallelBlock(mlir::Attribute sharding);

// Marks argument or result attribute lists as flat shards over dp of the device's tensor of
// `wholeShape` (its tensor-parallel block, when it is split on tp: the split is kept).
void markFlatShardArg(mlir::func::FuncOp func, unsigned index, llvm::ArrayRef<int64_t> wholeShape);
void markFlatShardResult(mlir::func::FuncOp func, unsigned index,
                         llvm::ArrayRef<int64_t> wholeShape);

// Makes `p`'s optimizer update work on flat shards: it (and the clip and the gradient norm,
// when clipping is on) reads `gradShard` instead of the whole gradient, its optimizer state
// arguments and results become flat shards of the parameter's shape, and so do the update's
// results. The parameter operand is the caller's (a shard_slice, or the sharded argument).
// Call while p.param still has the whole parameter's type.
void updateOnShards(TrainStepView &view, TrainedParam &p, mlir::Value gradShard);

// The step keeps only shards of the trained parameters (ZeRO-3, or the master weights of
// ZeRO-1/2 under 16-bit storage): every update works on shards (updateOnShards with
// gradShard[p.grad]), each parameter's argument and updated result become its flat shard, the
// gradient norm is made global and the function type follows.
void keepParameterShards(TrainStepView &view,
                         const llvm::DenseMap<mlir::Value, mlir::Value> &gradShard);

// The earliest op of the optimizer phase: the gradient norm, a clip or an update.
mlir::Operation *firstOptimizerOp(const TrainStepView &view);

} // namespace shardc::dp

#endif
