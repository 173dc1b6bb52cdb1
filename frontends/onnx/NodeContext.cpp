//===- NodeContext.cpp ------------------------------------------------------------------===//
#include "frontends/onnx/NodeContext.h"

#include "frontends/onnx/ImportLimits.h"
#include "frontends/onnx/TensorDecoding.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Lowering/ConstantEvaluator.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace shardc::onnx_import {

NodeContext::NodeContext(GraphBuilder &graph, const onnx::NodeProto &node, const OpInfo &info,
                         std::string displayName, int64_t opset)
    : graph_(graph), node_(node), info_(info), name_(std::move(displayName)), opset_(opset),
      loc_(graph.locationFor(name_)) {}

LogicalResult NodeContext::fail(const llvm::Twine &message) {
  return graph_.errors().fail("node " + quote(name_) + " (" + info_.type + "): " + message);
}

LogicalResult NodeContext::failFromDiagnostics(llvm::StringRef fallback) {
  std::string message = graph_.diagnostics().take();
  return fail(message.empty() ? fallback.str() : message);
}

namespace {

std::string countRange(int lo, int hi) {
  if (lo == hi)
    return std::to_string(lo);
  if (hi >= (1 << 30))
    return "at least " + std::to_string(lo);
  return std::to_string(lo) + " to " + std::to_string(hi);
}

} // namespace

LogicalResult NodeContext::prepare() {
  if (node_.input_size() < info_.minInputs || node_.input_size() > info_.maxInputs)
    return fail("expects " + countRange(info_.minInputs, info_.maxInputs) + " inputs, got " +
                std::to_string(node_.input_size()));
  if (node_.output_size() < info_.minOutputs || node_.output_size() > info_.maxOutputs)
    return fail("expects " + countRange(info_.minOutputs, info_.maxOutputs) + " outputs, got " +
                std::to_string(node_.output_size()));
  for (const std::string &name : node_.input()) {
    const unsigned i = inputs_.size();
    inputs_.push_back(Value());
    sequenceInputs_.push_back(nullptr);
    if (name.empty())
      continue;
    if (const SmallVector<Value> *sequence = graph_.lookupSequence(name)) {
      if (i >= 32 || !(info_.sequenceInputs & (uint32_t(1) << i)))
        return fail("input " + quote(name) + " is a sequence, where " + info_.type +
                    " takes a tensor");
      sequenceInputs_.back() = sequence;
      continue;
    }
    Value value = graph_.lookup(name);
    if (!value)
      return fail("input " + quote(name) +
                  " is not a graph input, an initializer or an output of an earlier node");
    inputs_.back() = value;
  }
  return success();
}

FailureOr<ArrayRef<Value>> NodeContext::sequenceInput(unsigned i, llvm::StringRef name) {
  if (const SmallVector<Value> *sequence = sequenceAt(i))
    return ArrayRef<Value>(*sequence);
  if (!hasInput(i))
    return fail("input '" + name + "' (#" + std::to_string(i) + ") is missing");
  return fail("input '" + name + "' must be a sequence, not a tensor");
}

FailureOr<Value> NodeContext::requiredInput(unsigned i, llvm::StringRef name) {
  if (Value v = input(i))
    return v;
  return fail("input '" + name + "' (#" + std::to_string(i) + ") is missing");
}

//===--- Attributes ------------------------------------------------------------------===//

const onnx::AttributeProto *NodeContext::findAttr(llvm::StringRef name) const {
  for (const onnx::AttributeProto &attr : node_.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

namespace {

// Models written before IR 0.0.2 may leave `type` unset; the field that is set tells then.
bool hasType(const onnx::AttributeProto &attr, onnx::AttributeProto::AttributeType type,
             bool fieldSet) {
  return attr.type() == type || (attr.type() == onnx::AttributeProto::UNDEFINED && fieldSet);
}

} // namespace

FailureOr<int64_t> NodeContext::intAttr(llvm::StringRef name, int64_t defaultValue) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return defaultValue;
  if (!hasType(*attr, onnx::AttributeProto::INT, attr->has_i()))
    return fail("attribute '" + name + "' must be an int");
  return attr->i();
}

FailureOr<std::optional<int64_t>> NodeContext::optionalIntAttr(llvm::StringRef name) {
  if (!findAttr(name))
    return std::optional<int64_t>();
  FailureOr<int64_t> value = intAttr(name, 0);
  if (failed(value))
    return failure();
  return std::optional<int64_t>(*value);
}

FailureOr<float> NodeContext::floatAttr(llvm::StringRef name, float defaultValue) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return defaultValue;
  if (!hasType(*attr, onnx::AttributeProto::FLOAT, attr->has_f()))
    return fail("attribute '" + name + "' must be a float");
  return attr->f();
}

FailureOr<std::string> NodeContext::stringAttr(llvm::StringRef name, llvm::StringRef defaultValue) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return defaultValue.str();
  if (!hasType(*attr, onnx::AttributeProto::STRING, attr->has_s()))
    return fail("attribute '" + name + "' must be a string");
  return attr->s();
}

FailureOr<std::optional<SmallVector<int64_t>>> NodeContext::intsAttr(llvm::StringRef name) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return std::optional<SmallVector<int64_t>>();
  if (!hasType(*attr, onnx::AttributeProto::INTS, attr->ints_size() > 0))
    return fail("attribute '" + name + "' must be a list of ints");
  return std::optional<SmallVector<int64_t>>(
      SmallVector<int64_t>(attr->ints().begin(), attr->ints().end()));
}

//===--- Compile-time inputs ---------------------------------------------------------===//

FailureOr<DenseElementsAttr> NodeContext::constantInput(unsigned i, llvm::StringRef name) {
  FailureOr<Value> value = requiredInput(i, name);
  if (failed(value))
    return failure();
  if (std::optional<DenseElementsAttr> constant = getConstantValue(*value))
    return *constant;
  return fail("input '" + name + "' must be a compile-time constant (" +
              graph_.describeDependency(*value) + ")");
}

FailureOr<SmallVector<int64_t>> NodeContext::constantInts(unsigned i, llvm::StringRef name,
                                                          int64_t maxCount) {
  FailureOr<DenseElementsAttr> value = constantInput(i, name);
  if (failed(value))
    return failure();
  auto type = cast<RankedTensorType>(value->getType());
  Type element = type.getElementType();
  if (!element.isInteger(64) && !element.isInteger(32))
    return fail("input '" + name + "' must be an int64 or int32 tensor, got " + describeType(type));
  if (type.getRank() > 1)
    return fail("input '" + name + "' must be a 1-D tensor, got " + describeType(type));
  if (type.getNumElements() > maxCount)
    return fail("input '" + name + "' has " + std::to_string(type.getNumElements()) +
                " entries; at most " + std::to_string(maxCount) + " are allowed");
  SmallVector<int64_t> values;
  for (const APInt &v : value->getValues<APInt>())
    values.push_back(v.getSExtValue());
  return values;
}

FailureOr<int64_t> NodeContext::constantInt(unsigned i, llvm::StringRef name) {
  FailureOr<SmallVector<int64_t>> values = constantInts(i, name, 1);
  if (failed(values))
    return failure();
  if (values->size() != 1)
    return fail("input '" + name + "' must hold one value");
  return (*values)[0];
}

//===--- Axes ------------------------------------------------------------------------===//

FailureOr<int64_t> NodeContext::normalizeAxis(int64_t axis, int64_t rank, llvm::StringRef what) {
  if (axis < -rank || axis >= rank)
    return fail(what + " " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

FailureOr<SmallVector<int64_t>> NodeContext::normalizeAxes(llvm::ArrayRef<int64_t> axes,
                                                           int64_t rank, llvm::StringRef what) {
  SmallVector<int64_t> result;
  for (int64_t axis : axes) {
    FailureOr<int64_t> a = normalizeAxis(axis, rank, what);
    if (failed(a))
      return failure();
    result.push_back(*a);
  }
  llvm::sort(result);
  for (size_t i = 1; i < result.size(); ++i)
    if (result[i] == result[i - 1])
      return fail(what + " " + std::to_string(result[i]) + " is given twice");
  return result;
}

//===--- Creating ops ----------------------------------------------------------------===//

Type NodeContext::placeholderType() { return UnrankedTensorType::get(Float32Type::get(context())); }

Value NodeContext::constant(DenseElementsAttr value) {
  return builder().create<graph::ConstantOp>(loc_, value);
}

Value NodeContext::scalarF32(float value) {
  return constant(
      DenseElementsAttr::get(RankedTensorType::get({}, Float32Type::get(context())), value));
}

FailureOr<SmallVector<Value>> NodeContext::finish(Operation *op) {
  if (failed(verify(op))) {
    op->erase();
    return failFromDiagnostics("the op does not verify");
  }
  for (Type type : op->getResultTypes()) {
    auto ranked = cast<RankedTensorType>(type);
    std::string why;
    if (!ranked.hasStaticShape() || !checkedElementCount(ranked.getShape(), why)) {
      op->erase();
      return fail("result " + describeType(ranked) + " is not a valid static shape" +
                  (why.empty() ? "" : ": " + why));
    }
  }
  return fold(op);
}

FailureOr<SmallVector<Value>> NodeContext::fold(Operation *op) {
  SmallVector<Value> results(op->getResults());
  // tryFoldToConstants erases `op`; a temporary user learns what replaced its results.
  auto anchor = builder().create<UnrealizedConversionCastOp>(loc_, TypeRange(), results);
  bool folded = false;
  LogicalResult evaluated = tryFoldToConstants(op, folded);
  results.assign(anchor->operand_begin(), anchor->operand_end());
  anchor->erase();
  if (failed(evaluated))
    return failFromDiagnostics("cannot be evaluated at compile time");
  return results;
}

//===--- Outputs ---------------------------------------------------------------------===//

LogicalResult NodeContext::setOutputs(ValueRange values) {
  for (int i = 0; i < node_.output_size(); ++i) {
    const std::string &name = node_.output(i);
    if (name.empty())
      continue;
    if (static_cast<size_t>(i) >= values.size())
      return fail("output #" + std::to_string(i) + " (" + quote(name) +
                  ") is not supported by shardc");
    if (failed(setTensorOutput(i, values[i])))
      return failure();
  }
  outputsSet_ = true;
  return success();
}

LogicalResult NodeContext::setOutput(FailureOr<Value> value) {
  if (failed(value))
    return failure();
  return setOutputs(ValueRange(*value));
}

LogicalResult NodeContext::setSequenceOutput(unsigned i, SmallVector<Value> elements) {
  outputsSet_ = true;
  if (!hasOutput(i))
    return success();
  const std::string &name = node_.output(i);
  if (failed(graph_.defineSequence(name, std::move(elements))))
    return fail("output " + quote(name) + " is already defined");
  return success();
}

LogicalResult NodeContext::setTensorOutput(unsigned i, Value value) {
  outputsSet_ = true;
  if (!hasOutput(i))
    return success();
  const std::string &name = node_.output(i);
  std::string why;
  if (failed(graph_.checkOnnxType(name, value, why)))
    return fail("output " + quote(name) + ": " + why);
  if (failed(graph_.define(name, value)))
    return fail("output " + quote(name) + " is already defined");
  return success();
}

} // namespace shardc::onnx_import
