//===- ControlFlowOps.cpp - If with a compile-time-constant condition -------------------===//
//
// The exporter wraps shape-dependent Python branches in If nodes (a squeeze guarded by
// Equal(Shape(x)[1], 1), say). With static shapes their condition folds to a constant, so the
// branch it takes is imported in the node's place and the other one dropped; a condition that
// depends on the data is refused naming what it depends on.
//
//===-------------------------------------------------------------------------------------===//
#include "frontends/onnx/NodeContext.h"
#include "frontends/onnx/NodeImport.h"
#include "frontends/onnx/ops/OpImporters.h"

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

} // namespace shardc::onnx_import
