//===- GraphDialect.h - the graph dialect -----------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_GRAPHDIALECT_H
#define SHARDC_DIALECT_GRAPH_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"

#include <string>

#include "shardc/Dialect/Graph/GraphDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "shardc/Dialect/Graph/GraphAttributes.h.inc"

namespace shardc::graph {
// Argument / result attribute names that carry ONNX names on @forward.
inline constexpr llvm::StringLiteral kInputAttr = "graph.input";
inline constexpr llvm::StringLiteral kParamAttr = "graph.param";
inline constexpr llvm::StringLiteral kOutputAttr = "graph.output";
// On a parameter argument that cannot be a trained parameter, why (e.g. "holds non-finite
// values": PyTorch trains no such tensor, it is a buffer such as an additive attention mask).
// The training step keeps it frozen.
inline constexpr llvm::StringLiteral kNotTrainableAttr = "graph.not_trainable";
// On @forward when the model records which parameters PyTorch trains (the shardc.trainable
// metadata): the trained set is then known, not guessed.
inline constexpr llvm::StringLiteral kTrainableRecordAttr = "graph.trainable_record";
// On @forward after shardc-lora-adapters: one dictionary per adapted weight, {weight, lora_A,
// lora_B: parameter names; scale: f64; weight_in_by_out: the weight is stored [in, out]}, what
// merging the adapters into the weights needs (shardrun --export-onnx --merge-lora).
inline constexpr llvm::StringLiteral kLoraMergesAttr = "graph.lora_merges";
// On @forward after shardc-quantize-base: one dictionary per quantized weight, {weight: the
// model's parameter name, format, weight_in_by_out}, for the export of the trained model (its
// base dequantized as the step computed with it).
inline constexpr llvm::StringLiteral kQuantizedBaseAttr = "graph.quantized_base";

// On a result of @forward (and of the training step): the new value of the parameter NAME,
// a buffer the model updates as it runs (BatchNormalization's running statistics). The
// parameter is not trained; after each step it holds this result.
inline constexpr llvm::StringLiteral kBufferAttr = "graph.buffer";

// Data parallelism (passes/dataparallel/DataParallel.h). On a training step: the mesh it runs
// on (a symbol reference to a 1-D mesh.mesh) and its ZeRO stage (0-3).
inline constexpr llvm::StringLiteral kMeshAttr = "graph.mesh";
inline constexpr llvm::StringLiteral kZeroStageAttr = "graph.zero_stage";
// On arguments and results of a sharded step: how the value is laid out on the mesh, an
// upstream #mesh.shard (split dimensions, e.g. the batch; none: replicated) or a
// #graph.flat_shard (ZeRO: flattened, zero-padded and split; GraphAttributes.td).
inline constexpr llvm::StringLiteral kShardingAttr = "graph.sharding";
// Beside a sharding that splits a dimension strided (ShardingRule.h): per dimension, the
// equal groups its split cuts (dense i64 array; 1: the dimension is one group). On arguments
// and results of a function; an op's results have one array each (an array attribute).
inline constexpr llvm::StringLiteral kSplitGroupsAttr = "graph.split_groups";
// On arguments and results of a step whose tensor-parallel split pads a dimension
// (passes/sharding/TensorParallelPadding.h): [dim, its size before padding] (dense i64
// array). Its type has the padded size; the bundle's Sharding records both.
inline constexpr llvm::StringLiteral kTpPaddingAttr = "graph.tp_padding";
// On a function whose batch is split (passes/sharding): the global batch size, the rows the
// data-parallel axis cuts into blocks.
inline constexpr llvm::StringLiteral kBatchSizeAttr = "graph.batch_size";
// On an op the batch's split cannot pass (passes/sharding: it needs a split dimension whole,
// pairs blocks of one, or has no rule): why, in words. The partitioner hands it every operand
// whole (an all-gather of what is split, an all-reduce of what is pending) and slices each
// result where the program wants it split, or computes it in blocks of a dimension it treats
// independently (all-to-all: passes/sharding/BlockedResharding.h) where that sends no more
// (resharding); plan.txt lists each such op.
inline constexpr llvm::StringLiteral kWholeOperandsAttr = "graph.whole_operands";
// On a function with such ops: one line per op, what it needs whole, how the partitioner
// reshards it and the bytes that sends; shardc copies them into plan.txt ("Resharding").
inline constexpr llvm::StringLiteral kReshardingAttr = "graph.resharding";
// On a training dropout whose tensor is split along the batch: the whole tensor's shape, the
// split dimension and the elements of it per row of the batch (a device's block starts at its
// first row times that). The lowering passes them to the dropout kernel.
inline constexpr llvm::StringLiteral kDropoutGlobalShapeAttr = "graph.global_shape";
inline constexpr llvm::StringLiteral kDropoutSplitDimAttr = "graph.split_dim";
inline constexpr llvm::StringLiteral kDropoutSplitUnitAttr = "graph.split_unit";
// On such a dropout in one microbatch of a step run as several (shardc-micro-batches): where
// the microbatch's block starts along the split dimension within the device's rows.
inline constexpr llvm::StringLiteral kDropoutSplitFirstAttr = "graph.split_first";
// On a training step with recomputation (shardc-remat): what it recomputes, one line per unit
// and a summary first (plan.txt prints them).
inline constexpr llvm::StringLiteral kRematAttr = "graph.remat";
// ... and how many units (repeated modules) it found: --remat auto plans per unit.
inline constexpr llvm::StringLiteral kRematUnitsAttr = "graph.remat_units";
// On a training step whose batch is run as several microbatches: how many.
inline constexpr llvm::StringLiteral kMicroBatchesAttr = "graph.micro_batches";
// On each op shardc-micro-batches cloned for one microbatch: its index. ZeRO-3 gathers a unit's
// parameters once per microbatch and pass (forward, backward) from it, as FSDP does, rather
// than holding them whole across the loop.
inline constexpr llvm::StringLiteral kMicroBatchAttr = "graph.micro_batch";
// On a training dropout whose tensor is also split along a dimension on another mesh axis
// (tensor or sequence parallelism): [that dimension, the mesh axis, the block's size]; the
// runtime sets each device's offset from its coordinate on the axis.
inline constexpr llvm::StringLiteral kDropoutBlockAttr = "graph.dropout_block";
// On an op whose indexed factor (ShardingRule.h: index blocks) is split: [mesh axis, the
// block's size, the whole dimension's size]. The lowering passes them to the kernel, and the
// runtime sets each device's index_offset from its coordinate on that axis.
inline constexpr llvm::StringLiteral kIndexBlockAttr = "graph.index_block";
// Pipeline parallelism (passes/pipeline): on each op of a step cut into stages, the stage
// that runs it (i64): shardc-assign-stages sets it on the forward ops, the gradient rules'
// ops inherit their forward op's, and shardc-split-stages gives every other op one.
inline constexpr llvm::StringLiteral kStageAttr = "graph.stage";
// On each op shardc-split-stages keeps in a step of the schedule: the step, as plan.txt writes
// it ("F3", "B2.1", "W0"). The program's ops carry it (Op.pipeline_step), so that shardrun's
// trace shows each rank's steps.
inline constexpr llvm::StringLiteral kPipelineStepAttr = "graph.pipeline_step";
// On the argument and result of a stage's parameter that another stage updates (a tied
// embedding): the stage reads it and returns the new value it receives; it is not trained
// here, and stays whole under ZeRO.
inline constexpr llvm::StringLiteral kPipelineCopyAttr = "graph.pipeline_copy";
// The schedule's predicted timeline as a Chrome trace (JSON text; the bundle's
// predicted_trace.json): each stage's steps and transfers as the simulation runs them.
inline constexpr llvm::StringLiteral kPipelineTraceAttr = "graph.pipeline_trace";
// On a stage's training step: the schedule (idle share, each stage's steps and what it holds,
// a text timeline) and the values crossing each cut, one line each, for plan.txt.
inline constexpr llvm::StringLiteral kPipelineScheduleAttr = "graph.pipeline_schedule";
inline constexpr llvm::StringLiteral kPipelineCutsAttr = "graph.pipeline_cuts";
// ... and on the forward function: what each stage holds, one line each, for plan.txt.
inline constexpr llvm::StringLiteral kStagesAttr = "graph.pipeline_stages";
// On a function with tensor parallelism: the layout's decisions, one string each (what was
// split on tp, what stays whole and why); shardc copies them into plan.txt.
inline constexpr llvm::StringLiteral kTpLayoutAttr = "graph.tp_layout";

// The location of an op made for one at `loc`: its node name + `suffix` ("/grad",
// "/all_reduce", ...), so plan.txt and errors name what it came from; `loc` itself when it
// has no name.
mlir::Location suffixedLoc(mlir::Location loc, llvm::StringRef suffix);

// The op's name for messages: its ONNX node name (the location's name) and kind, else its op
// name.
std::string nodeName(mlir::Operation *op);
} // namespace shardc::graph

#endif
