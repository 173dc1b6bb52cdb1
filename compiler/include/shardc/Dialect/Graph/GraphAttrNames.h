//===- GraphAttrNames.h - names of the memory plan's attributes on graph IR --------------===//
//
// shardc-plan-memory (passes/lowering) writes these on the planned function and its ops; the
// program emitter and the step's cost model (compiler/lib/Lowering) read them. Their names
// start with "shardc." rather than "graph.", so they live in namespace shardc; the attributes
// the dialect's own functions carry (graph::kParamAttr, graph::kShardingAttr, ...) are in
// GraphDialect.h.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_GRAPHATTRNAMES_H
#define SHARDC_DIALECT_GRAPH_GRAPHATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace shardc {
// Each op's result offsets in the arena, a graph-input argument's offset, and the arena's size
// (the planned peak, on the function).
inline constexpr llvm::StringLiteral kOffsetsAttr = "shardc.offsets";
inline constexpr llvm::StringLiteral kArgOffsetAttr = "shardc.offset";
inline constexpr llvm::StringLiteral kArenaBytesAttr = "shardc.arena_bytes";
// The workspace an op's kernel needs (only on ops that need one) and the rank's workspace size
// (the largest need, on the function).
inline constexpr llvm::StringLiteral kWorkspaceAttr = "shardc.workspace";
inline constexpr llvm::StringLiteral kWorkspaceBytesAttr = "shardc.workspace_bytes";
// On a collective that runs asynchronously (the runtime waits for it before the first op that
// reads its results), and the function's workspace for those collectives' scratch.
inline constexpr llvm::StringLiteral kAsyncAttr = "shardc.async";
inline constexpr llvm::StringLiteral kCommWorkspaceBytesAttr = "shardc.comm_workspace_bytes";
// On a graph result: it is written over the bytes of the graph input of the same name (state
// the step updates in place; Binding.in_place in the program).
inline constexpr llvm::StringLiteral kInPlaceAttr = "shardc.in_place";
} // namespace shardc

#endif
