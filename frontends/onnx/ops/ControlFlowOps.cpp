//===- ControlFlowOps.cpp - If and Loop resolved at import ------------------------------===//
//
// The exporter wraps shape-dependent Python branches in If nodes (a squeeze guarded by
// Equal(Shape(x)[1], 1), say). With static shapes their condition folds to a constant, so the
// branch it takes is imported in the node's place and the other one dropped; a condition that
// depends on the data is refused naming what it depends on.
//
// It writes Python loops over a dynamic length (torch.repeat_interleave over a sequence, say)
// as Loop nodes. With static shapes their trip count folds to a constant too, so the body is
// imported once per iteration, the iteration number a constant each time: the step has no
// control flow left, and autodiff, sharding and remat see plain ops. A trip count or a
// condition that depends on the data is refused naming what it depends on.
//
//===-------------------------------------------------------------------------------------===//
#include "frontends/onnx/ImportLimits.h"
#include "frontends/onnx/NodeContext.h"
#include "frontends/onnx/NodeImport.h"
#include "frontends/onnx/ops/OpImporters.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Lowering/ConstantEvaluator.h"

using namespace mlir;

namespace shardc::onnx_import {

LogicalResult importIf(NodeContext &node) {
  FailureOr<DenseElementsAttr> cond = node.constantInput(0, "cond");
  if (failed(cond))
    return failure();
  if (cond->getNumElements() != 1 || !cond->getElementType().isInteger(1))
    return node.fail("cond must be a single bool");
  const bool taken = *cond->getValues<bool>().begin();
  const char *name = taken ? "then_branch" : "else_branch";
  const onnx::AttributeProto *branch = node.findAttr(name);
  if (!branch || branch->type() != onnx::AttributeProto::GRAPH || !branch->has_g())
    return node.fail(std::string("attribute '") + name + "' must be a graph");
  const onnx::GraphProto &graph = branch->g();
  if (graph.initializer_size() > 0 || graph.sparse_initializer_size() > 0)
    return node.fail(std::string(name) + " has initializers of its own, which are not supported");
  if (graph.output_size() != static_cast<int>(node.numOutputs()))
    return node.fail(std::string(name) + " has " + std::to_string(graph.output_size()) +
                     " outputs, the node " + std::to_string(node.numOutputs()));
  GraphBuilder &builder = node.graph();
  // Bounded: a model of nested Ifs must not exhaust the stack.
  if (builder.branchDepth() >= 16)
    return node.fail("If branches nested more than 16 deep are not supported");
  builder.enterBranch();
  LogicalResult imported = importGraphNodes(builder, graph, node.opset());
  builder.leaveBranch();
  if (failed(imported))
    return failure();
  SmallVector<Value> outputs;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Value value = builder.lookup(output.name());
    if (!value)
      return node.fail(std::string(name) + " output '" + output.name() +
                       "' is not produced by the branch or the graph around it");
    outputs.push_back(value);
  }
  return node.setOutputs(outputs);
}

namespace {

// A loop-carried value: a tensor, or a sequence of tensors.
struct Carried {
  Value tensor;
  SmallVector<Value> sequence;
  bool isSequence = false;
};

LogicalResult bindCarried(GraphBuilder &builder, const std::string &name, const Carried &value) {
  return value.isSequence ? builder.defineSequence(name, value.sequence)
                          : builder.define(name, value.tensor);
}

// The value a body output names, looked up in the body's scope (or the graphs around it).
FailureOr<Carried> bodyOutput(NodeContext &node, const std::string &name) {
  GraphBuilder &builder = node.graph();
  Carried value;
  if (const SmallVector<Value> *sequence = builder.lookupSequence(name)) {
    value.sequence = *sequence;
    value.isSequence = true;
    return value;
  }
  value.tensor = builder.lookup(name);
  if (!value.tensor)
    return node.fail("body output " + quote(name) +
                     " is not produced by the body or the graph around it");
  return value;
}

// A bool scalar's value, or nullopt when it is not a compile-time constant.
std::optional<bool> constantBool(Value value) {
  std::optional<DenseElementsAttr> constant = getConstantValue(value);
  if (!constant || constant->getNumElements() != 1 || !constant->getElementType().isInteger(1))
    return std::nullopt;
  return *constant->getValues<bool>().begin();
}

} // namespace

// Loop(M, cond, v_initial...) with body(iteration_num, cond_in, v_in...) -> (cond_out, v_out...,
// scan_out...): the final carried values, then each scan output stacked along a new axis 0.
LogicalResult importLoop(NodeContext &node) {
  const onnx::AttributeProto *body = node.findAttr("body");
  if (!body || body->type() != onnx::AttributeProto::GRAPH || !body->has_g())
    return node.fail("attribute 'body' must be a graph");
  const onnx::GraphProto &graph = body->g();
  if (graph.initializer_size() > 0 || graph.sparse_initializer_size() > 0)
    return node.fail("the body has initializers of its own, which are not supported");
  const int carriedCount = static_cast<int>(node.numInputs()) - 2;
  if (graph.input_size() != carriedCount + 2)
    return node.fail("the body has " + std::to_string(graph.input_size()) + " inputs, the node " +
                     std::to_string(carriedCount) + " loop-carried values (it needs 2 more)");
  const int scanCount = graph.output_size() - 1 - carriedCount;
  if (scanCount < 0 || static_cast<int>(node.numOutputs()) > carriedCount + scanCount)
    return node.fail("the body has " + std::to_string(graph.output_size()) +
                     " outputs, which do not match the node's " +
                     std::to_string(node.numOutputs()) + " outputs and " +
                     std::to_string(carriedCount) + " loop-carried values");

  // The trip count bounds the unrolling; without one, the condition must end the loop.
  std::optional<int64_t> tripCount;
  if (node.hasInput(0)) {
    FailureOr<int64_t> m = node.constantInt(0, "M");
    if (failed(m))
      return failure();
    if (*m < 0)
      return node.fail("the trip count is negative (" + std::to_string(*m) + ")");
    tripCount = *m;
  }
  bool running = true;
  if (node.hasInput(1)) {
    FailureOr<DenseElementsAttr> cond = node.constantInput(1, "cond");
    if (failed(cond))
      return failure();
    if (cond->getNumElements() != 1 || !cond->getElementType().isInteger(1))
      return node.fail("cond must be a single bool");
    running = *cond->getValues<bool>().begin();
  }
  if (tripCount && *tripCount > kMaxLoopIterations)
    return node.fail("a trip count of " + std::to_string(*tripCount) +
                     " is more than shardc unrolls (" + std::to_string(kMaxLoopIterations) + ")");
  const int64_t limit = tripCount ? *tripCount : kMaxLoopIterations;

  std::vector<Carried> carried(carriedCount);
  for (int k = 0; k < carriedCount; ++k) {
    if (const SmallVector<Value> *sequence = node.sequenceAt(k + 2)) {
      carried[k].sequence = *sequence;
      carried[k].isSequence = true;
    } else {
      FailureOr<Value> value = node.requiredInput(k + 2, "v_initial");
      if (failed(value))
        return failure();
      carried[k].tensor = *value;
    }
  }
  std::vector<SmallVector<Value>> scans(scanCount);

  GraphBuilder &builder = node.graph();
  if (builder.branchDepth() >= 16)
    return node.fail("Loop and If bodies nested more than 16 deep are not supported");
  OpBuilder &b = node.builder();
  auto scalarType = [&](Type element) { return RankedTensorType::get({}, element); };
  int64_t iteration = 0;
  for (; running && iteration < limit; ++iteration) {
    builder.unrolledNodes() += graph.node_size();
    if (builder.unrolledNodes() > kMaxUnrolledNodes)
      return node.fail("unrolling its loops would import more than " +
                       std::to_string(kMaxUnrolledNodes) + " nodes");
    builder.enterBranch();
    builder.enterScope();
    auto leave = [&] {
      builder.leaveScope();
      builder.leaveBranch();
    };
    Value index = node.constant(DenseElementsAttr::get(scalarType(b.getI64Type()), iteration));
    Value condIn = node.constant(DenseElementsAttr::get(scalarType(b.getI1Type()), true));
    bool bound = succeeded(builder.define(graph.input(0).name(), index)) &&
                 succeeded(builder.define(graph.input(1).name(), condIn));
    for (int k = 0; bound && k < carriedCount; ++k)
      bound = succeeded(bindCarried(builder, graph.input(k + 2).name(), carried[k]));
    if (!bound) {
      leave();
      return node.fail("the body's input names are not unique in the model");
    }
    if (failed(importGraphNodes(builder, graph, node.opset()))) {
      leave();
      return failure();
    }
    FailureOr<Carried> condOut = bodyOutput(node, graph.output(0).name());
    std::vector<Carried> next(carriedCount);
    bool ok = succeeded(condOut);
    for (int k = 0; ok && k < carriedCount; ++k) {
      FailureOr<Carried> value = bodyOutput(node, graph.output(k + 1).name());
      if ((ok = succeeded(value)))
        next[k] = std::move(*value);
    }
    for (int s = 0; ok && s < scanCount; ++s) {
      FailureOr<Carried> value = bodyOutput(node, graph.output(1 + carriedCount + s).name());
      if (succeeded(value) && value->isSequence)
        ok = failed(node.fail("scan output " + quote(graph.output(1 + carriedCount + s).name()) +
                              " is a sequence, which ONNX does not allow"));
      else if ((ok = succeeded(value)))
        scans[s].push_back(value->tensor);
    }
    leave();
    if (!ok)
      return failure();
    std::optional<bool> keepGoing = condOut->isSequence ? std::nullopt
                                                         : constantBool(condOut->tensor);
    if (!keepGoing)
      return node.fail("the body's condition must be a compile-time constant (" +
                       (condOut->isSequence ? std::string("it is a sequence")
                                            : builder.describeDependency(condOut->tensor)) +
                       ")");
    running = *keepGoing;
    carried = std::move(next);
  }
  if (running && !tripCount)
    return node.fail("the loop has no trip count, and its condition does not end it within " +
                     std::to_string(kMaxLoopIterations) + " iterations");

  for (int k = 0; k < carriedCount && k < static_cast<int>(node.numOutputs()); ++k) {
    LogicalResult bound = carried[k].isSequence
                              ? node.setSequenceOutput(k, carried[k].sequence)
                              : node.setTensorOutput(k, carried[k].tensor);
    if (failed(bound))
      return failure();
  }
  for (int s = 0; s < scanCount && carriedCount + s < static_cast<int>(node.numOutputs()); ++s) {
    if (!node.hasOutput(carriedCount + s))
      continue;
    if (scans[s].empty())
      return node.fail("scan output " + quote(node.proto().output(carriedCount + s)) +
                       " of a loop that runs no iteration has no shape shardc can give it");
    // Stacked along a new axis 0, one row per iteration, as ONNX's scan outputs are.
    FailureOr<Value> stacked = stackTensors(node, scans[s], 0);
    if (failed(stacked) || failed(node.setTensorOutput(carriedCount + s, *stacked)))
      return failure();
  }
  return success();
}

} // namespace shardc::onnx_import
