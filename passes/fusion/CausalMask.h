//===- CausalMask.h - attention masks that are the causal rule --------------------------===//
//
// A fused attention whose mask is exactly "key j is hidden from query i when j > i + Sk - S"
// needs no mask at all: its causal flag makes the kernels skip the hidden key tiles (half the
// work at S = Sk) and read no [S, Sk] tensor. Exports spell that mask in many ways (a boolean
// constant and a Where, Hugging Face's additive [B, 1, S, Sk] constant of finfo.min, a float
// buffer of 0 / -inf sliced to the sequence), so the mask's value is computed at compile time
// and compared element by element; what cannot be computed, or differs anywhere, stays a mask.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_FUSION_CAUSALMASK_H
#define SHARDC_PASSES_FUSION_CAUSALMASK_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Types.h"
#include "mlir/IR/Value.h"

#include <cstdint>
#include <functional>
#include <optional>

namespace shardc::fusion {

// The value of a frozen parameter argument (a buffer the training step never changes), or
// nullopt when it is not known.
using FrozenArgumentValue = std::function<std::optional<mlir::DenseElementsAttr>(mlir::BlockArgument)>;

// Whether a mask of type `mask` can be the causal rule of scores [..., S, Sk]: its last two
// dims are [S, Sk] (any leading dims: each [S, Sk] slice is checked) and S <= Sk. With S > Sk
// the first query rows would have every key hidden, where a -inf mask gives NaN and a finite one
// a uniform row: the causal flag promises neither.
bool hasScoreSlices(mlir::Type mask, int64_t queries, int64_t keys);

// The value of `v` when the compiler can compute it: from graph constants and the frozen
// arguments `frozen` knows, through at most a few dozen ops evaluated with the runtime's CPU
// kernels (shardc/Lowering/ConstantEvaluator.h); nullopt otherwise.
std::optional<mlir::DenseElementsAttr> evaluateMask(mlir::Value v,
                                                   const FrozenArgumentValue &frozen);

// How a mask hides keys, when it hides exactly the causal rule's in every [S, Sk] slice and
// leaves the others alone.
enum class CausalHiding {
  None,     // not the causal rule (or not known)
  NegInf,   // hidden scores become -inf
  Finite,   // hidden scores become a finite value <= -2^100 (e.g. finfo.min), visible +0
};

// An additive f32 mask of value `mask` applied to scores [..., S, Sk]: visible entries 0,
// hidden ones -inf or <= -2^100.
CausalHiding additiveCausalHiding(mlir::DenseElementsAttr mask, int64_t queries, int64_t keys);

// A Where mask: the boolean condition `condition`, whose `fillIfTrue` side is hidden, with
// the fill `fill` (-inf or <= -2^100).
CausalHiding whereCausalHiding(mlir::DenseElementsAttr condition, bool fillIfTrue, float fill,
                               int64_t queries, int64_t keys);

} // namespace shardc::fusion

#endif
