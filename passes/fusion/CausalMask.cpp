//===- CausalMask.cpp - attention masks that are the causal rule ------------------------===//
#include "passes/fusion/CausalMask.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Lowering/ConstantEvaluator.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>

namespace shardc::fusion {

using namespace mlir;

namespace {

// Masks are made by a handful of ops (a slice of a buffer, a comparison, an expand); a longer
// computation is left to run at runtime.
constexpr size_t kMaxMaskOps = 64;

bool hiddenByCausalRule(int64_t i, int64_t j, int64_t shift) { return j > i + shift; }

bool isLargeNegative(float value) { return value <= -std::ldexp(1.0f, 100); }

// Walks every [S, Sk] slice of a mask of `count` elements in row-major order, calling
// check(hidden, element index) for each; false as soon as a check fails.
template <typename Check>
bool everyElement(int64_t count, int64_t queries, int64_t keys, Check check) {
  const int64_t shift = keys - queries;
  for (int64_t e = 0; e < count; ++e) {
    const int64_t j = e % keys, i = (e / keys) % queries;
    if (!check(hiddenByCausalRule(i, j, shift), e))
      return false;
  }
  return true;
}

} // namespace

bool hasScoreSlices(Type mask, int64_t queries, int64_t keys) {
  auto type = dyn_cast<RankedTensorType>(mask);
  const int64_t rank = type ? type.getRank() : 0;
  return rank >= 2 && type.getDimSize(rank - 2) == queries && type.getDimSize(rank - 1) == keys &&
         queries <= keys;
}

std::optional<DenseElementsAttr> evaluateMask(Value v, const FrozenArgumentValue &frozen) {
  if (std::optional<DenseElementsAttr> constant = getConstantValue(v))
    return constant;
  auto known = [&](BlockArgument arg) { return frozen ? frozen(arg) : std::nullopt; };
  if (auto arg = dyn_cast<BlockArgument>(v))
    return known(arg);
  // The ops computing v (in an order where producers come first), back to constants and
  // arguments, which must be frozen ones.
  llvm::SetVector<Operation *> ops;
  BackwardSliceOptions options;
  options.omitBlockArguments = true;
  options.inclusive = true;
  getBackwardSlice(v, &ops, options);
  if (ops.size() > kMaxMaskOps)
    return std::nullopt;
  llvm::MapVector<Value, DenseElementsAttr> arguments;
  for (Operation *op : ops) {
    if (op->getNumRegions() > 0 || !isPure(op) || op->getBlock() != v.getParentBlock())
      return std::nullopt;
    for (Value operand : op->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(operand)) {
        std::optional<DenseElementsAttr> value = known(arg);
        if (!value)
          return std::nullopt;
        arguments[arg] = *value;
      }
  }

  // Evaluated on copies in a scratch function, so the graph itself is left as it is; the
  // evaluator's errors (it refuses what it cannot compute) are not the user's.
  MLIRContext *context = v.getContext();
  ScopedDiagnosticHandler quiet(context, [](Diagnostic &) { return success(); });
  OpBuilder b(context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> scratch = ModuleOp::create(loc);
  b.setInsertionPointToStart(scratch->getBody());
  auto func = b.create<func::FuncOp>(loc, "mask", b.getFunctionType({}, {v.getType()}));
  b.setInsertionPointToStart(func.addEntryBlock());
  IRMapping copies;
  for (auto &[arg, value] : arguments)
    copies.map(arg, b.create<graph::ConstantOp>(loc, value).getResult());
  SmallVector<Operation *> clones;
  for (Operation *op : ops)
    clones.push_back(b.clone(*op, copies));
  auto result = b.create<func::ReturnOp>(loc, copies.lookup(v));
  for (Operation *clone : clones) {
    if (isa<graph::ConstantOp>(clone))
      continue;
    bool folded = false;
    if (failed(tryFoldToConstants(clone, folded)) || !folded)
      return std::nullopt;
  }
  return getConstantValue(result.getOperand(0));
}

CausalHiding additiveCausalHiding(DenseElementsAttr mask, int64_t queries, int64_t keys) {
  if (!mask.getElementType().isF32() || !hasScoreSlices(mask.getType(), queries, keys))
    return CausalHiding::None;
  const SmallVector<float> values = llvm::to_vector(mask.getValues<float>());
  bool allInfinite = true;
  bool causal = everyElement(mask.getNumElements(), queries, keys, [&](bool hidden, int64_t e) {
    const float m = values[e];
    if (!hidden)
      return m == 0.0f;
    allInfinite = allInfinite && std::isinf(m);
    return isLargeNegative(m);
  });
  if (!causal)
    return CausalHiding::None;
  return allInfinite ? CausalHiding::NegInf : CausalHiding::Finite;
}

CausalHiding whereCausalHiding(DenseElementsAttr condition, bool fillIfTrue, float fill,
                               int64_t queries, int64_t keys) {
  if (!condition.getElementType().isInteger(1) || !isLargeNegative(fill) ||
      !hasScoreSlices(condition.getType(), queries, keys))
    return CausalHiding::None;
  const SmallVector<bool> values = llvm::to_vector(condition.getValues<bool>());
  bool causal = everyElement(condition.getNumElements(), queries, keys, [&](bool hidden, int64_t e) {
    return (values[e] == fillIfTrue) == hidden;
  });
  if (!causal)
    return CausalHiding::None;
  return std::isinf(fill) ? CausalHiding::NegInf : CausalHiding::Finite;
}

} // namespace shardc::fusion
