//===- LinalgShardingRules.cpp - rules of matmul, normalisation, softmax and losses -----===//
//
//   matmul   [..., m, k] x [..., k, n] -> [..., m, n]   k is summed: a split k leaves partial
//            sums (a row-parallel matmul); a split n is a column-parallel one
//   softmax / layer_norm: the normalised axes stay whole
//   losses   the rows (and any extra label dims) are summed or averaged into the loss; the
//            classes stay whole (a vocab-parallel cross-entropy is a rule of its own, later)
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace shardc::graph {

namespace {
ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }
int factorOrNone(OpShardingRule &rule, int64_t size) {
  return size == 1 ? -1 : rule.addFactor(size);
}
} // namespace

std::optional<OpShardingRule> MatMulOp::getShardingRule() {
  // The rule of the untransposed product; a transposed operand's last two entries swap at the end.
  SmallVector<int64_t> logicalA = logicalLhsShape(), logicalB = logicalRhsShape();
  ArrayRef<int64_t> a = logicalA, b = logicalB, c = shapeOf(getResult());
  OpShardingRule rule;
  // 1-D operands are promoted (a: [1, k], b: [k, 1]) and the added dimension removed.
  int64_t k = a.back();
  int fk = k == 1 ? -1 : rule.addReduction(k);
  int64_t m = a.size() >= 2 ? a[a.size() - 2] : 1;
  int64_t n = b.size() >= 2 ? b.back() : 1;
  int fm = a.size() >= 2 ? factorOrNone(rule, m) : -1;
  int fn = b.size() >= 2 ? factorOrNone(rule, n) : -1;
  // Batch dimensions broadcast like an elementwise op over the result's leading dims.
  size_t batchRank = c.size() - (a.size() >= 2 ? 1 : 0) - (b.size() >= 2 ? 1 : 0);
  SmallVector<int> batch;
  for (size_t d = 0; d < batchRank; ++d)
    batch.push_back(factorOrNone(rule, c[d]));
  auto batchDims = [&](ArrayRef<int64_t> shape, size_t own, TensorFactors &t) {
    size_t lead = shape.size() - own;
    for (size_t d = 0; d < lead; ++d) {
      size_t cd = batchRank - lead + d;
      t.emplace_back();
      if (batch[cd] >= 0 && shape[d] == c[cd])
        t.back().push_back(batch[cd]);
    }
  };
  TensorFactors ta, tb, tc;
  if (a.size() >= 2) {
    batchDims(a, 2, ta);
    ta.push_back(fm >= 0 ? DimFactors{fm} : DimFactors{});
  }
  ta.push_back(fk >= 0 ? DimFactors{fk} : DimFactors{});
  if (b.size() >= 2)
    batchDims(b, 2, tb);
  tb.push_back(fk >= 0 ? DimFactors{fk} : DimFactors{});
  if (b.size() >= 2)
    tb.push_back(fn >= 0 ? DimFactors{fn} : DimFactors{});
  for (int f : batch)
    tc.push_back(f >= 0 ? DimFactors{f} : DimFactors{});
  if (a.size() >= 2)
    tc.push_back(fm >= 0 ? DimFactors{fm} : DimFactors{});
  if (b.size() >= 2)
    tc.push_back(fn >= 0 ? DimFactors{fn} : DimFactors{});
  if (getTransLhs())
    std::swap(ta[ta.size() - 2], ta[ta.size() - 1]);
  if (getTransRhs())
    std::swap(tb[tb.size() - 2], tb[tb.size() - 1]);
  rule.operands = {ta, tb};
  rule.results = {tc};
  rule.linear = {true, true};
  rule.keepsZeroPadding = true; // zero rows or columns of an operand give zero ones
  return rule;
}

std::optional<OpShardingRule> QuantizedMatMulOp::getShardingRule() {
  // The rows of x (its leading dims) split freely; the weight's two sizes stay whole: each
  // device holds the whole quantized weight (its codes are not laid out per dimension: nf4's
  // blocks run across its rows).
  ArrayRef<int64_t> x = shapeOf(getInput());
  OpShardingRule rule;
  TensorFactors tx, ty;
  for (int64_t d : x.drop_back()) {
    int f = factorOrNone(rule, d);
    tx.push_back(f >= 0 ? DimFactors{f} : DimFactors{});
    ty.push_back(tx.back());
  }
  const char *why = "the quantized frozen weight (--base-dtype) is stored whole on every device";
  tx.push_back({rule.addWhole(x.back(), why)});
  ty.push_back({rule.addWhole(shapeOf(getOutput()).back(), why)});
  auto whole = [&](Value v) {
    TensorFactors t;
    for (int64_t d : shapeOf(v))
      t.push_back({rule.addWhole(d, why)});
    return t;
  };
  rule.operands = {tx, whole(getCodes())};
  if (getScales())
    rule.operands.push_back(whole(getScales()));
  rule.results = {ty};
  rule.linear = {true, false, false};
  rule.linear.resize(rule.operands.size());
  rule.keepsZeroPadding = true;
  return rule;
}

std::optional<OpShardingRule> GemmOp::getShardingRule() {
  ArrayRef<int64_t> a = shapeOf(getA()), c = shapeOf(getResult());
  OpShardingRule rule;
  int64_t k = getTransA() ? a[0] : a[1];
  int fm = factorOrNone(rule, c[0]), fn = factorOrNone(rule, c[1]);
  // With a bias, every device holding part of k would add the whole bias to its partial sum.
  int fk = k == 1 ? -1
           : getC() ? rule.addWhole(k, "gemm adds its bias after summing over it")
                    : rule.addReduction(k);
  auto two = [](int x, int y) { return OpShardingRule::tensor({x, y}); };
  rule.operands.push_back(getTransA() ? two(fk, fm) : two(fm, fk));
  rule.operands.push_back(getTransB() ? two(fn, fk) : two(fk, fn));
  if (Value bias = getC()) {
    // c broadcasts (unidirectionally) to [m, n].
    ArrayRef<int64_t> s = shapeOf(bias);
    SmallVector<int> dims;
    int outer[2] = {fm, fn};
    for (size_t d = 0; d < s.size(); ++d) {
      size_t cd = 2 - s.size() + d;
      dims.push_back(s[d] == c[cd] ? outer[cd] : -1);
    }
    rule.operands.push_back(OpShardingRule::tensor(dims));
  }
  rule.results.push_back(two(fm, fn));
  // With a bias, a pending sum in a or b would add the bias once per device.
  bool linear = !getC();
  rule.linear.assign(getNumOperands(), linear);
  return rule;
}

namespace {
// The factors of layer_norm and its gradient on an input shaped `x`: its rows (dims before
// `axis`) parallel, the normalised dims whole; scale and bias have the normalised shape (they
// may broadcast over its leading dims); mean and inv_std_dev keep the rows only.
struct LayerNormFactors {
  TensorFactors input, stats;
  SmallVector<int> dims;
};

LayerNormFactors layerNormFactors(OpShardingRule &rule, ArrayRef<int64_t> x, int64_t axis) {
  LayerNormFactors f;
  for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d)
    f.dims.push_back(x[d] == 1 ? -1
                     : d < axis ? rule.addFactor(x[d])
                                : rule.addWhole(x[d], "layer_norm normalises over it"));
  f.input = OpShardingRule::tensor(f.dims);
  SmallVector<int> stats(f.dims.begin(), f.dims.end());
  for (int64_t d = axis; d < static_cast<int64_t>(x.size()); ++d)
    stats[d] = -1;
  f.stats = OpShardingRule::tensor(stats);
  return f;
}

// A tensor of the normalised shape `s`, aligned from the right with `x`.
TensorFactors normalisedTensor(const LayerNormFactors &f, ArrayRef<int64_t> x,
                               ArrayRef<int64_t> s) {
  SmallVector<int> dims;
  for (size_t d = 0; d < s.size(); ++d) {
    size_t xd = x.size() - s.size() + d;
    dims.push_back(s[d] == x[xd] ? f.dims[xd] : -1);
  }
  return OpShardingRule::tensor(dims);
}
} // namespace

std::optional<OpShardingRule> LayerNormOp::getShardingRule() {
  ArrayRef<int64_t> x = shapeOf(getInput());
  OpShardingRule rule;
  LayerNormFactors f = layerNormFactors(rule, x, static_cast<int64_t>(getAxis()));
  rule.operands.push_back(f.input);
  rule.operands.push_back(normalisedTensor(f, x, shapeOf(getScale())));
  if (getBias())
    rule.operands.push_back(normalisedTensor(f, x, shapeOf(getBias())));
  rule.results = {f.input, f.stats, f.stats};
  rule.linear.assign(getNumOperands(), false);
  return rule;
}

namespace {
// softmax-like ops: every operand and result has the input's shape; `axis` stays whole.
OpShardingRule alongAxis(Operation *op, int64_t axis, StringRef why) {
  OpShardingRule rule = sharding::elementwise(op);
  for (int f : rule.results[0][axis])
    rule.makeWhole(f, why.str());
  return rule;
}
} // namespace

std::optional<OpShardingRule> SoftmaxOp::getShardingRule() {
  return alongAxis(*this, getAxis(), "softmax normalises over it");
}
std::optional<OpShardingRule> LogSoftmaxOp::getShardingRule() {
  return alongAxis(*this, getAxis(), "log_softmax normalises over it");
}
std::optional<OpShardingRule> SoftmaxGradOp::getShardingRule() {
  return alongAxis(*this, getAxis(), "softmax's gradient sums over it");
}
std::optional<OpShardingRule> LogSoftmaxGradOp::getShardingRule() {
  return alongAxis(*this, getAxis(), "log_softmax's gradient sums over it");
}

namespace {
// attention's factors: each leading dim (batch, heads) and the query rows are parallel (rows
// are independent: a split of S is sequence parallelism, with k and v whole); the keys stay
// whole (softmax normalises over them), and so do the head dims D (q.k sums over them before
// the softmax, which a partial sum cannot pass) and Dv (attention_grad sums over it for dq
// and dk). Causal masking is aligned to the last query row, so with it S stays whole too.
struct AttentionFactors {
  TensorFactors q, k, v, mask, output, lse;
};

AttentionFactors attentionFactors(OpShardingRule &rule, Value q, Value k, Value v, Value mask,
                                  bool causal) {
  ArrayRef<int64_t> qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v);
  const size_t rank = qs.size();
  SmallVector<int> lead;
  for (size_t d = 0; d + 2 < rank; ++d)
    lead.push_back(factorOrNone(rule, qs[d]));
  const int64_t S = qs[rank - 2];
  int fs = S == 1 ? -1
           : causal ? rule.addWhole(S, "causal attention aligns its mask to the last query row")
                    : rule.addFactor(S);
  int fk = ks[rank - 2] == 1 ? -1 : rule.addWhole(ks[rank - 2], "softmax normalises over the keys");
  int fd = qs[rank - 1] == 1 ? -1 : rule.addWhole(qs[rank - 1], "q.k sums over it before the softmax");
  int fdv = vs[rank - 1] == 1 ? -1
                              : rule.addWhole(vs[rank - 1], "attention's gradient sums over it");
  auto with = [&](std::initializer_list<int> tail) {
    SmallVector<int> dims(lead.begin(), lead.end());
    dims.append(tail.begin(), tail.end());
    return OpShardingRule::tensor(dims);
  };
  AttentionFactors f;
  f.q = with({fs, fd});
  f.k = with({fk, fd});
  f.v = with({fk, fdv});
  f.output = with({fs, fdv});
  f.lse = with({fs});
  if (mask) {
    // Aligned from the right with the scores [..., S, Sk]; broadcast (size-1) dims get none.
    SmallVector<int> scores(lead.begin(), lead.end());
    scores.append({fs, fk});
    ArrayRef<int64_t> ms = shapeOf(mask);
    SmallVector<int> dims;
    for (size_t d = 0; d < ms.size(); ++d)
      dims.push_back(ms[d] == 1 ? -1 : scores[scores.size() - ms.size() + d]);
    f.mask = OpShardingRule::tensor(dims);
  }
  return f;
}
} // namespace

std::optional<OpShardingRule> AttentionOp::getShardingRule() {
  OpShardingRule rule;
  AttentionFactors f = attentionFactors(rule, getQ(), getK(), getV(), getMask(), getCausal());
  rule.operands = {f.q, f.k, f.v};
  if (getMask())
    rule.operands.push_back(f.mask);
  rule.results = {f.output, f.lse};
  rule.linear.assign(getNumOperands(), false);
  return rule;
}

std::optional<OpShardingRule> AttentionGradOp::getShardingRule() {
  OpShardingRule rule;
  AttentionFactors f = attentionFactors(rule, getQ(), getK(), getV(), getMask(), getCausal());
  rule.operands = {f.q, f.k, f.v};
  if (getMask())
    rule.operands.push_back(f.mask);
  rule.operands.append({f.output, f.lse, f.output});
  rule.results = {f.q, f.k, f.v};
  rule.linear.assign(getNumOperands(), false);
  return rule;
}

std::optional<OpShardingRule> LayerNormGradOp::getShardingRule() {
  ArrayRef<int64_t> x = shapeOf(getInput());
  OpShardingRule rule;
  // The rows are parallel for dinput and summed into dscale and dbias, which lack them.
  LayerNormFactors f = layerNormFactors(rule, x, static_cast<int64_t>(getAxis()));
  TensorFactors scale = normalisedTensor(f, x, shapeOf(getScale()));
  rule.operands = {f.input, f.input, scale, f.stats, f.stats};
  rule.results = {f.input, scale, scale};
  rule.linear.assign(getNumOperands(), false);
  return rule;
}

namespace {
// Losses over scores [n, c, d1..dk] and labels [n, d1..dk] (class weights [c]). `reduction`
// decides the loss's shape: "none" keeps [n, d1..]; "sum" sums them; "mean" averages them,
// which a split can follow only when the count is the number of labels (no class weights, no
// ignore_index): shardc rewrites other means into a sum divided by the count before sharding.
struct LossFactors {
  SmallVector<int> rows; // n, d1..dk
  int classes = -1;
};

// The classes: the label picks one of them (an index block when split: each device picks the
// labels of its block and the per-class sum is a pending sum). Class weights [c] would be read
// by label too: with them the classes stay whole.
int classFactor(OpShardingRule &rule, int64_t classes, bool weighted, bool reduces,
                StringRef op) {
  if (weighted)
    return rule.addWhole(classes, (op + " with class weights reads them by label").str());
  int f = reduces ? rule.addReduction(classes) : rule.addFactor(classes);
  rule.indexedFactors.push_back(f);
  return f;
}

LossFactors lossFactors(OpShardingRule &rule, ArrayRef<int64_t> scores, StringRef reduction,
                        bool countedMean, bool weighted, StringRef op) {
  LossFactors lf;
  PartialKind partial = reduction == "mean" ? PartialKind::Mean : PartialKind::Sum;
  for (size_t d = 0; d < scores.size(); ++d) {
    if (d == 1) {
      lf.classes = classFactor(rule, scores[1], weighted, /*reduces=*/true, op);
      continue;
    }
    int f = scores[d] == 1 ? -1 : rule.addReduction(scores[d], partial);
    if (f >= 0 && reduction == "mean" && !countedMean)
      rule.makeWhole(f, (op + " with reduction \"mean\" divides by a count of the whole "
                              "batch's labels").str());
    lf.rows.push_back(f);
  }
  return lf;
}

TensorFactors scoresTensor(const LossFactors &lf) {
  SmallVector<int> dims = {lf.rows[0], lf.classes};
  dims.append(lf.rows.begin() + 1, lf.rows.end());
  return OpShardingRule::tensor(dims);
}

OpShardingRule lossRule(Operation *op, Value scores, Value weights, StringRef reduction,
                        bool hasIgnoreIndex, StringRef name, bool withLogProb) {
  OpShardingRule rule;
  LossFactors lf = lossFactors(rule, shapeOf(scores), reduction,
                               !weights && !hasIgnoreIndex, static_cast<bool>(weights), name);
  rule.operands.push_back(scoresTensor(lf));
  rule.operands.push_back(OpShardingRule::tensor(lf.rows));
  if (weights)
    rule.operands.push_back(OpShardingRule::tensor({lf.classes}));
  rule.results.push_back(reduction == "none" ? OpShardingRule::tensor(lf.rows)
                                             : TensorFactors());
  if (withLogProb) {
    rule.results.push_back(scoresTensor(lf));
    // Its softmax sums exp over every class: a padded class must add exp(-inf) = 0.
    rule.negInfPadding.assign(op->getNumOperands(), false);
    rule.negInfPadding[0] = true;
  }
  rule.linear.assign(op->getNumOperands(), false);
  return rule;
}

// Gradients of the losses: dscores [n, c, d..] from dloss (a scalar, or [n, d..] for "none").
// A mean divides by the count of the whole batch's labels, which a device does not have.
OpShardingRule lossGradRule(Operation *op, Value dloss, ArrayRef<int64_t> scores,
                            bool hasScoresOperand, Value weights, StringRef reduction,
                            StringRef name) {
  OpShardingRule rule;
  LossFactors lf;
  for (size_t d = 0; d < scores.size(); ++d) {
    if (d == 1) {
      lf.classes = classFactor(rule, scores[1], static_cast<bool>(weights), /*reduces=*/false,
                               name);
      continue;
    }
    int f = scores[d] == 1 ? -1 : rule.addFactor(scores[d]);
    if (f >= 0 && reduction == "mean")
      rule.makeWhole(f, (name + " with reduction \"mean\" divides by a count of the whole "
                                "batch's labels").str());
    lf.rows.push_back(f);
  }
  rule.operands.push_back(shapeOf(dloss).empty() ? TensorFactors()
                                                 : OpShardingRule::tensor(lf.rows));
  if (hasScoresOperand)
    rule.operands.push_back(scoresTensor(lf));
  rule.operands.push_back(OpShardingRule::tensor(lf.rows));
  if (weights)
    rule.operands.push_back(OpShardingRule::tensor({lf.classes}));
  rule.results.push_back(scoresTensor(lf));
  // Linear in dloss: a pending sum there scales every row alike.
  rule.linear.assign(op->getNumOperands(), false);
  rule.linear[0] = true;
  return rule;
}
} // namespace

std::optional<OpShardingRule> SoftmaxCrossEntropyLossOp::getShardingRule() {
  return lossRule(*this, getScores(), getWeights(), getReduction(),
                  getIgnoreIndex().has_value(), "softmax_cross_entropy_loss", true);
}

std::optional<OpShardingRule> NegativeLogLikelihoodLossOp::getShardingRule() {
  return lossRule(*this, getInput(), getWeight(), getReduction(), getIgnoreIndex().has_value(),
                  "nll_loss", false);
}

std::optional<OpShardingRule> SoftmaxCrossEntropyLossGradOp::getShardingRule() {
  return lossGradRule(*this, getDloss(), shapeOf(getLogProb()), true, getWeights(),
                      getReduction(), "softmax_cross_entropy_loss_grad");
}

std::optional<OpShardingRule> NegativeLogLikelihoodLossGradOp::getShardingRule() {
  return lossGradRule(*this, getDloss(), shapeOf(getDinput()), false, getWeight(),
                      getReduction(), "nll_loss_grad");
}

} // namespace shardc::graph
