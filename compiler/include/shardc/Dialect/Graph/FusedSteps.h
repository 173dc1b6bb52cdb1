//===- FusedSteps.h - the steps graph.fused_elementwise runs -----------------------------===//
//
// A step is named after the graph op it stands for (round_bf16 / round_f16: a cast to a
// 16-bit float); the `fused_elementwise` kernel reads the same names (docs/kernels.md), and a
// unit test checks the two lists agree (tests/unit/compiler/fused_steps_test.cpp).
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_FUSEDSTEPS_H
#define SHARDC_DIALECT_GRAPH_FUSEDSTEPS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace shardc::graph {

// Every step, in the kernel's order: the unary ones, then the binary ones.
llvm::ArrayRef<llvm::StringRef> fusedStepNames();
// The operands of step `name`: 1 or 2; 0 when there is no such step.
int fusedStepArity(llvm::StringRef name);
// At most this many steps in one op (the kernels' limit).
inline constexpr int kMaxFusedSteps = 64;

} // namespace shardc::graph

#endif
