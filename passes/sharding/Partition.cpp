//===- Partition.cpp - global program -> each device's program (SPMD) -------------------===//
//
// After propagation every value says which dimensions the mesh splits. This pass gives each
// value its local type, recomputes what ops hold about shapes (result types carry Reshape and
// Expand targets; Slice ends and constants are rewritten), tracks which values are pending
// sums (a reduction over a split factor, or a linear op on a pending sum) and all-reduces a
// pending sum before any use that is not linear in it. One rewrite serves every device whose
// blocks have the same extent (all of them when the batch divides evenly).
//
//===-------------------------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/sharding/DimensionClasses.h"
#include "passes/sharding/ValueSharding.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace shardc {
#define GEN_PASS_DEF_PARTITION
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;
using sharding::getSharding;
using sharding::nodeName;
using sharding::kDropoutGlobalShapeAttr;
using sharding::kDropoutSplitDimAttr;
using sharding::kDropoutSplitUnitAttr;

// Uses of a pending sum that the data-parallel passes reduce themselves: the loss the step
// returns, and the gradients the optimizer reads (bucketed all-reduce or reduce-scatter).
bool reducedByDataParallelPasses(Operation *user, unsigned operand) {
  if (isa<func::ReturnOp>(user))
    return operand == 0;
  if (isa<graph::AdamWUpdateOp, graph::SGDUpdateOp>(user))
    return operand == 1;
  if (isa<graph::ScaleByClipOp>(user))
    return operand == 0;
  return isa<graph::GlobalNormOp>(user);
}

struct PartitionPass : impl::PartitionBase<PartitionPass> {
  using PartitionBase::PartitionBase;

  int64_t batch = 0, rows = 0;
  FlatSymbolRefAttr mesh;
  DenseMap<Value, Value> reduced; // pending sum -> its all-reduce
  // Each op's rule, taken from the global program before any type changes.
  DenseMap<Operation *, std::optional<graph::OpShardingRule>> rules;

  // The local size of dimension `d` of a value of global `type` split per `axes`.
  RankedTensorType localType(RankedTensorType type,
                             ArrayRef<SmallVector<mesh::MeshAxis>> axes) {
    SmallVector<int64_t> shape(type.getShape());
    for (size_t d = 0; d < shape.size() && d < axes.size(); ++d)
      if (!axes[d].empty())
        shape[d] = shape[d] / batch * rows;
    return RankedTensorType::get(shape, type.getElementType());
  }

  void setPartial(Value v, bool partial) {
    auto axes = sharding::splitAxes(v);
    SmallVector<mesh::MeshAxis> pending;
    if (partial)
      pending.push_back(0);
    sharding::setSharding(v, sharding::makeSharding(mesh, axes, pending));
  }

  // The all-reduce of pending sum `v`, created once, right after its definition.
  Value allReduced(Value v) {
    if (Value r = reduced.lookup(v))
      return r;
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    Location loc = v.getDefiningOp() ? v.getDefiningOp()->getLoc() : v.getLoc();
    if (auto name = dyn_cast<NameLoc>(loc))
      loc = NameLoc::get(b.getStringAttr(name.getName().str() + "/all_reduce"),
                         name.getChildLoc());
    Value r = b.create<mesh::AllReduceOp>(loc, v.getType(), mesh.getValue(),
                                          ArrayRef<int16_t>{0}, v);
    reduced[v] = r;
    return r;
  }

  // A constant split along the batch: one program serves devices that hold different rows, so
  // the constant must be the same for every row of the batch (along a dimension of size D
  // that holds D / batch elements per row, it repeats with that period). Each device keeps
  // its first local rows.
  LogicalResult sliceConstant(graph::ConstantOp op, RankedTensorType local) {
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!dense)
      return op.emitError("a constant split along the batch must be a dense elements value");
    if (dense.isSplat()) {
      op.setValueAttr(dense.resizeSplat(local));
      op.getResult().setType(local);
      return success();
    }
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
        return op.emitError() << nodeName(op) << ": a constant of type " << global
                              << " holds different values for different rows of the batch; it "
                              << "cannot be split across data-parallel devices";
      if (inLocal)
        kept.push_back(values[i]);
    }
    op.setValueAttr(DenseElementsAttr::get(local, kept));
    op.getResult().setType(local);
    return success();
  }

  LogicalResult rewrite(Operation *op) {
    // 1. Pending sums among the operands: keep those the op is linear in, reduce the others.
    const std::optional<graph::OpShardingRule> &rule = rules[op];
    SmallVector<unsigned> pending;
    for (OpOperand &use : op->getOpOperands())
      if (sharding::isPartial(use.get()))
        pending.push_back(use.getOperandNumber());
    bool passesPending = false;
    SmallVector<unsigned> toReduce;
    if (isa<func::ReturnOp>(op) || isa<graph::AdamWUpdateOp, graph::SGDUpdateOp,
                                       graph::ScaleByClipOp, graph::GlobalNormOp>(op)) {
      for (unsigned i : pending)
        if (!reducedByDataParallelPasses(op, i))
          toReduce.push_back(i);
    } else if (!pending.empty() && rule && rule->sumsOperands) {
      if (pending.size() == op->getNumOperands())
        passesPending = true;
      else
        toReduce = pending;
    } else if (!pending.empty() && rule) {
      for (unsigned i : pending) {
        if (!passesPending && i < rule->linear.size() && rule->linear[i])
          passesPending = true;
        else
          toReduce.push_back(i);
      }
    } else {
      toReduce = pending;
    }
    for (unsigned i : toReduce)
      op->setOperand(i, allReduced(op->getOperand(i)));
    if (isa<func::ReturnOp>(op) || !rule)
      return success();

    // 2. Local result types. A training dropout keeps the whole tensor's shape and where the
    // block lies, for its mask (the kernel adds each device's offset along the split dim).
    if (auto dropout = dyn_cast<graph::DropoutOp>(op); dropout && dropout.isRandom()) {
      auto axes = sharding::splitAxes(dropout.getOutput());
      for (auto [d, a] : llvm::enumerate(axes))
        if (!a.empty()) {
          auto global = cast<RankedTensorType>(dropout.getOutput().getType());
          OpBuilder b(op);
          op->setAttr(kDropoutGlobalShapeAttr, b.getDenseI64ArrayAttr(global.getShape()));
          op->setAttr(kDropoutSplitDimAttr, b.getI64IntegerAttr(static_cast<int64_t>(d)));
          op->setAttr(kDropoutSplitUnitAttr,
                      b.getI64IntegerAttr(global.getDimSize(d) / batch));
          break;
        }
    }
    for (Value r : op->getResults())
      if (auto t = dyn_cast<RankedTensorType>(r.getType()))
        r.setType(localType(t, sharding::splitAxes(r)));

    // 3. Which of the op's factors are split (from any dimension whose major factor it is).
    std::vector<bool> split(rule->factors.size(), false);
    auto markSplit = [&](Value v, const graph::TensorFactors &tf) {
      auto axes = sharding::splitAxes(v);
      for (size_t d = 0; d < tf.size() && d < axes.size(); ++d)
        if (!tf[d].empty() && !axes[d].empty())
          split[tf[d][0]] = true;
    };
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (i < rule->operands.size())
        markSplit(v, rule->operands[i]);

    // 4. A result that lacks a split factor is a pending reduction over it.
    for (auto [i, r] : llvm::enumerate(op->getResults())) {
      if (i >= rule->results.size())
        break;
      std::vector<bool> present(rule->factors.size(), false);
      for (const graph::DimFactors &dim : rule->results[i])
        for (int f : dim)
          present[f] = true;
      bool partial = passesPending;
      int meanFactors = 0;
      for (size_t f = 0; f < split.size(); ++f) {
        if (!split[f] || present[f])
          continue;
        switch (rule->factors[f].partial) {
        case graph::PartialKind::Max:
          return op->emitError() << nodeName(op) << ": a maximum over the split batch would "
                                 << "need an all-reduce of maxima, which is not supported";
        case graph::PartialKind::Mean:
          ++meanFactors;
          [[fallthrough]];
        case graph::PartialKind::Sum:
          partial = true;
          break;
        }
      }
      setPartial(r, partial);
      if (meanFactors) {
        // The local mean covers rows of the batch: weight it by rows / batch before summing.
        OpBuilder b(op->getContext());
        b.setInsertionPointAfter(op);
        auto type = cast<RankedTensorType>(r.getType());
        double w = 1.0;
        for (int k = 0; k < meanFactors; ++k)
          w *= static_cast<double>(rows) / static_cast<double>(batch);
        auto scalar = RankedTensorType::get({}, type.getElementType());
        Value factor = b.create<graph::ConstantOp>(
            op->getLoc(), DenseElementsAttr::get(scalar, llvm::ArrayRef(static_cast<float>(w))));
        auto scaled = b.create<graph::MulOp>(op->getLoc(), type, r, factor);
        r.replaceAllUsesExcept(scaled, scaled);
        setPartial(scaled, true);
        setPartial(r, false);
      }
    }

    // 5. Shapes held in attributes and values.
    if (auto slice = dyn_cast<graph::SliceOp>(op)) {
      SmallVector<int64_t> ends(slice.getEnds());
      auto in = cast<RankedTensorType>(slice.getInput().getType());
      auto axes = sharding::splitAxes(slice.getResult());
      for (size_t d = 0; d < ends.size(); ++d)
        if (!axes[d].empty())
          ends[d] = in.getDimSize(d);
      slice.setEnds(ends);
    } else if (auto constant = dyn_cast<graph::ConstantOp>(op)) {
      // Step 2 gave the result its local type; the value still has the global one.
      auto local = cast<RankedTensorType>(constant.getResult().getType());
      if (local != constant.getValue().getType() && failed(sliceConstant(constant, local)))
        return failure();
    } else if (auto fill = dyn_cast<graph::ConstantOfShapeOp>(op)) {
      auto local = cast<RankedTensorType>(fill.getType());
      OpBuilder b(op);
      auto shapeType = cast<RankedTensorType>(fill.getShape().getType());
      Value shape = b.create<graph::ConstantOp>(
          op->getLoc(), DenseElementsAttr::get(shapeType, local.getShape()));
      fill->setOperand(0, shape);
    }
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("train_step");
    if (!func)
      func = module.lookupSymbol<func::FuncOp>("forward");
    if (!func)
      return;
    auto batchAttr = func->getAttrOfType<IntegerAttr>(sharding::kBatchSizeAttr);
    if (!batchAttr)
      return; // nothing is split
    batch = batchAttr.getInt();
    // The mesh: the one the shardings name.
    for (BlockArgument arg : func.getArguments())
      if (auto s = getSharding(arg))
        mesh = s.getMesh();
    auto meshOp = mesh ? module.lookupSymbol<mesh::MeshOp>(mesh.getAttr()) : nullptr;
    if (!meshOp || meshOp.getRank() != 1) {
      func.emitError("the batch's sharding names no 1-D mesh.mesh");
      return signalPassFailure();
    }
    int64_t ranks = meshOp.getShape()[0];
    rows = localRows;
    if (rows == 0) {
      if (batch % ranks) {
        func.emitError("the batch of ") << batch << " rows does not divide evenly across "
                                        << ranks << " devices; give local-rows";
        return signalPassFailure();
      }
      rows = batch / ranks;
    }
    if (rows < 1 || rows > batch) {
      func.emitError("local-rows ") << static_cast<int64_t>(rows) << " is not in [1, " << batch << "]";
      return signalPassFailure();
    }

    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front()) {
      ops.push_back(&op);
      auto iface = dyn_cast<graph::ShardingRuleOpInterface>(&op);
      rules[&op] = iface ? iface.getShardingRule() : std::nullopt;
    }
    for (BlockArgument arg : func.getArguments())
      if (auto t = dyn_cast<RankedTensorType>(arg.getType()))
        arg.setType(localType(t, sharding::splitAxes(arg)));
    for (Operation *op : ops)
      if (failed(rewrite(op)))
        return signalPassFailure();
    Block &body = func.getBody().front();
    func.setFunctionType(FunctionType::get(&getContext(), body.getArgumentTypes(),
                                           body.getTerminator()->getOperandTypes()));
  }
};

} // namespace
} // namespace shardc
