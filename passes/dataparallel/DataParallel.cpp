//===- DataParallel.cpp -----------------------------------------------------------------===//
#include "passes/dataparallel/DataParallel.h"
#include "passes/sharding/ValueSharding.h"

#include "shardc/Autodiff/TrainStep.h"
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Lowering/TensorBytes.h"

#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace shardc::dp {

int64_t shardLength(int64_t numel, int64_t ranks) { return (numel + ranks - 1) / ranks; }

RankedTensorType flatShardType(Type whole, int64_t ranks) {
  auto t = cast<RankedTensorType>(whole);
  return RankedTensorType::get({shardLength(t.getNumElements(), ranks)}, t.getElementType());
}

FailureOr<TrainStepView> analyzeTrainStep(func::FuncOp func) {
  TrainStepView view;
  view.func = func;
  func.walk([&](Operation *op) {
    view.partitioned = op->hasAttr(sharding::kResultShardingsAttr);
    return view.partitioned ? WalkResult::interrupt() : WalkResult::advance();
  });
  auto meshRef = func->getAttrOfType<FlatSymbolRefAttr>(kMeshAttr);
  auto stage = func->getAttrOfType<IntegerAttr>(kZeroStageAttr);
  if (!meshRef || !stage)
    return func.emitError("@") << func.getSymName()
                               << " is not placed on a mesh (run --shardc-place-on-mesh first)";
  view.mesh = SymbolTable::lookupNearestSymbolFrom<mesh::MeshOp>(func, meshRef);
  // The pipeline's pp axis, when there is one, comes last (passes/pipeline).
  if (!view.mesh || view.mesh.getRank() < 1 || view.mesh.getRank() > 3)
    return func.emitError("mesh ")
           << meshRef << " is not a mesh.mesh of 1 (dp), 2 (dp, tp or pp) or 3 (dp, tp, pp) axes";
  view.ranks = view.mesh.getShape()[0];
  if (view.mesh.getRank() >= 2)
    view.dpAxes = DenseI16ArrayAttr::get(func.getContext(), {0});
  view.zeroStage = static_cast<int>(stage.getInt());

  Block &body = func.getBody().front();
  Operation *ret = body.getTerminator();
  if (ret->getNumOperands() == 0)
    return func.emitError("the training step returns nothing");
  view.lossDef = ret->getOperand(0).getDefiningOp();
  if (!view.lossDef)
    return func.emitError("the loss is an argument of the training step");

  // Result index of each updated parameter / state by name.
  llvm::StringMap<unsigned> paramResult, stateResult;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    if (auto n = func.getResultAttrOfType<StringAttr>(i, graph::kParamAttr))
      paramResult[n.getValue()] = i;
    if (auto n = func.getResultAttrOfType<StringAttr>(i, kStateAttr))
      stateResult[n.getValue()] = i;
  }
  llvm::StringMap<BlockArgument> stateArg;
  for (BlockArgument arg : body.getArguments())
    if (auto n = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kStateAttr))
      stateArg[n.getValue()] = arg;

  for (BlockArgument arg : body.getArguments()) {
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::kParamAttr);
    if (!name || !paramResult.count(name.getValue()) ||
        func.getArgAttr(arg.getArgNumber(), graph::kPipelineCopyAttr))
      continue; // not a parameter, or another pipeline stage's copy (not trained here)
    TrainedParam p;
    p.name = name.str();
    p.param = arg;
    p.paramResult = paramResult[name.getValue()];
    Value newParam = ret->getOperand(p.paramResult);
    p.update = newParam.getDefiningOp();
    if (!p.update || !p.update->hasTrait<graph::traits::OptimizerUpdate>())
      return func.emitError("parameter '") << p.name << "' is not updated by an optimizer op";
    Value grad = p.update->getOperand(1);
    if (auto clip = grad.getDefiningOp<graph::ScaleByClipOp>()) {
      p.clip = clip;
      grad = clip.getGrad();
      view.totalNorm = clip.getTotalNorm();
    }
    p.grad = grad;
    // State operands follow param and grad, in the order of the optimizer's state names.
    unsigned numState = isa<graph::AdamWUpdateOp>(p.update) ? 2 : 1;
    for (unsigned s = 0; s < numState; ++s) {
      auto arg = dyn_cast<BlockArgument>(p.update->getOperand(2 + s));
      if (!arg)
        return func.emitError("the optimizer state of '") << p.name << "' is not an argument";
      p.state.push_back(arg);
      auto stateName = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kStateAttr);
      if (!stateName || !stateResult.count(stateName.getValue()))
        return func.emitError("the optimizer state of '") << p.name << "' is not returned";
      p.stateResults.push_back(stateResult[stateName.getValue()]);
    }
    view.params.push_back(std::move(p));
  }
  if (view.totalNorm)
    for (auto norm : body.getOps<graph::GlobalNormOp>())
      view.norms.push_back(norm);
  return view;
}

bool pendingOverDataParallel(const TrainStepView &view, Value v) {
  if (!view.partitioned)
    return true;
  mesh::MeshShardingAttr sharding = sharding::getSharding(v);
  return sharding && llvm::is_contained(sharding.getPartialAxes(), mesh::MeshAxis(0));
}

void splitPendingGradients(TrainStepView &view, SmallVectorImpl<Value> &pending,
                           SmallVectorImpl<Value> &whole) {
  for (TrainedParam &p : view.params)
    (pendingOverDataParallel(view, p.grad) ? pending : whole).push_back(p.grad);
}

void allReduceLoss(TrainStepView &view) {
  Operation *ret = view.func.getBody().front().getTerminator();
  Value loss = ret->getOperand(0);
  if (!pendingOverDataParallel(view, loss))
    return;
  OpBuilder b(ret);
  Location loc = NameLoc::get(b.getStringAttr("loss/all_reduce"), loss.getLoc());
  auto sum = b.create<mesh::AllReduceOp>(loc, loss.getType(), view.mesh.getSymName(),
                                         ArrayRef<int16_t>{0}, loss);
  ret->setOperand(0, sum);
}

void globalizeGradientNorm(TrainStepView &view) {
  if (!view.totalNorm)
    return;
  Value local = view.totalNorm;
  OpBuilder b(local.getContext());
  b.setInsertionPointAfterValue(local);
  Location loc = NameLoc::get(b.getStringAttr("optimizer/global_norm"), local.getLoc());
  Value square = b.create<graph::MulOp>(loc, local.getType(), local, local);
  Value total = b.create<mesh::AllReduceOp>(loc, square.getType(), view.mesh.getSymName(),
                                            ArrayRef<int16_t>{0}, square);
  Value global = b.create<graph::SqrtOp>(loc, total.getType(), total);
  local.replaceUsesWithIf(global, [&](OpOperand &use) { return use.getOwner() != square.getDefiningOp(); });
  view.totalNorm = global;
}

static uint64_t bytesOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return static_cast<uint64_t>(t.getNumElements()) * runtimeElementSize(t.getElementType());
}

SmallVector<SmallVector<Value>> formBuckets(ArrayRef<Value> values, uint64_t bucketBytes) {
  SmallVector<SmallVector<Value>> buckets;
  uint64_t filled = 0;
  for (Value v : values) {
    if (buckets.empty() || filled >= bucketBytes) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(v);
    filled += bytesOf(v);
  }
  return buckets;
}

Operation *lastDefinition(ArrayRef<Value> values) {
  Operation *last = nullptr;
  for (Value v : values)
    if (Operation *def = v.getDefiningOp())
      if (!last || last->isBeforeInBlock(def))
        last = def;
  return last;
}

void sortByDefinition(SmallVectorImpl<Value> &values) {
  std::stable_sort(values.begin(), values.end(), [](Value a, Value b) {
    Operation *da = a.getDefiningOp(), *db = b.getDefiningOp();
    if (!da || !db)
      return !da && db;
    return da->isBeforeInBlock(db);
  });
}

void replaceUsesAfter(Value from, Value to, Operation *after) {
  from.replaceUsesWithIf(to, [&](OpOperand &use) {
    Operation *user = use.getOwner();
    return user != after && after->isBeforeInBlock(user);
  });
}

void refreshFunctionType(func::FuncOp func) {
  Block &body = func.getBody().front();
  func.setFunctionType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                         body.getTerminator()->getOperandTypes()));
}

void setArgumentType(func::FuncOp func, BlockArgument arg, Type type) {
  arg.setType(type);
  refreshFunctionType(func);
}

mesh::MeshShardingAttr tensorParallelBlock(Attribute sharding) {
  if (auto flat = dyn_cast_or_null<graph::FlatShardAttr>(sharding))
    return flat.getBlock();
  auto split = dyn_cast_or_null<mesh::MeshShardingAttr>(sharding);
  if (!split)
    return nullptr;
  for (const mesh::MeshAxesAttr &axes : split.getSplitAxes())
    if (!axes.empty())
      return split;
  return nullptr;
}

// `attrs` with a flat shard of the device's tensor of `shape` over dp; a tensor-parallel split
// it had stays as the shard's block.
static DictionaryAttr withFlatShard(func::FuncOp func, DictionaryAttr attrs,
                                    ArrayRef<int64_t> shape) {
  NamedAttrList list(attrs);
  auto mesh = func->getAttrOfType<FlatSymbolRefAttr>(kMeshAttr);
  list.set(kShardingAttr,
           graph::FlatShardAttr::get(func.getContext(), mesh, 0, shape,
                                     tensorParallelBlock(list.get(kShardingAttr))));
  return list.getDictionary(func.getContext());
}

void markFlatShardArg(func::FuncOp func, unsigned index, ArrayRef<int64_t> wholeShape) {
  func.setArgAttrs(index, withFlatShard(func,
                                        func.getArgAttrDict(index)
                                            ? func.getArgAttrDict(index)
                                            : DictionaryAttr::get(func.getContext()),
                                        wholeShape));
}

void markFlatShardResult(func::FuncOp func, unsigned index, ArrayRef<int64_t> wholeShape) {
  func.setResultAttrs(index, withFlatShard(func,
                                           func.getResultAttrDict(index)
                                               ? func.getResultAttrDict(index)
                                               : DictionaryAttr::get(func.getContext()),
                                           wholeShape));
}

void updateOnShards(TrainStepView &view, TrainedParam &p, Value gradShard) {
  auto shardType = cast<RankedTensorType>(gradShard.getType());
  if (p.clip) {
    p.clip->setOperand(0, gradShard);
    p.clip.getResult().setType(shardType);
  } else {
    p.update->setOperand(1, gradShard);
  }
  for (graph::GlobalNormOp norm : view.norms)
    for (OpOperand &operand : norm->getOpOperands())
      if (operand.get() == p.grad)
        operand.set(gradShard);
  auto wholeShape = cast<RankedTensorType>(p.param.getType()).getShape().vec();
  for (BlockArgument s : p.state) {
    setArgumentType(view.func, s, shardType);
    markFlatShardArg(view.func, s.getArgNumber(), wholeShape);
  }
  for (Value r : p.update->getResults())
    r.setType(shardType);
  for (unsigned r : p.stateResults)
    markFlatShardResult(view.func, r, wholeShape);
}

Operation *firstOptimizerOp(const TrainStepView &view) {
  Operation *first = nullptr;
  for (graph::GlobalNormOp norm : view.norms)
    if (!first || norm->isBeforeInBlock(first))
      first = norm;
  for (const TrainedParam &p : view.params)
    for (Operation *op : {p.clip ? static_cast<Operation *>(p.clip) : nullptr, p.update})
      if (op && (!first || op->isBeforeInBlock(first)))
        first = op;
  return first;
}

void keepParameterShards(TrainStepView &view, const llvm::DenseMap<Value, Value> &gradShard) {
  for (TrainedParam &p : view.params) {
    auto wholeShape = cast<RankedTensorType>(p.param.getType()).getShape().vec();
    updateOnShards(view, p, gradShard.lookup(p.grad));
    setArgumentType(view.func, p.param, flatShardType(p.param.getType(), view.ranks));
    markFlatShardArg(view.func, p.param.getArgNumber(), wholeShape);
    markFlatShardResult(view.func, p.paramResult, wholeShape);
  }
  globalizeGradientNorm(view);
  refreshFunctionType(view.func);
}

} // namespace shardc::dp
