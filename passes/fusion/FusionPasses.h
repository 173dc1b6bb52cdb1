//===- FusionPasses.h - the fusion passes ------------------------------------------------===//
// Declared in FusionPasses.td: each pass's create function and options, and
// registerFusionPasses().
#ifndef SHARDC_PASSES_FUSION_FUSIONPASSES_H
#define SHARDC_PASSES_FUSION_FUSIONPASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/Pass.h"

#include <functional>
#include <optional>

namespace shardc {

#define GEN_PASS_DECL
#include "passes/fusion/FusionPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/fusion/FusionPasses.h.inc"

// The value of a parameter by its ONNX name (graph.param), when known.
using ParameterValueFn = std::function<std::optional<mlir::DenseElementsAttr>(llvm::StringRef)>;
// shardc-fuse-attention knowing the parameters' values: a mask computed from a frozen one (a
// buffer that is neither trained nor updated, such as a causal mask) can then be recognised as
// the causal rule, as one computed from constants always is.
std::unique_ptr<mlir::Pass> createFuseAttention(ParameterValueFn parameterValue);

} // namespace shardc

#endif
