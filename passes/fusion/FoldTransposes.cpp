//===- FoldTransposes.cpp - products that read their operands transposed ----------------===//
//
// Autodiff writes every matmul gradient with a transpose of an operand (dA = dY·Bᵀ,
// dB = Aᵀ·dY), exports transpose weights before their products (the tied lm_head's Wᵀ), and a
// weight stored transposed gets its gradient transposed back. Each of those transposes is a
// kernel that reads and writes a whole tensor, while BLAS and cuBLASLt read an operand
// transposed for free. This pass folds them into the products:
//   - matmul(transpose(x), y) with a transpose that swaps only the last two dimensions
//     becomes matmul(x, y) {trans_lhs} (likewise the rhs; a flag already set is cleared);
//   - gemm(transpose(x), y) of 2-D operands toggles trans_a (likewise trans_b);
//   - transpose(matmul(x, y)) swapping the last two dimensions, the product read only there,
//     becomes matmul(y, x) with both flags toggled: (X·Y)ᵀ = Yᵀ·Xᵀ, batch by batch;
//   - casts read once between the transpose and the product (the precision passes' casts and
//     rounding pairs) do not stop either: a cast is elementwise, so it commutes with the
//     transpose, and is rewritten to the other layout. A program with 16-bit storage and the
//     same program with rounded f32 copies (--half-storage off) thus fold the same products,
//     which keeps their results bit-identical (BLAS may round a transposed read differently).
// A transpose left without readers is erased. Exact: the product multiplies the same values;
// only where the kernel reads them from changes.
//
// Runs on one device's program after every pass that reasons about products (sharding rules,
// precision, remat all see plain ones) and before the elementwise fusion and the memory
// planner, which then plan without the transposes' buffers.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/fusion/FusionPasses.h"

#include "shardc/Dialect/Graph/GraphOps.h"

namespace shardc {
#define GEN_PASS_DEF_FOLDTRANSPOSES
#include "passes/fusion/FusionPasses.h.inc"

namespace {

using namespace mlir;

// Whether `t` swaps the last two dimensions of a tensor of rank >= 2 and leaves the others.
bool swapsLastTwo(graph::TransposeOp t) {
  ArrayRef<int64_t> perm = t.getPerm();
  const int64_t rank = static_cast<int64_t>(perm.size());
  if (rank < 2)
    return false;
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != d)
      return false;
  return perm[rank - 2] == rank - 1 && perm[rank - 1] == rank - 2;
}

// The transpose defining v when it swaps only the last two dimensions.
graph::TransposeOp lastTwoSwapOf(Value v) {
  auto t = v.getDefiningOp<graph::TransposeOp>();
  return t && swapsLastTwo(t) ? t : graph::TransposeOp();
}

// Toggles the unit attribute `name` of op.
void toggle(Operation *op, StringRef name) {
  if (op->hasAttr(name))
    op->removeAttr(name);
  else
    op->setAttr(name, UnitAttr::get(op->getContext()));
}

// v's type with `shape` instead of its own.
void reshapeType(Value v, ArrayRef<int64_t> shape) {
  v.setType(RankedTensorType::get(shape, cast<RankedTensorType>(v.getType()).getElementType()));
}

// The casts read only by the next one from v back (v's own defining cast first); the walk
// stops at the first value that is not a cast's output read once.
SmallVector<graph::CastOp> singleUseCastsBefore(Value v) {
  SmallVector<graph::CastOp> casts;
  while (auto c = v.getDefiningOp<graph::CastOp>()) {
    if (!c.getOutput().hasOneUse())
      break;
    casts.push_back(c);
    v = c.getInput();
  }
  return casts;
}

// The transpose (swapping the last two dims) that operand `value` is, directly or through
// casts each read once (a cast is elementwise: it commutes with the transpose, and the
// precision passes put one, or a rounding pair, between a weight's transpose and its product).
// The casts are rewritten to read the transpose's input in its layout, so that the product can
// read their result transposed. Null when there is none.
Value untransposedOperand(Value value) {
  if (graph::TransposeOp t = lastTwoSwapOf(value))
    return t.getInput();
  SmallVector<graph::CastOp> casts = singleUseCastsBefore(value);
  if (casts.empty())
    return Value();
  graph::TransposeOp t = lastTwoSwapOf(casts.back().getInput());
  if (!t || !t.getOutput().hasOneUse())
    return Value();
  ArrayRef<int64_t> shape = cast<RankedTensorType>(t.getInput().getType()).getShape();
  casts.back()->setOperand(0, t.getInput());
  for (auto it = casts.rbegin(); it != casts.rend(); ++it)
    reshapeType(it->getOutput(), shape);
  t->erase();
  return value;
}

// Folds transposes into mm's operands; whether anything changed.
bool foldOperands(graph::MatMulOp mm) {
  bool changed = false;
  const char *flags[2] = {"trans_lhs", "trans_rhs"};
  for (unsigned i = 0; i < 2; ++i) {
    if (Value read = untransposedOperand(mm->getOperand(i))) {
      mm->setOperand(i, read);
      toggle(mm, flags[i]);
      changed = true;
    }
  }
  return changed;
}

bool foldOperands(graph::GemmOp gemm) {
  bool changed = false;
  for (unsigned i = 0; i < 2; ++i) {
    Value read = untransposedOperand(gemm->getOperand(i));
    if (!read)
      continue;
    gemm->setOperand(i, read);
    if (i == 0)
      gemm.setTransA(!gemm.getTransA());
    else
      gemm.setTransB(!gemm.getTransB());
    changed = true;
  }
  return changed;
}

// transpose(matmul(x, y)) -> matmul(y, x) with the flags toggled, also through casts each read
// once between the two; whether it applied. The product is rewritten in place (its place,
// location and attributes stay) and takes the transposed shape, as do the casts.
bool foldResult(graph::TransposeOp t) {
  if (!swapsLastTwo(t))
    return false;
  SmallVector<graph::CastOp> casts = singleUseCastsBefore(t.getInput());
  Value product = casts.empty() ? t.getInput() : casts.back().getInput();
  auto mm = product.getDefiningOp<graph::MatMulOp>();
  if (!mm || !mm.getOutput().hasOneUse())
    return false;
  auto rankOf = [](Value v) { return cast<RankedTensorType>(v.getType()).getRank(); };
  // 1-D operands are promoted and their unit dimension dropped: the result's last two
  // dimensions are then not (m, n).
  if (rankOf(mm.getLhs()) < 2 || rankOf(mm.getRhs()) < 2)
    return false;
  const bool transLhs = mm.getTransLhs(), transRhs = mm.getTransRhs();
  Value lhs = mm.getLhs(), rhs = mm.getRhs();
  mm->setOperands({rhs, lhs});
  mm.setTransLhs(!transRhs);
  mm.setTransRhs(!transLhs);
  ArrayRef<int64_t> shape = t.getType().getShape();
  reshapeType(mm.getOutput(), shape);
  for (auto it = casts.rbegin(); it != casts.rend(); ++it)
    reshapeType(it->getOutput(), shape);
  t.getOutput().replaceAllUsesWith(t.getInput());
  t->erase();
  return true;
}

struct FoldTransposes : impl::FoldTransposesBase<FoldTransposes> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Each fold removes a transpose or a flag pair's reason to exist, so this ends; a
    // transpose folded by the result rule can expose an operand fold, hence the repeat.
    for (bool changed = true; changed;) {
      changed = false;
      SmallVector<Operation *> ops;
      func.walk([&](Operation *op) { ops.push_back(op); });
      for (Operation *op : ops) {
        if (auto t = dyn_cast<graph::TransposeOp>(op))
          changed |= foldResult(t);
      }
      func.walk([&](Operation *op) {
        if (auto mm = dyn_cast<graph::MatMulOp>(op))
          changed |= foldOperands(mm);
        else if (auto gemm = dyn_cast<graph::GemmOp>(op))
          changed |= foldOperands(gemm);
      });
    }
    // The transposes nothing reads any more (they have no effects).
    SmallVector<graph::TransposeOp> dead;
    func.walk([&](graph::TransposeOp t) { dead.push_back(t); });
    for (auto it = dead.rbegin(); it != dead.rend(); ++it)
      if (it->getOutput().use_empty())
        it->erase();
  }
};

} // namespace
} // namespace shardc
