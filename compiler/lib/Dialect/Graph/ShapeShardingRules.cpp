//===- ShapeShardingRules.cpp - rules of reductions and data movement -------------------===//
//
// Reshapes map dimension groups (768 -> 12 x 64 keeps a split of the heads); transposes
// permute factors; a concat or split into equal parts maps the parts to the minor factor of
// the joined axis (a strided split), unequal ones and sliced dimensions stay whole; a gather's indexed axis is
// whole (a vocab-parallel lookup is a rule of its own, later), its index dimensions are
// parallel, and in its gradient (a scatter-add) they are summed.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace shardc::graph {

namespace {
ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }
} // namespace

// Over other dimensions, a padded dimension's zero entries reduce to zero (ShardingRule.h).
static OpShardingRule zeroKeepingReduction(OpShardingRule rule) {
  rule.keepsZeroPadding = true;
  return rule;
}
std::optional<OpShardingRule> ReduceSumOp::getShardingRule() {
  return zeroKeepingReduction(
      sharding::reduction(shapeOf(getInput()), getAxes(), getKeepdims(), PartialKind::Sum));
}
std::optional<OpShardingRule> ReduceMeanOp::getShardingRule() {
  return zeroKeepingReduction(
      sharding::reduction(shapeOf(getInput()), getAxes(), getKeepdims(), PartialKind::Mean));
}
std::optional<OpShardingRule> ReduceMaxOp::getShardingRule() {
  return zeroKeepingReduction(
      sharding::reduction(shapeOf(getInput()), getAxes(), getKeepdims(), PartialKind::Max));
}

// The compared axis stays whole: the index of a block's largest element says nothing of the
// others' without a combine that no collective does. The other dimensions split freely.
std::optional<OpShardingRule> ArgMaxOp::getShardingRule() {
  ArrayRef<int64_t> shape = shapeOf(getInput());
  const int64_t axis = static_cast<int64_t>(getAxis());
  OpShardingRule rule;
  TensorFactors in(shape.size()), out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    int f = shape[d] == 1 ? -1
            : d == axis   ? rule.addWhole(shape[d], "arg_max compares the elements of its axis")
                          : rule.addFactor(shape[d]);
    if (f >= 0)
      in[d].push_back(f);
    if (d != axis)
      out.push_back(in[d]);
    else if (getKeepdims())
      out.emplace_back();
  }
  rule.operands.push_back(std::move(in));
  rule.results.push_back(std::move(out));
  rule.linear = {false};
  return rule;
}

#define RESHAPE_RULE(OP)                                                                       \
  std::optional<OpShardingRule> OP::getShardingRule() {                                        \
    OpShardingRule rule = sharding::reshape(shapeOf(getInput()), getType().getShape());        \
    rule.keepsZeroPadding = true;                                                              \
    return rule;                                                                               \
  }
RESHAPE_RULE(ReshapeOp)
RESHAPE_RULE(FlattenOp)
RESHAPE_RULE(SqueezeOp)
RESHAPE_RULE(UnsqueezeOp)
#undef RESHAPE_RULE

std::optional<OpShardingRule> TransposeOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors in = rule.freshTensor(shapeOf(getInput())), out;
  for (int64_t p : getPerm())
    out.push_back(in[p]);
  rule.operands = {in};
  rule.results = {out};
  rule.linear = {true};
  rule.keepsZeroPadding = true;
  return rule;
}

std::optional<OpShardingRule> ExpandOp::getShardingRule() {
  OpShardingRule rule = sharding::elementwise(*this);
  rule.linear = {true};
  rule.keepsZeroPadding = true;
  return rule;
}

namespace {
// The tensors of a concat or split along `axis`: the joined one, of `wholeShape`, and its
// `parts`. The other dimensions are shared parallel factors. For equal parts the joined axis
// is {count (whole), part} and each part's axis {part}, so a split of the part factor is a
// strided split of the joined axis (ShardingRule.h); unequal parts keep the axis whole.
struct JoinedTensors {
  TensorFactors whole;
  SmallVector<TensorFactors> parts;
};

JoinedTensors joinedTensors(OpShardingRule &rule, ArrayRef<int64_t> wholeShape, int64_t axis,
                            ValueRange partValues, StringRef why) {
  SmallVector<int> dims;
  for (int64_t d = 0; d < static_cast<int64_t>(wholeShape.size()); ++d)
    dims.push_back(d == axis || wholeShape[d] == 1 ? -1 : rule.addFactor(wholeShape[d]));
  SmallVector<int64_t> sizes;
  for (Value v : partValues)
    sizes.push_back(shapeOf(v)[axis]);
  JoinedTensors out;
  out.whole = OpShardingRule::tensor(dims);
  out.parts.assign(sizes.size(), OpShardingRule::tensor(dims));
  if (sizes.size() > 1 && llvm::all_equal(sizes) && sizes.front() > 1) {
    int part = rule.addFactor(sizes.front());
    out.whole[axis] = {rule.addWhole(static_cast<int64_t>(sizes.size()), why.str()), part};
    for (TensorFactors &t : out.parts)
      t[axis] = {part};
    rule.stridedParts = true;
    return out;
  }
  if (wholeShape[axis] != 1)
    out.whole[axis] = {rule.addWhole(wholeShape[axis], why.str())};
  for (auto [t, size] : llvm::zip(out.parts, sizes))
    if (size != 1)
      t[axis] = {rule.addWhole(size, why.str())};
  return out;
}
} // namespace

std::optional<OpShardingRule> ConcatOp::getShardingRule() {
  OpShardingRule rule;
  JoinedTensors t = joinedTensors(rule, getType().getShape(), static_cast<int64_t>(getAxis()),
                                  getInputs(), "concat joins along it");
  rule.operands.assign(t.parts.begin(), t.parts.end());
  rule.results = {t.whole};
  rule.linear.assign(getNumOperands(), false);
  rule.sumsOperands = true;
  return rule;
}

std::optional<OpShardingRule> SplitOp::getShardingRule() {
  OpShardingRule rule;
  JoinedTensors t = joinedTensors(rule, shapeOf(getInput()), static_cast<int64_t>(getAxis()),
                                  getResults(), "split cuts along it");
  rule.operands = {t.whole};
  rule.results.assign(t.parts.begin(), t.parts.end());
  rule.linear = {true};
  return rule;
}

// The parts have their local types: the sizes are theirs along the axis.
LogicalResult SplitOp::localizeOp(LocalShardingContext &) {
  SmallVector<int64_t> sizes;
  for (Value r : getOutputs())
    sizes.push_back(cast<RankedTensorType>(r.getType()).getDimSize(getAxis()));
  setSizes(sizes);
  return success();
}

namespace {
// An op from `in` to `out` of the same rank that keeps some dimensions as they are: each kept
// one is one parallel factor of both (a split of it stays a split of the other); any other is
// whole on both sides, `why` saying so (a block of one does not map onto a block of the other).
OpShardingRule keptOrWhole(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                           llvm::function_ref<bool(size_t)> keeps, StringRef why) {
  OpShardingRule rule;
  SmallVector<int> x, y;
  for (size_t d = 0; d < in.size(); ++d) {
    if (keeps(d)) {
      int f = in[d] == 1 ? -1 : rule.addFactor(in[d]);
      x.push_back(f);
      y.push_back(f);
      continue;
    }
    x.push_back(in[d] == 1 ? -1 : rule.addWhole(in[d], why.str()));
    y.push_back(out[d] == 1 ? -1 : rule.addWhole(out[d], why.str()));
  }
  rule.operands = {OpShardingRule::tensor(x)};
  rule.results = {OpShardingRule::tensor(y)};
  rule.linear = {true};
  return rule;
}

// Whether a slice along dimension d takes one of the equal groups of `whole` (a packed QKV
// projection's Q, K or V: [0, h), [h, 2h), [2h, 3h) of 3h): step 1, a part that divides the
// dimension into at least 2 groups, starting at a group's start.
bool picksGroup(ArrayRef<int64_t> whole, ArrayRef<int64_t> part, ArrayRef<int64_t> starts,
                ArrayRef<int64_t> steps, size_t d) {
  return steps[d] == 1 && part[d] > 1 && whole[d] > part[d] && whole[d] % part[d] == 0 &&
         starts[d] % part[d] == 0;
}

// A slice (or its gradient) along `whole` and `part`: a dimension taken entirely (start 0,
// step 1, all elements) is parallel; one where it picks an equal group is {groups (whole),
// part} on the whole side and {part} on the other, so a split of the part is a strided split
// of the whole (ShardingRule.h: each device holds its block of every group, the fused
// projection's heads split as a Split of it would); any other stays whole.
OpShardingRule sliceRule(ArrayRef<int64_t> whole, ArrayRef<int64_t> part,
                         ArrayRef<int64_t> starts, ArrayRef<int64_t> steps, StringRef op) {
  OpShardingRule rule = keptOrWhole(
      whole, part,
      [&](size_t d) { return starts[d] == 0 && steps[d] == 1 && whole[d] == part[d]; },
      (op + " takes part of it").str());
  for (size_t d = 0; d < whole.size(); ++d) {
    if (!picksGroup(whole, part, starts, steps, d))
      continue;
    int f = rule.addFactor(part[d]);
    rule.operands[0][d] = {rule.addWhole(whole[d] / part[d], (op + " picks one of its groups").str()),
                           f};
    rule.results[0][d] = {f};
    rule.stridedParts = true;
  }
  return rule;
}

// The local starts (and ends) of a slice along its dimensions split on some axis: one taken
// entirely ends at the local size; one picking a group takes the device's block of it, the
// local input holding its block of every group in group order (`wholeLocal` groups of
// `partLocal`, the group at global start / global part).
void localizeSlice(SmallVectorImpl<int64_t> &starts, SmallVectorImpl<int64_t> *ends,
                   ArrayRef<int64_t> wholeLocal, ArrayRef<int64_t> partLocal,
                   ArrayRef<int64_t> wholeGlobal, ArrayRef<SmallVector<mesh::MeshAxis>> axes) {
  for (size_t d = 0; d < starts.size(); ++d) {
    if (axes[d].empty())
      continue;
    if (wholeLocal[d] == partLocal[d]) {
      if (ends)
        (*ends)[d] = wholeLocal[d];
      continue;
    }
    const int64_t groups = wholeLocal[d] / partLocal[d];
    const int64_t group = starts[d] / (wholeGlobal[d] / groups);
    starts[d] = group * partLocal[d];
    if (ends)
      (*ends)[d] = starts[d] + partLocal[d];
  }
}
} // namespace

// A dimension with no pads passes through; one with pads or crops is kept whole.
std::optional<OpShardingRule> PadOp::getShardingRule() {
  ArrayRef<int64_t> pads = getPads();
  const size_t rank = pads.size() / 2;
  OpShardingRule rule =
      keptOrWhole(shapeOf(getInput()), getType().getShape(),
                  [&](size_t d) { return pads[d] == 0 && pads[d + rank] == 0; },
                  "pad changes its size");
  // Linear only when the new elements are zeros: a pending sum of the input padded with c
  // would sum c over the devices.
  rule.linear = {getValue().convertToDouble() == 0.0};
  return rule;
}

std::optional<OpShardingRule> SliceOp::getShardingRule() {
  return sliceRule(shapeOf(getInput()), getType().getShape(), getStarts(), getSteps(), "slice");
}

// A split dimension is taken entirely (it ends at the end of the local input) or is one group
// of a strided split (its block of that group).
LogicalResult SliceOp::localizeOp(LocalShardingContext &context) {
  SmallVector<int64_t> starts(getStarts()), ends(getEnds());
  // The input's global size along a picked group: its local size times the devices.
  auto axes = context.splitAxes(getResult());
  ArrayRef<int64_t> in = shapeOf(getInput()), out = getType().getShape();
  auto global = cast<RankedTensorType>(context.globalType(cast<OpResult>(getResult()))).getShape();
  SmallVector<int64_t> wholeGlobal(in.size());
  for (size_t d = 0; d < in.size(); ++d)
    wholeGlobal[d] = out[d] ? in[d] / out[d] * global[d] : 0;
  localizeSlice(starts, &ends, in, out, wholeGlobal, axes);
  setStarts(starts);
  setEnds(ends);
  return success();
}

// A group its dy fills is the device's block of it, as for the slice.
LogicalResult SliceGradOp::localizeOp(LocalShardingContext &context) {
  SmallVector<int64_t> starts(getStarts());
  auto axes = context.splitAxes(getResult());
  localizeSlice(starts, nullptr, getType().getShape(), shapeOf(getDy()),
                cast<RankedTensorType>(context.globalType(cast<OpResult>(getResult()))).getShape(), axes);
  setStarts(starts);
  return success();
}

std::optional<OpShardingRule> SliceGradOp::getShardingRule() {
  OpShardingRule rule = sliceRule(getType().getShape(), shapeOf(getDy()), getStarts(), getSteps(),
                                  "slice_grad");
  std::swap(rule.operands[0], rule.results[0]);
  return rule;
}

namespace {
// data [..., axis, ...] and indices [I...] -> [...data before axis, I..., data after axis...].
struct GatherFactors {
  SmallVector<int> before, index, after;
  int axis = -1;
};

GatherFactors gatherFactors(OpShardingRule &rule, ArrayRef<int64_t> data,
                            ArrayRef<int64_t> indices, int64_t axis, bool scatter) {
  GatherFactors g;
  auto fresh = [&](int64_t size) { return size == 1 ? -1 : rule.addFactor(size); };
  for (int64_t d = 0; d < axis; ++d)
    g.before.push_back(fresh(data[d]));
  // The rows picked by index: a device holding a block of them picks those of its block (an
  // index block); gather leaves a pending sum of its picks, gather_grad scatters into its block.
  if (data[axis] != 1) {
    g.axis = scatter ? rule.addFactor(data[axis]) : rule.addReduction(data[axis]);
    rule.indexedFactors.push_back(g.axis);
  }
  for (int64_t size : indices)
    g.index.push_back(size == 1 ? -1 : scatter ? rule.addReduction(size) : rule.addFactor(size));
  for (int64_t d = axis + 1; d < static_cast<int64_t>(data.size()); ++d)
    g.after.push_back(fresh(data[d]));
  return g;
}

TensorFactors gathered(const GatherFactors &g) {
  SmallVector<int> dims(g.before);
  dims.append(g.index.begin(), g.index.end());
  dims.append(g.after.begin(), g.after.end());
  return OpShardingRule::tensor(dims);
}

TensorFactors dataTensor(const GatherFactors &g) {
  SmallVector<int> dims(g.before);
  dims.push_back(g.axis);
  dims.append(g.after.begin(), g.after.end());
  return OpShardingRule::tensor(dims);
}
} // namespace

std::optional<OpShardingRule> GatherOp::getShardingRule() {
  OpShardingRule rule;
  GatherFactors g = gatherFactors(rule, shapeOf(getData()), shapeOf(getIndices()),
                                  static_cast<int64_t>(getAxis()), false);
  rule.operands = {dataTensor(g), OpShardingRule::tensor(g.index)};
  rule.results = {gathered(g)};
  rule.linear = {true, false};
  return rule;
}

std::optional<OpShardingRule> GatherGradOp::getShardingRule() {
  OpShardingRule rule;
  GatherFactors g = gatherFactors(rule, getType().getShape(), shapeOf(getIndices()),
                                  static_cast<int64_t>(getAxis()), true);
  rule.operands = {gathered(g), OpShardingRule::tensor(g.index)};
  rule.results = {dataTensor(g)};
  rule.linear = {true, false};
  // Rows no index names (a padded table's padding) stay zero.
  rule.keepsZeroPadding = true;
  return rule;
}

std::optional<OpShardingRule> ReduceMaxGradOp::getShardingRule() {
  // dy and output have the reduced shape, input and dinput the full one; the reduced axes stay
  // whole (ties are shared among all maxima of the whole axis).
  ArrayRef<int64_t> x = shapeOf(getInput());
  OpShardingRule rule;
  SmallVector<int> full, reduced;
  for (size_t d = 0; d < x.size(); ++d) {
    bool isReduced = llvm::is_contained(getAxes(), static_cast<int64_t>(d));
    int f = x[d] == 1 ? -1
            : isReduced ? rule.addWhole(x[d], "reduce_max's gradient finds the maxima of it")
                        : rule.addFactor(x[d]);
    full.push_back(f);
    if (!isReduced)
      reduced.push_back(f);
    else if (getKeepdims())
      reduced.push_back(-1);
  }
  TensorFactors t = OpShardingRule::tensor(full), r = OpShardingRule::tensor(reduced);
  rule.operands = {r, t, r};
  rule.results = {t};
  rule.linear = {true, false, false};
  return rule;
}

// Shape computations fold away at import; should one remain, its value is the shape itself.
std::optional<OpShardingRule> ShapeOp::getShardingRule() {
  return sharding::allWhole(*this, "shape reads the whole tensor's dimensions");
}
std::optional<OpShardingRule> RangeOp::getShardingRule() {
  return sharding::allWhole(*this, "range's values are positions");
}

std::optional<OpShardingRule> CumSumOp::getShardingRule() {
  // Elementwise but along the axis, where each output sums everything before it.
  OpShardingRule rule = sharding::elementwise(*this);
  for (int f : rule.results[0][getAxis()])
    rule.makeWhole(f, "cum_sum accumulates along it");
  rule.linear.assign(1, true);
  return rule;
}

std::optional<OpShardingRule> ConstantOfShapeOp::getShardingRule() {
  // Every element is the same value: any block of it is the same block.
  OpShardingRule rule;
  ArrayRef<int64_t> shape = shapeOf(getShape());
  rule.operands.push_back(OpShardingRule::tensor(
      {shape.empty() || shape[0] == 1 ? -1 : rule.addWhole(shape[0], "it holds a shape")}));
  if (shape.empty())
    rule.operands.back().clear();
  rule.results.push_back(rule.freshTensor(getType().getShape()));
  rule.linear = {false};
  return rule;
}

// The shape operand becomes a constant of the local result's shape.
LogicalResult ConstantOfShapeOp::localizeOp(LocalShardingContext &) {
  auto local = cast<RankedTensorType>(getType());
  OpBuilder b(*this);
  auto shapeType = cast<RankedTensorType>(getShape().getType());
  Value shape =
      b.create<ConstantOp>(getLoc(), DenseElementsAttr::get(shapeType, local.getShape()));
  (*this)->setOperand(0, shape);
  return success();
}

} // namespace shardc::graph
