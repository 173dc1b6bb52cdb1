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
} // namespace shardc::graph

#endif
