//===- GraphBuilder.cpp -----------------------------------------------------------------===//
#include "frontends/onnx/GraphBuilder.h"

#include "frontends/onnx/SupportedOps.h"
#include "frontends/onnx/TensorDecoding.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Lowering/ConstantEvaluator.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <set>

using namespace mlir;

namespace shardc::onnx_import {

namespace {

std::string describeOnnxType(const onnx::TypeProto_Tensor &type) {
  std::string text = "tensor<";
  if (type.has_shape())
    for (const auto &dim : type.shape().dim())
      text += (dim.has_dim_value() ? std::to_string(dim.dim_value()) : std::string("?")) + "x";
  else
    text += "*x";
  return text + onnxTypeName(type.elem_type()) + ">";
}

// The ONNX name a location carries (NameLoc), if any.
std::string nameOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}

} // namespace

GraphBuilder::GraphBuilder(MLIRContext &ctx, ErrorReporter &errors, OnnxTypes declared)
    : ctx_(ctx), errors_(errors), declared_(std::move(declared)), diagnostics_(ctx),
      builder_(&ctx) {}

Location GraphBuilder::locationFor(llvm::StringRef name) {
  Location file = FileLineColLoc::get(&ctx_, errors_.modelPath(), 0, 0);
  return NameLoc::get(StringAttr::get(&ctx_, name), file);
}

LogicalResult GraphBuilder::define(llvm::StringRef name, Value value) {
  if (sequences_.count(name) || !values_.try_emplace(name, value).second)
    return failure();
  // A loop body's names take a new type each iteration when a carried value grows; only the
  // outermost graph's names are compared with libonnx's inference afterwards.
  if (scopes_.empty())
    types_[name] = cast<RankedTensorType>(value.getType());
  else
    scopes_.back().push_back(name.str());
  return success();
}

LogicalResult GraphBuilder::defineSequence(llvm::StringRef name, SmallVector<Value> elements) {
  if (values_.count(name) || !sequences_.try_emplace(name, std::move(elements)).second)
    return failure();
  if (!scopes_.empty())
    scopes_.back().push_back(name.str());
  return success();
}

void GraphBuilder::leaveScope() {
  for (const std::string &name : scopes_.back()) {
    values_.erase(name);
    sequences_.erase(name);
  }
  scopes_.pop_back();
}

FailureOr<RankedTensorType> GraphBuilder::inputType(const onnx::ValueInfoProto &input) {
  // applyInputShapes() has checked that the shape is present and static.
  const onnx::TypeProto_Tensor &tensor = input.type().tensor_type();
  Type element = elementTypeFor(ctx_, tensor.elem_type());
  if (!element)
    return errors_.fail("input " + quote(input.name()) + ": " +
                        unsupportedElementType(tensor.elem_type()));
  SmallVector<int64_t> dims;
  for (const auto &dim : tensor.shape().dim())
    dims.push_back(dim.dim_value());
  return RankedTensorType::get(dims, element);
}

LogicalResult GraphBuilder::collectArguments(const onnx::GraphProto &graph,
                                             const InitializerSet &initializers,
                                             std::vector<Argument> &arguments) {
  std::set<std::string> seen;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    // An initializer listed as an input (IR < 4 style) is a parameter, handled below.
    if (initializers.names.count(input.name()))
      continue;
    if (input.name().empty())
      return errors_.fail("a graph input has no name");
    if (!seen.insert(input.name()).second)
      return errors_.fail("input " + quote(input.name()) + " is declared twice");
    FailureOr<RankedTensorType> type = inputType(input);
    if (failed(type))
      return failure();
    arguments.push_back({input.name(), *type, graph::kInputAttr});
  }
  for (const ImportedInitializer &init : initializers.entries)
    if (init.isParameter)
      arguments.push_back({init.name, init.type, graph::kParamAttr, init.notTrainable});
  return success();
}

LogicalResult GraphBuilder::begin(const onnx::GraphProto &graph,
                                  const InitializerSet &initializers) {
  std::vector<Argument> arguments;
  if (failed(collectArguments(graph, initializers, arguments)))
    return failure();

  Location file = FileLineColLoc::get(&ctx_, errors_.modelPath(), 0, 0);
  module_ = ModuleOp::create(file);
  SmallVector<Type> types;
  for (const Argument &arg : arguments)
    types.push_back(arg.type);
  func_ = func::FuncOp::create(file, "forward", FunctionType::get(&ctx_, types, {}));
  module_->push_back(func_);
  Block *entry = func_.addEntryBlock();
  for (auto [i, arg] : llvm::enumerate(arguments)) {
    BlockArgument value = entry->getArgument(i);
    value.setLoc(locationFor(arg.name));
    func_.setArgAttr(i, arg.attrName, StringAttr::get(&ctx_, arg.name));
    if (!arg.notTrainable.empty())
      func_.setArgAttr(i, graph::kNotTrainableAttr, StringAttr::get(&ctx_, arg.notTrainable));
    (void)define(arg.name, value); // names are unique: inputs checked, initializers disjoint
  }

  builder_.setInsertionPointToEnd(entry);
  for (const ImportedInitializer &init : initializers.entries) {
    if (init.isParameter)
      continue;
    auto constant = builder_.create<graph::ConstantOp>(locationFor(init.name), init.value);
    (void)define(init.name, constant.getResult());
  }
  return success();
}

LogicalResult GraphBuilder::finish(const onnx::GraphProto &graph) {
  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Value value = lookup(output.name());
    std::string what = "graph output " + quote(output.name());
    if (!value && lookupSequence(output.name()))
      return errors_.fail(what + " is a sequence: shardc's outputs are tensors");
    if (!value)
      return errors_.fail(what + " is not produced by any node, input or initializer");
    std::string why;
    if (failed(checkOnnxType(output.name(), value, why)))
      return errors_.fail(what + ": " + why);
    results.push_back(value);
  }
  // The updated buffers follow the graph outputs.
  for (const BufferUpdate &update : bufferUpdates_)
    results.push_back(update.updated);
  Location file = FileLineColLoc::get(&ctx_, errors_.modelPath(), 0, 0);
  builder_.create<func::ReturnOp>(file, results);
  func_.setFunctionType(
      FunctionType::get(&ctx_, func_.getArgumentTypes(), ValueRange(results).getTypes()));
  for (int i = 0; i < graph.output_size(); ++i)
    func_.setResultAttr(i, graph::kOutputAttr, StringAttr::get(&ctx_, graph.output(i).name()));
  for (auto [i, update] : llvm::enumerate(bufferUpdates_))
    func_.setResultAttr(graph.output_size() + i, graph::kBufferAttr,
                        func_.getArgAttr(update.param.getArgNumber(), graph::kParamAttr));

  values_.clear();
  sequences_.clear();
  eraseDeadConstants();

  // Every op was verified when it was created; this catches what only the whole function
  // shows. Any failure here is an importer bug, reported at the op's node.
  if (failed(verify(*module_))) {
    std::string node = nameOf(diagnostics_.location());
    std::string message = diagnostics_.take();
    return errors_.fail((node.empty() ? std::string() : "node " + quote(node) + ": ") +
                        "the imported IR does not verify: " + message);
  }
  return success();
}

LogicalResult GraphBuilder::addBufferUpdate(BlockArgument param, Value updated,
                                            const std::string &why) {
  for (const BufferUpdate &update : bufferUpdates_)
    if (update.param == param)
      return failure();
  if (updateBuffers_)
    bufferUpdates_.push_back({param, updated});
  markNotTrainable(param, why);
  return success();
}

BlockArgument GraphBuilder::parameterOf(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &func_.getBody().front() ||
      !func_.getArgAttr(arg.getArgNumber(), graph::kParamAttr))
    return BlockArgument();
  return arg;
}

void GraphBuilder::markNotTrainable(BlockArgument param, const std::string &why) {
  func_.setArgAttr(param.getArgNumber(), graph::kNotTrainableAttr, StringAttr::get(&ctx_, why));
}

void GraphBuilder::eraseDeadConstants() {
  // Folding leaves the constants that fed folded ops (shape arithmetic) without users.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(func_.getBody().front())))
    if (isa<graph::ConstantOp>(op) && op.use_empty())
      op.erase();
}

LogicalResult GraphBuilder::checkInferredTypes(const onnx::GraphProto &graph,
                                               const OnnxTypes &inferred) {
  std::string why;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    for (const std::string &name : node.output()) {
      RankedTensorType type = name.empty() ? RankedTensorType() : types_.lookup(name);
      if (type && failed(checkType(inferred, name, type, why)))
        return errors_.fail("node " + quote(nodeDisplayName(node, i)) + " (" +
                            printable(node.op_type()) + "): output " + quote(name) + ": " + why +
                            " (importer bug)");
    }
  }
  for (const onnx::ValueInfoProto &output : graph.output())
    if (RankedTensorType type = types_.lookup(output.name());
        type && failed(checkType(inferred, output.name(), type, why)))
      return errors_.fail("graph output " + quote(output.name()) + ": " + why);
  return success();
}

LogicalResult GraphBuilder::checkType(const OnnxTypes &types, llvm::StringRef name,
                                      RankedTensorType ours, std::string &why) const {
  auto it = types.find(name.str());
  if (it == types.end())
    return success();
  std::string mismatch = "shardc computes " + describeType(ours) + " but ONNX gives ";
  if (!it->second.has_tensor_type()) {
    why = mismatch + "a non-tensor type";
    return failure();
  }
  const onnx::TypeProto_Tensor &theirs = it->second.tensor_type();
  bool same = true;
  if (theirs.elem_type() != onnx::TensorProto::UNDEFINED)
    same = elementTypeFor(ctx_, theirs.elem_type()) == ours.getElementType();
  if (theirs.has_shape()) {
    const auto &dims = theirs.shape().dim();
    same = same && dims.size() == ours.getRank();
    for (int i = 0; same && i < dims.size(); ++i)
      if (dims[i].has_dim_value() && dims[i].dim_value() != ours.getDimSize(i))
        same = false;
  }
  if (same)
    return success();
  why = mismatch + describeOnnxType(theirs);
  return failure();
}

std::string GraphBuilder::argumentName(BlockArgument arg) const {
  unsigned i = arg.getArgNumber();
  func::FuncOp func = func_; // the accessors are not const
  if (auto name = func.getArgAttrOfType<StringAttr>(i, graph::kInputAttr))
    return "graph input " + quote(name.getValue());
  if (auto name = func.getArgAttrOfType<StringAttr>(i, graph::kParamAttr))
    return "parameter " + quote(name.getValue());
  return "argument #" + std::to_string(i);
}

std::string GraphBuilder::describeDependency(Value value) const {
  // Walk the producers back to a function argument, or to an op whose operands are all
  // constant but that could not be evaluated (e.g. too large to fold).
  SmallVector<Value> worklist{value};
  llvm::SmallPtrSet<Operation *, 16> visited;
  Operation *unevaluated = nullptr;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v))
      return "it depends on " + argumentName(arg);
    Operation *op = v.getDefiningOp();
    if (!op || !visited.insert(op).second)
      continue;
    bool allConstant = true;
    for (Value operand : op->getOperands()) {
      if (!getConstantValue(operand))
        allConstant = false;
      worklist.push_back(operand);
    }
    if (allConstant && !unevaluated)
      unevaluated = op;
  }
  if (unevaluated) {
    std::string node = nameOf(unevaluated->getLoc());
    return "it is computed by " + (node.empty() ? std::string("an op") : "node " + quote(node)) +
           ", which shardc does not evaluate at compile time";
  }
  return "it is not computable at compile time";
}

} // namespace shardc::onnx_import
