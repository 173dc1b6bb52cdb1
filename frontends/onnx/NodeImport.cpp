//===- NodeImport.cpp -------------------------------------------------------------------===//
#include "frontends/onnx/NodeImport.h"

#include "frontends/onnx/ErrorReporting.h"
#include "frontends/onnx/NodeContext.h"
#include "frontends/onnx/SupportedOps.h"

using namespace mlir;

namespace shardc::onnx_import {

LogicalResult importGraphNodes(GraphBuilder &graph, const onnx::GraphProto &proto, int64_t opset) {
  for (int i = 0; i < proto.node_size(); ++i) {
    const onnx::NodeProto &node = proto.node(i);
    // checkAllOpsSupported() has run, so every node has an entry.
    const OpInfo *info = findOp(node, opset);
    if (!info)
      return graph.errors().fail("node " + quote(nodeDisplayName(node, i)) + " is unsupported");
    NodeContext context(graph, node, *info, nodeDisplayName(node, i), opset);
    if (failed(context.prepare()) || failed(info->import(context))) {
      if (!graph.errors().hasError())
        (void)context.fail("cannot be imported");
      return failure();
    }
    if (!context.outputsSet())
      return context.fail("the importer bound no outputs (internal error)");
  }
  return success();
}

} // namespace shardc::onnx_import
