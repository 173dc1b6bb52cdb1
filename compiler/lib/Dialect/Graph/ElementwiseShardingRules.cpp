//===- ElementwiseShardingRules.cpp - rules of elementwise ops and constants ------------===//
//
// Elementwise ops split along any dimension of their (broadcast) result. They pass a pending
// sum through only where they are linear in it: neg and identity; mul in either operand (the
// other without a pending sum); div in its numerator; add and sub when both operands carry
// the same pending sum.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace shardc::graph {

using sharding::elementwise;

namespace {
// Linear ops are zero where their operands are (a zero block of a padded dimension stays
// zero), but for div: its denominator's zero padding would give 0/0.
OpShardingRule elementwiseLinear(Operation *op, ArrayRef<bool> linear) {
  OpShardingRule rule = elementwise(op);
  rule.linear.assign(linear.begin(), linear.end());
  rule.keepsZeroPadding = !isa<DivOp>(op);
  return rule;
}
} // namespace

// A constant has no operands: its dimensions link to whatever uses it. The partitioner keeps
// the block of a split dimension when every block holds the same values (a constant expanded
// along the batch) and refuses the split otherwise.
std::optional<OpShardingRule> ConstantOp::getShardingRule() {
  OpShardingRule rule;
  rule.results.push_back(rule.freshTensor(getType().getShape()));
  return rule;
}

// One program serves devices that hold different rows, so a constant split along the batch
// is kept as one block only when it is the same for every row of it (along a dimension of
// size D that holds D / batch elements per row, it repeats with that period): each device
// keeps its first local rows. Otherwise the partitioner keeps it whole and slices each
// device's rows from it at run time (resharding), so this never refuses.
std::optional<DenseElementsAttr> sameBlockOnEveryDevice(DenseElementsAttr dense,
                                                        RankedTensorType local,
                                                        ArrayRef<SmallVector<mesh::MeshAxis>> axes,
                                                        int64_t batch) {
  if (dense.isSplat())
    return dense.resizeSplat(local);
  for (const auto &a : axes)
    if (llvm::any_of(a, [](mesh::MeshAxis axis) { return axis != 0; }))
      return std::nullopt; // blocks of a tp split hold different values
  auto global = cast<RankedTensorType>(dense.getType());
  ArrayRef<int64_t> shape = global.getShape();
  SmallVector<int64_t> strides(shape.size(), 1), period(shape.size(), 0);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  for (size_t d = 0; d < shape.size(); ++d)
    period[d] = local.getDimSize(d) != shape[d] ? shape[d] / batch : 0;
  SmallVector<Attribute> values(dense.getValues<Attribute>());
  SmallVector<Attribute> kept;
  kept.reserve(local.getNumElements());
  for (int64_t i = 0; i < global.getNumElements(); ++i) {
    int64_t rest = i, firstRow = 0;
    bool inLocal = true;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t c = rest / strides[d];
      rest %= strides[d];
      if (period[d]) {
        inLocal = inLocal && c < local.getDimSize(d);
        c %= period[d];
      }
      firstRow += c * strides[d];
    }
    if (values[i] != values[firstRow])
      return std::nullopt;
    if (inLocal)
      kept.push_back(values[i]);
  }
  return DenseElementsAttr::get(local, kept);
}

// The partitioner gave the result its local type; the value still has the global one.
LogicalResult ConstantOp::localizeOp(LocalShardingContext &context) {
  auto local = cast<RankedTensorType>(getResult().getType());
  if (local == getValue().getType())
    return success();
  auto dense = dyn_cast<DenseElementsAttr>(getValue());
  if (!dense)
    return emitError("a constant split along the batch must be a dense elements value");
  std::optional<DenseElementsAttr> block = sameBlockOnEveryDevice(
      dense, local, context.splitAxes(getResult()), context.batchSize());
  if (!block)
    return emitError() << nodeName(*this) << ": a constant of type " << dense.getType()
                       << " holds different values on different devices; the partitioner "
                       << "slices it whole instead";
  setValueAttr(*block);
  return success();
}

#define ELEMENTWISE_RULE(OP)                                                                   \
  std::optional<OpShardingRule> OP::getShardingRule() { return elementwise(*this); }
ELEMENTWISE_RULE(ReciprocalOp)
ELEMENTWISE_RULE(ExpOp)
ELEMENTWISE_RULE(LogOp)
ELEMENTWISE_RULE(CosOp)
ELEMENTWISE_RULE(SigmoidOp)
ELEMENTWISE_RULE(SoftplusOp)
ELEMENTWISE_RULE(NotOp)
ELEMENTWISE_RULE(PowOp)
ELEMENTWISE_RULE(MaxOp)
ELEMENTWISE_RULE(MinOp)
ELEMENTWISE_RULE(ModOp)
ELEMENTWISE_RULE(EqualOp)
ELEMENTWISE_RULE(LessOp)
ELEMENTWISE_RULE(GreaterOp)
ELEMENTWISE_RULE(AndOp)
ELEMENTWISE_RULE(OrOp)
ELEMENTWISE_RULE(WhereOp)
ELEMENTWISE_RULE(ClipOp)
#undef ELEMENTWISE_RULE

// f(0) = 0 (a padded dimension's zero entries stay zero: ShardingRule.h); gelu_grad is
// dy * gelu'(x), zero where dy is.
#define ZERO_AT_ZERO_RULE(OP)                                                                  \
  std::optional<OpShardingRule> OP::getShardingRule() {                                        \
    OpShardingRule rule = elementwise(*this);                                                  \
    rule.keepsZeroPadding = true;                                                              \
    return rule;                                                                               \
  }
ZERO_AT_ZERO_RULE(AbsOp)
ZERO_AT_ZERO_RULE(ReluOp)
ZERO_AT_ZERO_RULE(SqrtOp)
ZERO_AT_ZERO_RULE(TanhOp)
ZERO_AT_ZERO_RULE(ErfOp)
ZERO_AT_ZERO_RULE(SinOp)
ZERO_AT_ZERO_RULE(GeluOp)
ZERO_AT_ZERO_RULE(GeluGradOp)
#undef ZERO_AT_ZERO_RULE

std::optional<OpShardingRule> NegOp::getShardingRule() { return elementwiseLinear(*this, {true}); }
std::optional<OpShardingRule> IdentityOp::getShardingRule() {
  return elementwiseLinear(*this, {true});
}
std::optional<OpShardingRule> MulOp::getShardingRule() {
  return elementwiseLinear(*this, {true, true});
}
std::optional<OpShardingRule> DivOp::getShardingRule() {
  // Integer division truncates: only a float numerator passes a pending sum.
  return elementwiseLinear(*this, {getType().getElementType().isF32(), false});
}

static OpShardingRule sumOfOperands(Operation *op) {
  OpShardingRule rule = elementwise(op);
  rule.sumsOperands = true;
  rule.keepsZeroPadding = true;
  return rule;
}
std::optional<OpShardingRule> AddOp::getShardingRule() { return sumOfOperands(*this); }
std::optional<OpShardingRule> SubOp::getShardingRule() { return sumOfOperands(*this); }

std::optional<OpShardingRule> CastOp::getShardingRule() {
  // f32 -> f32 is the identity and widening a 16-bit float to f32 is exact: both linear. A
  // rounding to a 16-bit float passes on the batch's pending sums only (see linearOverBatch);
  // any other cast truncates.
  Type from = getInput().getType().getElementType(), to = getType().getElementType();
  bool half = [](Type t) { return t.isBF16() || t.isF16(); }(from);
  bool toHalf = to.isBF16() || to.isF16();
  OpShardingRule rule = elementwiseLinear(*this, {from == to || (half && to.isF32())});
  rule.linearOverBatch.push_back(from.isF32() && toHalf);
  return rule;
}

std::optional<OpShardingRule> TriluOp::getShardingRule() {
  OpShardingRule rule = elementwise(*this);
  // The triangle is decided by each element's row and column index.
  ArrayRef<int64_t> shape = getType().getShape();
  for (size_t d = shape.size() - 2; d < shape.size(); ++d)
    for (int f : rule.results[0][d])
      rule.makeWhole(f, "trilu keeps elements by their row and column index");
  return rule;
}

// A training dropout draws each element's keep-bit from its index in the whole tensor; the
// partitioner records where a device's block lies (graph.global_shape, graph.split_dim), so a
// split step draws the same mask as the whole one.
std::optional<OpShardingRule> DropoutOp::getShardingRule() {
  OpShardingRule rule = elementwise(*this);
  rule.positional = isRandom();
  return rule;
}

// A training dropout keeps the whole tensor's shape and where the block lies, for its mask
// (the kernel adds each device's offsets: along the dim split with the batch, from its rows;
// along one split on another mesh axis, from its coordinate).
LogicalResult DropoutOp::localizeOp(LocalShardingContext &context) {
  if (!isRandom())
    return success();
  auto global = cast<RankedTensorType>(context.globalType(cast<OpResult>(getOutput())));
  Builder b(getContext());
  int64_t batchDim = -1, blockDim = -1;
  SmallVector<int64_t> groups = context.splitGroups(getOutput());
  for (auto [d, a] : llvm::enumerate(context.splitAxes(getOutput()))) {
    if (a.empty())
      continue;
    if (a.size() != 1 || (a[0] == 0 ? batchDim : blockDim) >= 0)
      return emitError() << nodeName(*this) << ": a training dropout split on more than "
                         << "the batch and one other dimension is not supported";
    if (groups[d] > 1)
      return emitError() << nodeName(*this) << ": a training dropout on a strided split "
                         << "(a dimension cut in groups) is not supported";
    (a[0] == 0 ? batchDim : blockDim) = static_cast<int64_t>(d);
    if (a[0] != 0)
      (*this)->setAttr(kDropoutBlockAttr,
                       b.getDenseI64ArrayAttr({static_cast<int64_t>(d), a[0],
                                               context.localSize(global.getDimSize(d), a)}));
  }
  if (batchDim >= 0 || blockDim >= 0)
    (*this)->setAttr(kDropoutGlobalShapeAttr, b.getDenseI64ArrayAttr(global.getShape()));
  if (batchDim >= 0) {
    (*this)->setAttr(kDropoutSplitDimAttr, b.getI64IntegerAttr(batchDim));
    (*this)->setAttr(kDropoutSplitUnitAttr,
                     b.getI64IntegerAttr(global.getDimSize(batchDim) / context.batchSize()));
  }
  return success();
}

} // namespace shardc::graph
