//===- TensorParallelPadding.cpp ---------------------------------------------------------===//
#include "passes/sharding/TensorParallelPadding.h"

#include "shardc/Autodiff/TrainStep.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace shardc::sharding {

using namespace mlir;

namespace {

// The dimensions of `v` in class `cls`.
SmallVector<unsigned> dimsIn(const DimensionClasses &dc, Value v, int cls) {
  SmallVector<unsigned> dims;
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type)
    return dims;
  for (unsigned d = 0; d < type.getRank(); ++d)
    if (dc.classOf(v, d) == cls)
      dims.push_back(d);
  return dims;
}

// Every op that reads or writes a value of the class, in program order of discovery.
llvm::SetVector<Operation *> opsOver(const DimensionClasses &dc, int cls) {
  llvm::SetVector<Operation *> ops;
  for (const DimRef &m : dc.info(cls).members) {
    if (Operation *def = m.value.getDefiningOp())
      ops.insert(def);
    for (Operation *user : m.value.getUsers())
      ops.insert(user);
  }
  return ops;
}

bool holds(const graph::TensorFactors &tensor, int factor) {
  for (const graph::DimFactors &dim : tensor)
    if (llvm::is_contained(dim, factor))
      return true;
  return false;
}

bool isZeroSplat(Operation *op) {
  auto constant = dyn_cast<graph::ConstantOp>(op);
  auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || !dense.isSplat())
    return false;
  Type et = dense.getElementType();
  if (isa<FloatType>(et))
    return dense.getSplatValue<APFloat>().isZero();
  if (isa<IntegerType>(et))
    return dense.getSplatValue<APInt>().isZero();
  return false;
}

// What padding asks of one op over the class.
struct OpPadding {
  std::string why;                      // non-empty: the padding would change its result
  SmallVector<unsigned> negInfOperands; // to be fed -inf at the padding
  bool zeroResults = false;             // its results holding the class are zeroed after it
};

OpPadding paddingOf(Operation *op, const DimensionClasses &dc, int cls) {
  OpPadding p;
  if (op->hasAttr(graph::kWholeOperandsAttr)) {
    p.why = "takes it whole (a resharding point)";
    return p;
  }
  auto iface = dyn_cast<graph::ShardingRuleOpInterface>(op);
  std::optional<graph::OpShardingRule> rule = iface ? iface.getShardingRule() : std::nullopt;
  if (!rule) {
    p.why = "has no sharding rule";
    return p;
  }
  if (rule->positional) {
    p.why = "derives values from each element's position in the whole tensor";
    return p;
  }
  // The rule's factors in the class: the major factors of the dimensions in it.
  SmallVector<int> factors;
  auto collect = [&](Value v, const graph::TensorFactors &tensor) {
    for (unsigned d : dimsIn(dc, v, cls))
      if (d < tensor.size() && !tensor[d].empty() && !llvm::is_contained(factors, tensor[d][0]))
        factors.push_back(tensor[d][0]);
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (i < rule->operands.size())
      collect(v, rule->operands[i]);
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (i < rule->results.size())
      collect(v, rule->results[i]);
  for (int f : factors) {
    SmallVector<unsigned> holders;
    for (size_t i = 0; i < rule->operands.size(); ++i)
      if (holds(rule->operands[i], f))
        holders.push_back(static_cast<unsigned>(i));
    auto negInf = [&](unsigned i) {
      if (!isa<FloatType>(getElementTypeOrSelf(op->getOperand(i).getType())))
        p.why = "reads every entry of it from a non-float operand";
      else if (!llvm::is_contained(p.negInfOperands, i))
        p.negInfOperands.push_back(i);
    };
    for (unsigned i : holders)
      if (i < rule->negInfPadding.size() && rule->negInfPadding[i])
        negInf(i);
    bool inResult = llvm::any_of(rule->results, [&](const graph::TensorFactors &t) {
      return holds(t, f);
    });
    if (inResult || llvm::is_contained(rule->indexedFactors, f))
      continue; // computed per entry, or picked by index values that name no padding
    switch (rule->factors[f].partial) {
    case graph::PartialKind::Sum:
      if (!llvm::any_of(holders, [&](unsigned i) {
            return i < rule->linear.size() && rule->linear[i];
          }))
        p.why = "sums a function of it that is not zero at zero";
      break;
    case graph::PartialKind::Norm:
      break;
    case graph::PartialKind::Max:
      for (unsigned i : holders)
        negInf(i);
      break;
    case graph::PartialKind::Mean:
      p.why = "averages over it, and the padding would count";
      break;
    }
  }
  // An op that sums its operands keeps zeros only when every operand holds them; any other
  // only from an operand that holds them (an expand or a broadcast of values that do not hold
  // the dimension writes those values into the padding) or from indices that never name it
  // (a gather's gradient scatters into its rows).
  auto holdsClass = [&](Value v) {
    return isa<RankedTensorType>(v.getType()) && !dimsIn(dc, v, cls).empty();
  };
  bool operandsHold = llvm::all_of(op->getOperands(), [&](Value v) {
    return !isa<RankedTensorType>(v.getType()) || holdsClass(v);
  });
  bool someOperandHolds = llvm::any_of(op->getOperands(), holdsClass);
  bool resultsIndexed = !factors.empty() && llvm::all_of(factors, [&](int f) {
    return llvm::is_contained(rule->indexedFactors, f);
  });
  bool keeps = rule->keepsZeroPadding && p.negInfOperands.empty() &&
               (rule->sumsOperands ? operandsHold : someOperandHolds || resultsIndexed);
  p.zeroResults = !keeps && !isZeroSplat(op);
  return p;
}

bool isStoredState(func::FuncOp func, unsigned result) {
  return func.getResultAttr(result, graph::kParamAttr) || func.getResultAttr(result, kStateAttr);
}

} // namespace

std::string whyNotPaddable(func::FuncOp func, const DimensionClasses &dc, int cls) {
  const DimClass &info = dc.info(cls);
  for (const DimRef &m : info.members) {
    auto type = cast<RankedTensorType>(m.value.getType());
    if (m.groups > 1 || type.getDimSize(m.dim) != info.unit)
      return valueName(m.value) + " holds it inside a larger dimension (dim " +
             std::to_string(m.dim) + ", size " + std::to_string(type.getDimSize(m.dim)) + ")";
    if (auto arg = dyn_cast<BlockArgument>(m.value)) {
      unsigned i = arg.getArgNumber();
      if (!func.getArgAttr(i, graph::kParamAttr) && !func.getArgAttr(i, kStateAttr))
        return valueName(m.value) + ", a graph input, holds it";
    } else if (auto constant = m.value.getDefiningOp<graph::ConstantOp>()) {
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!dense || !dense.isSplat())
        return nodeName(constant) + " holds constant values along it";
    }
  }
  for (Operation *op : opsOver(dc, cls)) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [j, v] : llvm::enumerate(ret.getOperands()))
        if (!dimsIn(dc, v, cls).empty() && !isStoredState(func, static_cast<unsigned>(j)))
          return "the step returns it as output " + std::to_string(j) +
                 ", which would hold the padding";
      continue;
    }
    OpPadding p = paddingOf(op, dc, cls);
    if (!p.why.empty())
      return nodeName(op) + " " + p.why;
  }
  return "";
}

FailureOr<PaddedClass> padClass(func::FuncOp func, const DimensionClasses &dc, int cls,
                                int64_t padded) {
  const DimClass &info = dc.info(cls);
  PaddedClass result;
  result.size = info.unit;
  result.padded = padded;

  // What each op needs, decided on the unpadded program with its classes.
  struct Zeroing {
    Value value;
    unsigned dim, rank;
  };
  struct NegInf {
    Operation *op;
    unsigned operand, dim, rank;
  };
  SmallVector<Zeroing> zeroings;
  SmallVector<NegInf> negInfs;
  for (Operation *op : opsOver(dc, cls)) {
    if (isa<func::ReturnOp>(op))
      continue;
    OpPadding p = paddingOf(op, dc, cls);
    if (!p.why.empty())
      return op->emitError("internal error: padding a dimension that ") << nodeName(op) << " "
                                                                        << p.why;
    for (unsigned i : p.negInfOperands) {
      Value v = op->getOperand(i);
      SmallVector<unsigned> dims = dimsIn(dc, v, cls);
      negInfs.push_back({op, i, dims.front(),
                         static_cast<unsigned>(cast<RankedTensorType>(v.getType()).getRank())});
    }
    if (p.zeroResults)
      for (Value v : op->getResults())
        if (SmallVector<unsigned> dims = dimsIn(dc, v, cls); !dims.empty())
          zeroings.push_back({v, dims.front(),
                              static_cast<unsigned>(cast<RankedTensorType>(v.getType()).getRank())});
  }

  // Every value of the class gets the padded size.
  MLIRContext *ctx = func.getContext();
  auto paddedType = [&](Value v, unsigned dim) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] = padded;
    return RankedTensorType::get(shape, type.getElementType());
  };
  for (const DimRef &m : info.members) {
    RankedTensorType type = paddedType(m.value, m.dim);
    Value value = m.value;
    value.setType(type);
    if (auto constant = m.value.getDefiningOp<graph::ConstantOp>())
      constant.setValueAttr(cast<DenseElementsAttr>(constant.getValue()).resizeSplat(type));
  }
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  func.setType(FunctionType::get(ctx, body.getArgumentTypes(), ret.getOperandTypes()));
  OpBuilder b(ctx);
  auto record = [&](unsigned dim) {
    return b.getDenseI64ArrayAttr({static_cast<int64_t>(dim), info.unit});
  };
  for (BlockArgument arg : func.getArguments())
    if (SmallVector<unsigned> dims = dimsIn(dc, arg, cls); !dims.empty())
      func.setArgAttr(arg.getArgNumber(), graph::kTpPaddingAttr, record(dims.front()));
  for (auto [j, v] : llvm::enumerate(ret.getOperands()))
    if (SmallVector<unsigned> dims = dimsIn(dc, v, cls); !dims.empty())
      func.setResultAttr(static_cast<unsigned>(j), graph::kTpPaddingAttr, record(dims.front()));

  // The masks: true at the padding, shaped to broadcast along the dimension.
  std::map<std::pair<unsigned, unsigned>, Value> masks;
  Location loc = func.getLoc();
  auto maskFor = [&](unsigned rank, unsigned dim) {
    Value &mask = masks[{rank, dim}];
    if (!mask) {
      SmallVector<int64_t> shape(rank, 1);
      shape[dim] = padded;
      SmallVector<bool> values(static_cast<size_t>(padded));
      for (int64_t i = 0; i < padded; ++i)
        values[static_cast<size_t>(i)] = i >= info.unit;
      b.setInsertionPointToStart(&body);
      mask = b.create<graph::ConstantOp>(
          loc, DenseElementsAttr::get(RankedTensorType::get(shape, b.getI1Type()),
                                      ArrayRef<bool>(values)));
    }
    return mask;
  };
  auto scalar = [&](Type et, bool negInf) -> Value {
    auto type = RankedTensorType::get({}, et);
    Attribute value =
        negInf ? Attribute(b.getFloatAttr(
                     et, APFloat::getInf(cast<FloatType>(et).getFloatSemantics(), true)))
               : b.getZeroAttr(et);
    return b.create<graph::ConstantOp>(loc, DenseElementsAttr::get(type, value));
  };
  for (const NegInf &n : negInfs) {
    Value mask = maskFor(n.rank, n.dim);
    b.setInsertionPoint(n.op);
    Value x = n.op->getOperand(n.operand);
    Value fill = scalar(getElementTypeOrSelf(x.getType()), true);
    auto masked = b.create<graph::WhereOp>(n.op->getLoc(), mask, fill, x);
    n.op->setOperand(n.operand, masked.getResult());
    ++result.negInfMasks;
  }
  for (const Zeroing &z : zeroings) {
    if (z.value.use_empty())
      continue; // (a log_prob no op reads)
    Value mask = maskFor(z.rank, z.dim);
    b.setInsertionPointAfterValue(z.value);
    Value zero = scalar(getElementTypeOrSelf(z.value.getType()), false);
    auto zeroed = b.create<graph::WhereOp>(z.value.getLoc(), mask, zero, z.value);
    Value value = z.value;
    value.replaceAllUsesExcept(zeroed.getResult(), zeroed.getOperation());
    ++result.zeroings;
  }
  if (failed(verify(func)))
    return func.emitError("internal error: the program padded along ")
           << valueName(info.members.front().value) << " dim "
           << info.members.front().dim << " no longer verifies";
  return result;
}

} // namespace shardc::sharding
