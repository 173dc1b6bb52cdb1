//===- FuseAttention.cpp - scaled dot-product attention as one op ------------------------===//
//
// Exports spell attention as separate ops: scores = Q·Kᵀ, a scale (Mul or Div by a constant,
// on the scores), masks (Where(cond, -inf, scores) from masked_fill, or an Add of a float mask),
// Softmax over the keys, and the product with V. Run unfused, every one of those ops reads and
// writes a [..., S, Sk] tensor, and the backward pass keeps the probabilities: memory and
// traffic grow with the square of the sequence. This pass replaces each such chain with one
// graph.attention op, whose kernels (FlashAttention style) never store a score matrix; its
// gradient recomputes the probabilities from the per-row log-sum-exp.
//
// What is fused, walking back from a Softmax over the last axis whose only reader is the left
// operand of a MatMul with V:
//   - Add(x, mask) or Add(mask, x): an additive mask; it must come after every scale (a scale
//     applied later would scale the mask too);
//   - Where(cond, fill, x) or Where(cond, x, fill), fill a constant: -inf anywhere in the
//     chain (a positive scale keeps -inf), or a finite fill <= -2^100 after every scale (then
//     fill + score rounds to fill for any score under 2^70, so Where and Add agree);
//   - Mul or Div by a finite positive scalar constant: the scale (several multiply);
//   - the MatMul(Q, Kᵀ) that starts it: Q [..., S, D], Kᵀ [..., D, Sk], V [..., Sk, Dv], all
//     with the same leading dims (no broadcasting between them).
// Every value of the chain must have that one reader, and the masks must not depend on a trained
// parameter (the fused op passes no gradient to its mask). Anything else (a dropout between the
// softmax and V, a cast, a mask read elsewhere) leaves the ops as they are. The masks are
// summed into one f32 tensor of their broadcast shape (a Where becomes Where(cond, fill, 0)).
// The result differs from the unfused ops by rounding: the scale is one f32 multiply and the
// dot products are summed in another order.
//
// A mask whose value the compiler can compute (constants, and buffers the training step never
// changes when the driver gives their values) and that hides exactly the causal rule's keys
// (CausalMask.h) becomes the op's causal flag instead of a mask operand: exact, since no query
// row is then fully hidden. Beside other masks only a -inf one does (a finite fill summed with
// another mask's could hide a whole row, which the unfused softmax makes uniform over every key);
// the kernels then hide those keys whatever the other masks add there (+inf or NaN, which an
// additive -inf mask would have turned into NaN, included).
//
//===-------------------------------------------------------------------------------------===//
#include "passes/fusion/FusionPasses.h"
#include "passes/fusion/CausalMask.h"

#include "shardc/Dialect/Graph/GradientUtils.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

namespace shardc {
#define GEN_PASS_DEF_FUSEATTENTION
#include "passes/fusion/FusionPasses.h.inc"

namespace {

using namespace mlir;

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

// The value of a constant scalar (one element, any rank) of type f32, if v is one.
std::optional<float> scalarConstant(Value v) {
  auto constant = v.getDefiningOp<graph::ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || dense.getNumElements() != 1 || !dense.getElementType().isF32())
    return std::nullopt;
  return (*dense.getValues<APFloat>().begin()).convertToFloat();
}

// Whether v is computed from a trained parameter (a function argument marked graph.param
// that is not marked graph.not_trainable).
bool readsTrainedParameter(Value v) {
  SmallVector<Value> work{v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(x)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (!func)
        return true; // inside some region: be safe
      if (func.getArgAttr(arg.getArgNumber(), graph::kParamAttr) &&
          !func.getArgAttr(arg.getArgNumber(), graph::kNotTrainableAttr))
        return true;
      continue;
    }
    Operation *op = x.getDefiningOp();
    if (op->getNumRegions() > 0)
      return true;
    for (Value operand : op->getOperands())
      work.push_back(operand);
  }
  return false;
}

// One mask of a chain: an additive f32 tensor, or a Where's condition with its constant fill.
struct MaskTerm {
  Value value;              // the additive mask, or the condition
  bool isWhere = false;
  float fill = 0;           // Where: the fill,
  bool fillIfTrue = false;  // written where the condition is true (else where it is false)
};

// One matched chain.
struct AttentionChain {
  graph::MatMulOp scores;        // Q·Kᵀ
  graph::SoftmaxOp softmax;
  graph::MatMulOp product;       // P·V
  SmallVector<Operation *> ops;  // scale and mask ops, softmax side first
  SmallVector<MaskTerm> masks;   // softmax side first, as ops
  double scale = 1.0;
  bool causal = false;           // masks that were the causal rule are gone from `masks`,
  SmallVector<Value> causalMasks; // into here
};

// Erases `op` when nothing reads it and it has no effects, then what only it read; `erased`
// holds what is gone already.
void eraseIfUnread(Operation *op, llvm::DenseSet<Operation *> &erased) {
  if (erased.contains(op) || !op->use_empty() || !isPure(op))
    return;
  SmallVector<Operation *> producers;
  for (Value operand : op->getOperands())
    if (Operation *producer = operand.getDefiningOp())
      producers.push_back(producer);
  erased.insert(op);
  op->erase();
  for (Operation *producer : producers)
    eraseIfUnread(producer, erased);
}

std::optional<AttentionChain> matchChain(graph::SoftmaxOp softmax) {
  AttentionChain chain;
  chain.softmax = softmax;
  RankedTensorType probs = typeOf(softmax.getOutput());
  const int64_t rank = probs.getRank();
  if (rank < 2 || static_cast<int64_t>(softmax.getAxis()) != rank - 1 ||
      !probs.getElementType().isF32() || !softmax.getOutput().hasOneUse())
    return std::nullopt;
  auto product = dyn_cast<graph::MatMulOp>(*softmax.getOutput().getUsers().begin());
  // Products that read an operand transposed (shardc-fold-transposes) are not the exported form.
  if (!product || product.getLhs() != softmax.getOutput() || product.getTransLhs() ||
      product.getTransRhs())
    return std::nullopt;
  chain.product = product;

  bool scaled = false; // a scale was seen (walking back: it comes before what was seen)
  Value x = softmax.getInput();
  while (true) {
    if (!x.hasOneUse() || typeOf(x) != probs)
      return std::nullopt;
    Operation *op = x.getDefiningOp();
    if (!op)
      return std::nullopt;
    if (auto matmul = dyn_cast<graph::MatMulOp>(op)) {
      if (matmul.getTransLhs() || matmul.getTransRhs())
        return std::nullopt;
      chain.scores = matmul;
      break;
    }
    chain.ops.push_back(op);
    if (isa<graph::MulOp, graph::DivOp>(op)) {
      // The scalar may be either operand of a Mul, only the divisor of a Div.
      Value lhs = op->getOperand(0), rhs = op->getOperand(1);
      std::optional<float> c = scalarConstant(rhs);
      Value next = lhs;
      if (!c && isa<graph::MulOp>(op)) {
        c = scalarConstant(lhs);
        next = rhs;
      }
      if (!c || !std::isfinite(*c) || *c <= 0)
        return std::nullopt;
      chain.scale *= isa<graph::MulOp>(op) ? static_cast<double>(*c) : 1.0 / *c;
      scaled = true;
      x = next;
      continue;
    }
    if (auto add = dyn_cast<graph::AddOp>(op)) {
      if (scaled)
        return std::nullopt;
      // The chain continues through the operand of the scores' full shape that an op makes;
      // the other is the mask. With both full-shaped, the left one is taken for the chain.
      Value lhs = add.getLhs(), rhs = add.getRhs();
      bool lhsChain = typeOf(lhs) == probs && lhs.getDefiningOp() && lhs.hasOneUse();
      Value mask = lhsChain ? rhs : lhs;
      x = lhsChain ? lhs : rhs;
      if (!typeOf(mask).getElementType().isF32() || readsTrainedParameter(mask))
        return std::nullopt;
      chain.masks.push_back({mask});
      continue;
    }
    if (auto where = dyn_cast<graph::WhereOp>(op)) {
      std::optional<float> fillX = scalarConstant(where.getX());
      std::optional<float> fillY = scalarConstant(where.getY());
      // Where(cond, fill, scores): fill where cond is true; Where(cond, scores, fill): false.
      bool fillIfTrue = fillX.has_value() && typeOf(where.getY()) == probs;
      std::optional<float> fill = fillIfTrue ? fillX : fillY;
      if (!fill || (!fillIfTrue && typeOf(where.getX()) != probs))
        return std::nullopt;
      const bool negInf = std::isinf(*fill) && *fill < 0;
      if (!negInf && (scaled || !(*fill <= -std::ldexp(1.0f, 100))))
        return std::nullopt;
      if (readsTrainedParameter(where.getCondition()))
        return std::nullopt;
      chain.masks.push_back({where.getCondition(), true, *fill, fillIfTrue});
      x = fillIfTrue ? where.getY() : where.getX();
      continue;
    }
    return std::nullopt;
  }

  // Q [..., S, D] · Kᵀ [..., D, Sk], V [..., Sk, Dv]: the kernel wants identical leading dims.
  Value q = chain.scores.getLhs(), kt = chain.scores.getRhs(), v = product.getRhs();
  ArrayRef<int64_t> qs = typeOf(q).getShape(), kts = typeOf(kt).getShape(),
                    vs = typeOf(v).getShape(), ps = probs.getShape();
  if (static_cast<int64_t>(qs.size()) != rank || static_cast<int64_t>(kts.size()) != rank ||
      static_cast<int64_t>(vs.size()) != rank)
    return std::nullopt;
  if (qs.drop_back(2) != ps.drop_back(2) || kts.drop_back(2) != ps.drop_back(2) ||
      vs.drop_back(2) != ps.drop_back(2) || vs[rank - 2] != ps[rank - 1])
    return std::nullopt;
  for (Value operand : {q, kt, v})
    if (!typeOf(operand).getElementType().isF32())
      return std::nullopt;
  return chain;
}

// Replaces the masks that hide exactly the causal rule's keys by the causal flag: all of them
// when they are the only masks, else those that hide with -inf.
void takeCausalMasks(AttentionChain &chain, const fusion::FrozenArgumentValue &frozen) {
  ArrayRef<int64_t> scores = typeOf(chain.softmax.getOutput()).getShape();
  const int64_t queries = scores[scores.size() - 2], keys = scores.back();
  SmallVector<fusion::CausalHiding> hiding;
  for (const MaskTerm &term : chain.masks) {
    // Only a mask of the scores' [S, Sk] can be the rule: no other is computed.
    std::optional<DenseElementsAttr> value =
        fusion::hasScoreSlices(term.value.getType(), queries, keys)
            ? fusion::evaluateMask(term.value, frozen)
            : std::nullopt;
    hiding.push_back(!value ? fusion::CausalHiding::None
                     : term.isWhere
                         ? fusion::whereCausalHiding(*value, term.fillIfTrue, term.fill, queries, keys)
                         : fusion::additiveCausalHiding(*value, queries, keys));
  }
  const bool onlyCausal = llvm::all_of(
      hiding, [](fusion::CausalHiding h) { return h != fusion::CausalHiding::None; });
  SmallVector<MaskTerm> kept;
  for (auto [term, h] : llvm::zip(chain.masks, hiding)) {
    if (h == fusion::CausalHiding::NegInf || (onlyCausal && h == fusion::CausalHiding::Finite)) {
      chain.causal = true;
      chain.causalMasks.push_back(term.value);
    } else
      kept.push_back(term);
  }
  chain.masks = std::move(kept);
}

void fuse(AttentionChain &chain) {
  OpBuilder b(chain.product);
  Location loc = chain.product.getLoc();
  // The masks, summed in the order they were applied (the first in the program first).
  Value mask;
  auto addTerm = [&](Value term) {
    mask = mask ? Value(b.create<graph::AddOp>(loc, mask, term)) : term;
  };
  // chain.masks runs softmax side first: reversed, it is the program's order.
  for (const MaskTerm &term : llvm::reverse(chain.masks)) {
    if (!term.isWhere) {
      addTerm(term.value);
      continue;
    }
    Value fill = graph::scalarF32(b, loc, term.fill), zero = graph::scalarF32(b, loc, 0.0f);
    addTerm(b.create<graph::WhereOp>(loc, term.value, term.fillIfTrue ? fill : zero,
                                     term.fillIfTrue ? zero : fill));
  }

  // K = (Kᵀ)ᵀ. Exports make Kᵀ with a Transpose of the projected keys: one Transpose of that
  // op's input with the two permutations composed then gives K (one copy instead of two).
  Value kt = chain.scores.getRhs();
  const int64_t rank = typeOf(kt).getRank();
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    perm.push_back(d);
  std::swap(perm[rank - 1], perm[rank - 2]);
  Value kSource = kt;
  auto inner = kt.getDefiningOp<graph::TransposeOp>();
  if (inner) {
    ArrayRef<int64_t> innerPerm = inner.getPerm();
    for (int64_t &d : perm)
      d = innerPerm[d];
    kSource = inner.getInput();
  }
  bool identity = true;
  for (int64_t d = 0; d < rank; ++d)
    identity = identity && perm[d] == d;
  Value k = identity ? kSource
                     : Value(b.create<graph::TransposeOp>(loc, kSource,
                                                          b.getDenseI64ArrayAttr(perm)));
  Value q = chain.scores.getLhs(), v = chain.product.getRhs();
  RankedTensorType outType = typeOf(chain.product.getResult());
  SmallVector<int64_t> lseShape(typeOf(q).getShape().drop_back());
  auto lseType = RankedTensorType::get(lseShape, b.getF32Type());
  auto attention = b.create<graph::AttentionOp>(
      chain.softmax.getLoc(), TypeRange{outType, lseType}, q, k, v, mask,
      b.getF32FloatAttr(static_cast<float>(chain.scale)), b.getBoolAttr(chain.causal));
  // What the chain read besides itself (the scales' and fills' constants, the causal masks'
  // computations) goes with it when nothing else reads it.
  llvm::SetVector<Operation *> producers;
  for (Operation *op : chain.ops)
    for (Value operand : op->getOperands())
      if (Operation *producer = operand.getDefiningOp())
        producers.insert(producer);
  for (Value causalMask : chain.causalMasks)
    if (Operation *producer = causalMask.getDefiningOp())
      producers.insert(producer);
  llvm::DenseSet<Operation *> erased;
  auto erase = [&](Operation *op) {
    erased.insert(op);
    op->erase();
  };
  chain.product.getResult().replaceAllUsesWith(attention.getOutput());
  erase(chain.product);
  erase(chain.softmax);
  for (Operation *op : chain.ops)
    erase(op);
  erase(chain.scores);
  if (inner && inner->use_empty())
    erase(inner);
  for (Operation *producer : producers)
    eraseIfUnread(producer, erased);
}

// The values of `func`'s frozen arguments: parameters marked not trainable that no result
// updates (graph.buffer), by `parameterValue`.
fusion::FrozenArgumentValue frozenArguments(func::FuncOp func,
                                            const ParameterValueFn &parameterValue) {
  if (!parameterValue)
    return nullptr;
  llvm::StringSet<> updated;
  for (unsigned r = 0; r < func.getNumResults(); ++r)
    if (auto name = func.getResultAttrOfType<StringAttr>(r, graph::kBufferAttr))
      updated.insert(name.getValue());
  return [func, parameterValue, updated](BlockArgument arg) -> std::optional<DenseElementsAttr> {
    func::FuncOp f = func;
    if (arg.getOwner() != &f.getBody().front())
      return std::nullopt;
    const unsigned i = arg.getArgNumber();
    auto name = f.getArgAttrOfType<StringAttr>(i, graph::kParamAttr);
    if (!name || !f.getArgAttr(i, graph::kNotTrainableAttr) || updated.contains(name.getValue()))
      return std::nullopt;
    return parameterValue(name.getValue());
  };
}

struct FuseAttentionPass : impl::FuseAttentionBase<FuseAttentionPass> {
  using FuseAttentionBase::FuseAttentionBase;
  explicit FuseAttentionPass(ParameterValueFn parameterValue)
      : parameterValue_(std::move(parameterValue)) {}

  void runOnOperation() override {
    fusion::FrozenArgumentValue frozen = frozenArguments(getOperation(), parameterValue_);
    SmallVector<graph::SoftmaxOp> softmaxes;
    getOperation().walk([&](graph::SoftmaxOp op) { softmaxes.push_back(op); });
    for (graph::SoftmaxOp softmax : softmaxes)
      if (std::optional<AttentionChain> chain = matchChain(softmax)) {
        takeCausalMasks(*chain, frozen);
        fuse(*chain);
      }
  }

private:
  ParameterValueFn parameterValue_;
};

} // namespace

std::unique_ptr<Pass> createFuseAttention(ParameterValueFn parameterValue) {
  return std::make_unique<FuseAttentionPass>(std::move(parameterValue));
}
} // namespace shardc
