// The steps of the `fused_elementwise` kernel (docs/kernels.md). Programs name them (the
// kernel's `steps` attribute, the names of the graph ops they replace: the compiler's list is
// compiler/include/shardc/Dialect/Graph/FusedSteps.h, checked against this one by a unit
// test); the numbers are the kernels' own.
#pragma once

#include <cstdint>
#include <string_view>

namespace shardc::runtime {

enum class FusedOp : int64_t {
  Neg = 0,
  Abs,
  Relu,
  Sqrt,
  Reciprocal,
  Exp,
  Log,
  Tanh,
  Erf,
  Sin,
  Cos,
  Sigmoid,
  Softplus,
  RoundBf16, // the f32 value of the bf16 that `cast` rounds to
  RoundF16,
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Max,
  Min,
};

constexpr int kNumFusedOps = static_cast<int>(FusedOp::Min) + 1;
constexpr int kMaxFusedInstructions = 64;

inline constexpr const char *kFusedOpNames[kNumFusedOps] = {
    "neg",     "abs",        "relu",      "sqrt", "reciprocal", "exp", "log", "tanh",
    "erf",     "sin",        "cos",       "sigmoid", "softplus", "round_bf16", "round_f16",
    "add",     "sub",        "mul",       "div",  "pow",        "max", "min"};

inline int fusedOpArity(FusedOp op) { return op >= FusedOp::Add ? 2 : 1; }

inline const char *fusedOpName(FusedOp op) {
  const int i = static_cast<int>(op);
  return i >= 0 && i < kNumFusedOps ? kFusedOpNames[i] : "?";
}

inline bool fusedOpFromName(std::string_view name, FusedOp *out) {
  for (int i = 0; i < kNumFusedOps; ++i)
    if (name == kFusedOpNames[i]) {
      *out = static_cast<FusedOp>(i);
      return true;
    }
  return false;
}

} // namespace shardc::runtime
