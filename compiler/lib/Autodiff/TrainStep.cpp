//===- TrainStep.cpp - build the training step from the forward pass --------------------===//
#include "shardc/Autodiff/TrainStep.h"

#include "shardc/Autodiff/ReverseMode.h"
#include "shardc/Dialect/Graph/GradientUtils.h"
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/Regex.h"

using namespace mlir;
using namespace shardc::graph;

namespace shardc {

namespace {

// The first scalar f32 result of @forward is the loss.
int findLoss(func::FuncOp forward) {
  for (auto [i, type] : llvm::enumerate(forward.getFunctionType().getResults())) {
    auto t = dyn_cast<RankedTensorType>(type);
    if (t && t.getRank() == 0 && t.getElementType().isF32())
      return static_cast<int>(i);
  }
  return -1;
}

LogicalResult compileRegex(func::FuncOp f, const std::string &pattern, const char *flag,
                           std::optional<llvm::Regex> &out) {
  if (pattern.empty())
    return success();
  out.emplace("^(" + pattern + ")$");
  std::string why;
  if (!out->isValid(why))
    return f.emitError(flag) << " '" << pattern << "' is not a valid regular expression: " << why;
  return success();
}

struct Trainee {
  std::string name;
  Value param, grad;
  SmallVector<Value> state; // optimizer state arguments, in kStateNames order
};

SmallVector<StringRef> stateNames(const TrainStepOptions &opt) {
  if (opt.optimizer == "adamw")
    return {"exp_avg", "exp_avg_sq"};
  return {"momentum_buffer"};
}

} // namespace

LogicalResult buildTrainStep(func::FuncOp forward, const TrainStepOptions &opt) {
  MLIRContext *ctx = forward.getContext();
  if (opt.optimizer != "adamw" && opt.optimizer != "sgd")
    return forward.emitError("--optimizer '") << opt.optimizer << "': expected adamw or sgd";
  int lossIndex = findLoss(forward);
  if (lossIndex < 0)
    return forward.emitError("training needs a scalar float output (the loss); the model has "
                             "none");
  std::optional<llvm::Regex> freeze, trainable;
  if (failed(compileRegex(forward, opt.freeze, "--freeze", freeze)) ||
      failed(compileRegex(forward, opt.trainable, "--trainable", trainable)))
    return failure();

  auto step = cast<func::FuncOp>(forward->clone());
  step.setSymName("train_step");
  OpBuilder(forward).insert(step);
  Block &body = step.getBody().front();
  Operation *ret = body.getTerminator();
  Value loss = ret->getOperand(lossIndex);
  // Buffers the forward pass updates (graph.buffer results) stay results of the step.
  SmallVector<std::pair<Value, StringAttr>> bufferUpdates;
  for (unsigned i = 0; i < step.getNumResults(); ++i)
    if (auto name = step.getResultAttrOfType<StringAttr>(i, kBufferAttr))
      bufferUpdates.push_back({ret->getOperand(i), name});

  // Candidates: f32 parameters that pass the name filters.
  SmallVector<Trainee> trainees;
  SmallVector<Value> wrt;
  for (BlockArgument arg : body.getArguments()) {
    auto name = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamAttr);
    if (!name || !isDifferentiable(arg) ||
        step.getArgAttr(arg.getArgNumber(), graph::kNotTrainableAttr))
      continue;
    if ((freeze && freeze->match(name.getValue())) ||
        (trainable && !trainable->match(name.getValue())))
      continue;
    trainees.push_back({name.str(), arg, Value(), {}});
    wrt.push_back(arg);
  }
  FailureOr<SmallVector<Value>> grads = buildGradients(body, loss, wrt);
  if (failed(grads)) {
    step.erase();
    return failure();
  }
  // Only parameters the loss depends on are trained (a mask buffer feeding a comparison has
  // no gradient and stays a plain input, never decayed).
  SmallVector<Trainee> trained;
  for (auto [t, g] : llvm::zip(trainees, *grads))
    if (g) {
      t.grad = g;
      trained.push_back(t);
    }
  if (trained.empty()) {
    step.erase();
    return forward.emitError("no parameter to train: the loss depends on no f32 parameter "
                             "that passes --freeze/--trainable");
  }

  // New arguments: optimizer state per trained parameter, then the step count and the lr.
  Builder attrs(ctx);
  auto addArg = [&](Type type, StringRef attr, Attribute value) {
    unsigned index = step.getNumArguments();
    step.insertArgument(index, type, attrs.getDictionaryAttr(attrs.getNamedAttr(attr, value)),
                        step.getLoc());
    return step.getArgument(index);
  };
  for (Trainee &t : trained)
    for (StringRef s : stateNames(opt))
      t.state.push_back(addArg(t.param.getType(), kStateAttr,
                               attrs.getStringAttr(t.name + "." + s.str())));
  auto i64Scalar = RankedTensorType::get({}, attrs.getI64Type());
  auto f32Scalar = RankedTensorType::get({}, attrs.getF32Type());
  Value stepArg = addArg(i64Scalar, kStepAttr, attrs.getUnitAttr());
  Value lrArg = addArg(f32Scalar, kLrAttr, attrs.getUnitAttr());

  // The number of the step being taken (1-based), first in the body: the optimizer's bias
  // correction and every training dropout's key use it.
  Location loc = NameLoc::get(attrs.getStringAttr("optimizer"), step.getLoc());
  OpBuilder top = OpBuilder::atBlockBegin(&body);
  Value nextStep = top.create<AddOp>(
      loc, stepArg, top.create<ConstantOp>(loc, DenseElementsAttr::get(i64Scalar, int64_t{1})));
  SmallVector<DropoutOp> randomDropouts;
  body.walk([&](DropoutOp d) {
    if (d.isRandom())
      randomDropouts.push_back(d);
  });
  if (!randomDropouts.empty()) {
    Value seedArg = addArg(i64Scalar, kSeedAttr, attrs.getUnitAttr());
    for (DropoutOp d : randomDropouts)
      d.getKeyMutable().assign(ValueRange{seedArg, nextStep});
  }

  OpBuilder b(ret);

  if (opt.gradClip > 0.0) {
    SmallVector<Value> all;
    for (Trainee &t : trained)
      all.push_back(t.grad);
    Value norm = b.create<GlobalNormOp>(loc, f32Scalar, all);
    for (Trainee &t : trained)
      t.grad = b.create<ScaleByClipOp>(loc, t.grad.getType(), t.grad, norm,
                                       b.getF32FloatAttr(static_cast<float>(opt.gradClip)));
  }

  SmallVector<Value> results{loss};
  SmallVector<DictionaryAttr> resultAttrs{
      attrs.getDictionaryAttr(attrs.getNamedAttr(kOutputAttr, attrs.getStringAttr(kLossName)))};
  SmallVector<Value> newStates;
  SmallVector<DictionaryAttr> stateAttrs;
  for (Trainee &t : trained) {
    Location ploc = NameLoc::get(attrs.getStringAttr("optimizer/" + t.name), step.getLoc());
    SmallVector<Value> updated;
    if (opt.optimizer == "adamw") {
      auto u = b.create<AdamWUpdateOp>(
          ploc, TypeRange{t.param.getType(), t.param.getType(), t.param.getType()}, t.param,
          t.grad, t.state[0], t.state[1], nextStep, lrArg, b.getF64FloatAttr(opt.beta1),
          b.getF64FloatAttr(opt.beta2), b.getF64FloatAttr(opt.eps),
          b.getF64FloatAttr(opt.weightDecay));
      updated.assign(u->result_begin(), u->result_end());
    } else {
      auto u = b.create<SGDUpdateOp>(
          ploc, TypeRange{t.param.getType(), t.param.getType()}, t.param, t.grad, t.state[0],
          nextStep, lrArg, b.getF64FloatAttr(opt.momentum), b.getF64FloatAttr(opt.dampening),
          b.getF64FloatAttr(opt.weightDecay), b.getBoolAttr(opt.nesterov));
      updated.assign(u->result_begin(), u->result_end());
    }
    results.push_back(updated[0]);
    resultAttrs.push_back(attrs.getDictionaryAttr(
        attrs.getNamedAttr(kParamAttr, attrs.getStringAttr(t.name))));
    for (auto [s, v] : llvm::zip(stateNames(opt), ArrayRef<Value>(updated).drop_front())) {
      newStates.push_back(v);
      stateAttrs.push_back(attrs.getDictionaryAttr(
          attrs.getNamedAttr(kStateAttr, attrs.getStringAttr(t.name + "." + s.str()))));
    }
  }
  llvm::append_range(results, newStates);
  llvm::append_range(resultAttrs, stateAttrs);
  for (auto [value, name] : bufferUpdates) {
    results.push_back(value);
    resultAttrs.push_back(attrs.getDictionaryAttr(attrs.getNamedAttr(kBufferAttr, name)));
  }
  results.push_back(nextStep);
  resultAttrs.push_back(attrs.getDictionaryAttr(attrs.getNamedAttr(kStepAttr, attrs.getUnitAttr())));

  b.create<func::ReturnOp>(ret->getLoc(), results);
  ret->erase();
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  step.setFunctionType(FunctionType::get(ctx, body.getArgumentTypes(), resultTypes));
  step.setAllResultAttrs(resultAttrs);

  // Outputs other than the loss (e.g. logits) are not results of the step any more.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body.getOperations())))
    if (!op.hasTrait<OpTrait::IsTerminator>() && op.use_empty() && isPure(&op))
      op.erase();
  forward.erase();
  return success();
}

} // namespace shardc
