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
//===-------------------------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "shardc/Dialect/Graph/GradientUtils.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include "llvm/ADT/SetVector.h"

#include <cmath>

namespace shardc {
#define GEN_PASS_DEF_FUSEATTENTION
#include "passes/Passes.h.inc"

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
};

std::optional<AttentionChain> matchChain(graph::SoftmaxOp softmax) {
  AttentionChain chain;
  chain.softmax = softmax;
  RankedTensorType probs = typeOf(softmax.getOutput());
  const int64_t rank = probs.getRank();
  if (rank < 2 || static_cast<int64_t>(softmax.getAxis()) != rank - 1 ||
      !probs.getElementType().isF32() || !softmax.getOutput().hasOneUse())
    return std::nullopt;
  auto product = dyn_cast<graph::MatMulOp>(*softmax.getOutput().getUsers().begin());
  if (!product || product.getLhs() != softmax.getOutput())
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
      b.getF32FloatAttr(static_cast<float>(chain.scale)), b.getBoolAttr(false));
  // The chain's constants (scales, fills) that nothing else reads go with it.
  llvm::SetVector<Operation *> constants;
  for (Operation *op : chain.ops)
    for (Value operand : op->getOperands())
      if (auto constant = operand.getDefiningOp<graph::ConstantOp>())
        constants.insert(constant);
  chain.product.getResult().replaceAllUsesWith(attention.getOutput());
  chain.product.erase();
  chain.softmax.erase();
  for (Operation *op : chain.ops)
    op->erase();
  Operation *scores = chain.scores;
  scores->erase();
  if (inner && inner->use_empty())
    inner->erase();
  for (Operation *constant : constants)
    if (constant->use_empty())
      constant->erase();
}

struct FuseAttentionPass : impl::FuseAttentionBase<FuseAttentionPass> {
  using FuseAttentionBase::FuseAttentionBase;

  void runOnOperation() override {
    SmallVector<graph::SoftmaxOp> softmaxes;
    getOperation().walk([&](graph::SoftmaxOp op) { softmaxes.push_back(op); });
    for (graph::SoftmaxOp softmax : softmaxes)
      if (std::optional<AttentionChain> chain = matchChain(softmax))
        fuse(*chain);
  }
};

} // namespace
} // namespace shardc
