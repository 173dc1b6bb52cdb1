//===- GraphDialect.h - the graph dialect -----------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_GRAPHDIALECT_H
#define SHARDC_DIALECT_GRAPH_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "shardc/Dialect/Graph/GraphDialect.h.inc"

namespace shardc::graph {
// Argument / result attribute names that carry ONNX names on @forward.
inline constexpr llvm::StringLiteral kInputAttr = "graph.input";
inline constexpr llvm::StringLiteral kParamAttr = "graph.param";
inline constexpr llvm::StringLiteral kOutputAttr = "graph.output";

// Data parallelism (passes/DataParallel.h). On a training step: the mesh it runs on (a symbol
// reference to a 1-D mesh.mesh) and its ZeRO stage (0-3).
inline constexpr llvm::StringLiteral kMeshAttr = "graph.mesh";
inline constexpr llvm::StringLiteral kZeroStageAttr = "graph.zero_stage";
// On arguments and results: "batch" (dim 0 is split across the ranks: each rank holds its own
// rows), "replicated" (every rank holds all of it) or "flat_shard" (flattened, zero-padded to
// a multiple of the rank count, and split: the value is this rank's tensor<ceil(numel/N)>).
inline constexpr llvm::StringLiteral kShardingAttr = "graph.sharding";
// On "flat_shard" arguments and results: the shape of the whole tensor.
inline constexpr llvm::StringLiteral kGlobalShapeAttr = "graph.global_shape";
} // namespace shardc::graph

#endif
