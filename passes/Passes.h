//===- Passes.h - shardc passes ----------------------------------------------------------===//
#ifndef SHARDC_PASSES_PASSES_H
#define SHARDC_PASSES_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Pass/Pass.h"

#include <functional>
#include <optional>

#include "shardc/Dialect/Graph/GraphDialect.h"

namespace shardc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

// Attribute names written by the plan-memory pass and read by the program emitter.
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

// The value of a parameter by its ONNX name (graph.param), when known.
using ParameterValueFn = std::function<std::optional<mlir::DenseElementsAttr>(llvm::StringRef)>;
// shardc-fuse-attention knowing the parameters' values: a mask computed from a frozen one (a
// buffer that is neither trained nor updated, such as a causal mask) can then be recognised as
// the causal rule, as one computed from constants always is.
std::unique_ptr<mlir::Pass> createFuseAttention(ParameterValueFn parameterValue);

} // namespace shardc

#endif
