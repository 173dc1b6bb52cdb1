//===- TrainStep.cpp - build the training step from the forward pass --------------------===//
#include "shardc/Autodiff/TrainStep.h"

#include "shardc/Autodiff/ReverseMode.h"
#include "shardc/Dialect/Graph/GradientUtils.h"
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>
#include <numeric>
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

namespace {

// Dynamic loss scaling's values in the step: its state arguments (log2, growth tracker,
// skipped steps) and the scale.
struct LossScaler {
  SmallVector<Value> state;
  Value scale;
};

// After the backward pass: each trained parameter's gradient unscaled (times 1/scale, exact for
// a power of two, as GradScaler's unscale_), `skip` = 1 when any gradient element is not finite
// (Σ g·0 is NaN then, 0 otherwise; under data parallelism the partitioner sums it over the
// ranks, so every rank skips together), `optimizerStep` = the step's number minus the steps
// skipped so far, and the state's next values (GradScaler.update with growth 2, backoff 0.5):
// found: log2 - 1, tracker 0; else tracker + 1, and when it reaches the interval log2 + 1,
// tracker 0.
SmallVector<Value> unscaleGradients(OpBuilder &b, Location loc, const TrainStepOptions &opt,
                                    const LossScaler &scaler, MutableArrayRef<Trainee> trained,
                                    Value nextStep, Value &skip, Value &optimizerStep) {
  auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
  auto constant = [&](float v) {
    return b.create<ConstantOp>(loc, DenseElementsAttr::get(f32Scalar, v));
  };
  Value inverse = b.create<DivOp>(loc, f32Scalar, constant(1.0f), scaler.scale);
  Value zero = constant(0.0f), nonFinite;
  for (Trainee &t : trained) {
    auto type = cast<RankedTensorType>(t.grad.getType());
    t.grad = b.create<MulOp>(loc, type, t.grad, inverse);
    Value probe = b.create<MulOp>(loc, type, t.grad, zero);
    SmallVector<int64_t> axes(type.getRank());
    std::iota(axes.begin(), axes.end(), 0);
    if (!axes.empty())
      probe = b.create<ReduceSumOp>(loc, f32Scalar, probe, b.getDenseI64ArrayAttr(axes),
                                    b.getBoolAttr(false));
    nonFinite = nonFinite ? b.create<AddOp>(loc, f32Scalar, nonFinite, probe).getResult() : probe;
  }
  auto boolScalar = RankedTensorType::get({}, b.getI1Type());
  Value finite = b.create<EqualOp>(loc, boolScalar, nonFinite, zero);
  Value found = b.create<NotOp>(loc, boolScalar, finite);
  skip = b.create<CastOp>(loc, f32Scalar, found, TypeAttr::get(b.getF32Type()));
  Value one = constant(1.0f);
  Value notFound = b.create<SubOp>(loc, f32Scalar, one, skip);
  Value log2 = scaler.state[0], tracker = scaler.state[1], skipped = scaler.state[2];
  Value counted = b.create<MulOp>(loc, f32Scalar,
                                  b.create<AddOp>(loc, f32Scalar, tracker, one), notFound);
  Value grow = b.create<CastOp>(
      loc, f32Scalar,
      b.create<EqualOp>(loc, boolScalar, counted,
                        constant(static_cast<float>(opt.lossScaleGrowthInterval))),
      TypeAttr::get(b.getF32Type()));
  Value newTracker = b.create<MulOp>(loc, f32Scalar, counted,
                                     b.create<SubOp>(loc, f32Scalar, one, grow));
  Value newLog2 = b.create<AddOp>(loc, f32Scalar,
                                  b.create<SubOp>(loc, f32Scalar, log2, skip), grow);
  Value newSkipped = b.create<AddOp>(loc, f32Scalar, skipped, skip);
  auto i64Scalar = RankedTensorType::get({}, b.getI64Type());
  optimizerStep = b.create<SubOp>(
      loc, i64Scalar, nextStep,
      b.create<CastOp>(loc, i64Scalar, skipped, TypeAttr::get(b.getI64Type())));
  return {newLog2, newTracker, newSkipped};
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
  // Dynamic loss scaling: the scale, init x 2^log2 (exact: a power of two), from its state.
  Builder attrs(ctx);
  auto f32Scalar = RankedTensorType::get({}, attrs.getF32Type());
  auto addArg = [&](Type type, StringRef attr, Attribute value) {
    unsigned index = step.getNumArguments();
    step.insertArgument(index, type, attrs.getDictionaryAttr(attrs.getNamedAttr(attr, value)),
                        step.getLoc());
    return step.getArgument(index);
  };
  LossScaler scaler;
  if (opt.dynamicLossScale) {
    if (!(opt.lossScaleInit > 0.0) || std::ilogb(opt.lossScaleInit) < -126 ||
        std::ilogb(opt.lossScaleInit) > 127 || opt.lossScaleGrowthInterval < 1)
      return forward.emitError("dynamic loss scaling needs a positive, finite f32 initial "
                               "scale and a growth interval >= 1");
    for (StringRef name : {kLossScaleLog2State, kLossScaleGrowthState, kLossScaleSkippedState})
      scaler.state.push_back(addArg(f32Scalar, kStateAttr, attrs.getStringAttr(name)));
    OpBuilder top = OpBuilder::atBlockBegin(&body);
    Location sloc = NameLoc::get(attrs.getStringAttr("loss_scale"), step.getLoc());
    auto constant = [&](float v) {
      return top.create<ConstantOp>(sloc, DenseElementsAttr::get(f32Scalar, v));
    };
    Value power = top.create<PowOp>(sloc, f32Scalar, constant(2.0f), scaler.state[0]);
    scaler.scale = top.create<MulOp>(sloc, f32Scalar,
                                     constant(static_cast<float>(opt.lossScaleInit)), power);
  }
  FailureOr<SmallVector<Value>> grads = buildGradients(body, loss, wrt, scaler.scale);
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
  for (Trainee &t : trained)
    for (StringRef s : stateNames(opt))
      t.state.push_back(addArg(t.param.getType(), kStateAttr,
                               attrs.getStringAttr(t.name + "." + s.str())));
  auto i64Scalar = RankedTensorType::get({}, attrs.getI64Type());
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

  // With loss scaling: unscaled gradients, the found-inf flag the updates skip on, and the
  // optimizer's step count (the steps not skipped).
  Value skip, optimizerStep = nextStep;
  SmallVector<Value> scalerResults;
  if (opt.dynamicLossScale) {
    Location sloc = NameLoc::get(attrs.getStringAttr("loss_scale"), step.getLoc());
    scalerResults = unscaleGradients(b, sloc, opt, scaler, trained, nextStep, skip,
                                     optimizerStep);
  }

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
  if (opt.dynamicLossScale)
    for (auto [value, name] : {std::pair<Value, StringRef>{scaler.scale, kLossScaleOutput},
                               {skip, kLossScaleOverflowOutput}}) {
      results.push_back(value);
      resultAttrs.push_back(
          attrs.getDictionaryAttr(attrs.getNamedAttr(kOutputAttr, attrs.getStringAttr(name))));
    }
  SmallVector<Value> newStates;
  SmallVector<DictionaryAttr> stateAttrs;
  for (Trainee &t : trained) {
    Location ploc = NameLoc::get(attrs.getStringAttr("optimizer/" + t.name), step.getLoc());
    SmallVector<Value> updated;
    if (opt.optimizer == "adamw") {
      auto u = b.create<AdamWUpdateOp>(
          ploc, TypeRange{t.param.getType(), t.param.getType(), t.param.getType()}, t.param,
          t.grad, t.state[0], t.state[1], optimizerStep, lrArg, skip,
          b.getF64FloatAttr(opt.beta1),
          b.getF64FloatAttr(opt.beta2), b.getF64FloatAttr(opt.eps),
          b.getF64FloatAttr(opt.weightDecay));
      updated.assign(u->result_begin(), u->result_end());
    } else {
      auto u = b.create<SGDUpdateOp>(
          ploc, TypeRange{t.param.getType(), t.param.getType()}, t.param, t.grad, t.state[0],
          optimizerStep, lrArg, skip, b.getF64FloatAttr(opt.momentum),
          b.getF64FloatAttr(opt.dampening),
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
  for (auto [value, name] : llvm::zip(scalerResults, ArrayRef<StringRef>{
                                                         kLossScaleLog2State,
                                                         kLossScaleGrowthState,
                                                         kLossScaleSkippedState})) {
    results.push_back(value);
    resultAttrs.push_back(
        attrs.getDictionaryAttr(attrs.getNamedAttr(kStateAttr, attrs.getStringAttr(name))));
  }
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
