//===- ElementwiseOps.cpp - unary, binary, comparison, logical, Clip, Where, Cast -------===//
//
// Element types and broadcasting are checked by the dialect's shape inference and verifiers;
// the importers only resolve ONNX's optional forms (Clip's absent bounds, variadic Max/Min).
//
//===-------------------------------------------------------------------------------------===//
#include "frontends/onnx/ops/OpImporters.h"

#include "frontends/onnx/ErrorReporting.h"
#include "frontends/onnx/NodeContext.h"
#include "frontends/onnx/TensorDecoding.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include <limits>

using namespace mlir;
using namespace shardc::graph;

namespace shardc::onnx_import {

namespace {

template <typename OpT> LogicalResult importBinary(NodeContext &node) {
  FailureOr<Value> lhs = node.requiredInput(0, "A");
  FailureOr<Value> rhs = node.requiredInput(1, "B");
  if (failed(lhs) || failed(rhs))
    return failure();
  return node.setOutput(node.createInferred1<OpT>(*lhs, *rhs));
}

template <typename OpT> LogicalResult importUnary(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "X");
  if (failed(x))
    return failure();
  return node.setOutput(node.createTyped1<OpT>(x->getType(), *x));
}

// Max/Min take 1 to N inputs that broadcast together: a chain of binary ops computes the
// same, and a single input is returned unchanged.
template <typename OpT> LogicalResult importVariadic(NodeContext &node) {
  FailureOr<Value> acc = node.requiredInput(0, "data_0");
  if (failed(acc))
    return failure();
  if (node.numInputs() == 1)
    return node.setOutput(node.createTyped1<IdentityOp>(acc->getType(), *acc));
  for (unsigned i = 1; i < node.numInputs(); ++i) {
    FailureOr<Value> next = node.requiredInput(i, "data_" + std::to_string(i));
    if (failed(next))
      return failure();
    acc = node.createInferred1<OpT>(*acc, *next);
    if (failed(acc))
      return failure();
  }
  return node.setOutput(*acc);
}

// Clip's absent bound is the element type's extreme (numeric_limits lowest()/max(), as the
// ONNX specification says), so that graph.clip always has both.
FailureOr<DenseElementsAttr> clipBound(NodeContext &node, Type element, bool lower) {
  auto scalar = RankedTensorType::get({}, element);
  if (element.isF32())
    return DenseElementsAttr::get(scalar, lower ? std::numeric_limits<float>::lowest()
                                                : std::numeric_limits<float>::max());
  if (element.isInteger(64))
    return DenseElementsAttr::get(scalar, lower ? std::numeric_limits<int64_t>::min()
                                                : std::numeric_limits<int64_t>::max());
  if (element.isInteger(32))
    return DenseElementsAttr::get(scalar, lower ? std::numeric_limits<int32_t>::min()
                                                : std::numeric_limits<int32_t>::max());
  return node.fail("Clip is not defined for bool tensors");
}

} // namespace

LogicalResult importAdd(NodeContext &node) { return importBinary<AddOp>(node); }
LogicalResult importSub(NodeContext &node) { return importBinary<SubOp>(node); }
LogicalResult importMul(NodeContext &node) { return importBinary<MulOp>(node); }
LogicalResult importDiv(NodeContext &node) { return importBinary<DivOp>(node); }
// Pow's exponent may have another numeric type than the base (graph.pow allows it).
LogicalResult importPow(NodeContext &node) { return importBinary<PowOp>(node); }
LogicalResult importEqual(NodeContext &node) { return importBinary<EqualOp>(node); }
LogicalResult importLess(NodeContext &node) { return importBinary<LessOp>(node); }
LogicalResult importGreater(NodeContext &node) { return importBinary<GreaterOp>(node); }
LogicalResult importAnd(NodeContext &node) { return importBinary<AndOp>(node); }
LogicalResult importOr(NodeContext &node) { return importBinary<OrOp>(node); }

LogicalResult importNot(NodeContext &node) { return importUnary<NotOp>(node); }
LogicalResult importSqrt(NodeContext &node) { return importUnary<SqrtOp>(node); }
LogicalResult importReciprocal(NodeContext &node) { return importUnary<ReciprocalOp>(node); }
LogicalResult importNeg(NodeContext &node) { return importUnary<NegOp>(node); }
LogicalResult importExp(NodeContext &node) { return importUnary<ExpOp>(node); }
LogicalResult importLog(NodeContext &node) { return importUnary<LogOp>(node); }
LogicalResult importTanh(NodeContext &node) { return importUnary<TanhOp>(node); }
LogicalResult importErf(NodeContext &node) { return importUnary<ErfOp>(node); }
LogicalResult importSin(NodeContext &node) { return importUnary<SinOp>(node); }
LogicalResult importCos(NodeContext &node) { return importUnary<CosOp>(node); }
LogicalResult importSigmoid(NodeContext &node) { return importUnary<SigmoidOp>(node); }
LogicalResult importRelu(NodeContext &node) { return importUnary<ReluOp>(node); }
LogicalResult importAbs(NodeContext &node) { return importUnary<AbsOp>(node); }
LogicalResult importSoftplus(NodeContext &node) { return importUnary<SoftplusOp>(node); }

// Mod's fmod attribute: 1 takes the dividend's sign (C's fmod), 0 (the default) the divisor's
// (Python's %), which ONNX defines for integers only.
LogicalResult importMod(NodeContext &node) {
  FailureOr<Value> lhs = node.requiredInput(0, "A");
  FailureOr<Value> rhs = node.requiredInput(1, "B");
  FailureOr<int64_t> fmod = node.intAttr("fmod", 0);
  if (failed(lhs) || failed(rhs) || failed(fmod))
    return failure();
  if (*fmod != 0 && *fmod != 1)
    return node.fail("attribute 'fmod' must be 0 or 1, got " + std::to_string(*fmod));
  if (*fmod == 0 && !isa<IntegerType>(NodeContext::typeOf(*lhs).getElementType()))
    return node.fail("Mod of floats needs fmod = 1 (ONNX defines no other float form)");
  return node.setOutput(
      node.createInferred1<ModOp>(*lhs, *rhs, node.builder().getBoolAttr(*fmod == 1)));
}

LogicalResult importGelu(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "X");
  FailureOr<std::string> approximate = node.stringAttr("approximate", "none");
  if (failed(x) || failed(approximate))
    return failure();
  return node.setOutput(
      node.createTyped1<GeluOp>(x->getType(), *x, node.builder().getStringAttr(*approximate)));
}

LogicalResult importMax(NodeContext &node) { return importVariadic<MaxOp>(node); }
LogicalResult importMin(NodeContext &node) { return importVariadic<MinOp>(node); }

LogicalResult importClip(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "input");
  if (failed(x))
    return failure();
  Type element = NodeContext::typeOf(*x).getElementType();
  Value bounds[2];
  for (unsigned i : {1u, 2u}) {
    if (node.hasInput(i)) {
      bounds[i - 1] = node.input(i);
      continue;
    }
    FailureOr<DenseElementsAttr> bound = clipBound(node, element, /*lower=*/i == 1);
    if (failed(bound))
      return failure();
    bounds[i - 1] = node.constant(*bound);
  }
  return node.setOutput(node.createInferred1<ClipOp>(*x, bounds[0], bounds[1]));
}

namespace {
// clip(alpha * x + beta, 0, 1): HardSigmoid, and HardSwish's gate (alpha 1/6, beta 0.5, as
// PyTorch's hardswish). Composed of mul, add and clip, whose gradients and sharding rules it
// takes.
FailureOr<Value> hardSigmoid(NodeContext &node, Value x, float alpha, float beta) {
  FailureOr<Value> scaled = node.createInferred1<MulOp>(x, node.scalarF32(alpha));
  if (failed(scaled))
    return failure();
  FailureOr<Value> shifted = node.createInferred1<AddOp>(*scaled, node.scalarF32(beta));
  if (failed(shifted))
    return failure();
  return node.createInferred1<ClipOp>(*shifted, node.scalarF32(0.0f), node.scalarF32(1.0f));
}
} // namespace

LogicalResult importHardSigmoid(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "X");
  FailureOr<float> alpha = node.floatAttr("alpha", 0.2f);
  FailureOr<float> beta = node.floatAttr("beta", 0.5f);
  if (failed(x) || failed(alpha) || failed(beta))
    return failure();
  if (!NodeContext::typeOf(*x).getElementType().isF32())
    return node.fail("input X must be float32");
  return node.setOutput(hardSigmoid(node, *x, *alpha, *beta));
}

LogicalResult importHardSwish(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "X");
  if (failed(x))
    return failure();
  if (!NodeContext::typeOf(*x).getElementType().isF32())
    return node.fail("input X must be float32");
  FailureOr<Value> gate = hardSigmoid(node, *x, 1.0f / 6.0f, 0.5f);
  if (failed(gate))
    return failure();
  return node.setOutput(node.createInferred1<MulOp>(*x, *gate));
}

LogicalResult importWhere(NodeContext &node) {
  FailureOr<Value> condition = node.requiredInput(0, "condition");
  FailureOr<Value> x = node.requiredInput(1, "X");
  FailureOr<Value> y = node.requiredInput(2, "Y");
  if (failed(condition) || failed(x) || failed(y))
    return failure();
  return node.setOutput(node.createInferred1<WhereOp>(*condition, *x, *y));
}

// Cast's `saturate` (opset 19) only affects float8 targets, which shardc rejects: ignored.
LogicalResult importCast(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "input");
  FailureOr<std::optional<int64_t>> to = node.optionalIntAttr("to");
  if (failed(x) || failed(to))
    return failure();
  if (!*to)
    return node.fail("attribute 'to' is required");
  Type target = elementTypeFor(*node.context(), **to);
  if (!target)
    return node.fail("cast to " + onnxTypeName(**to) +
                     " is not supported (shardc supports float32, int64, int32, bool)");
  return node.setOutput(node.createInferred1<CastOp>(*x, TypeAttr::get(target)));
}

} // namespace shardc::onnx_import
