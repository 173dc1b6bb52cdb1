//===- NodeImport.h - importing a graph's nodes, in order -------------------------------===//
//
// The model's graph and, through If (ops/ControlFlowOps.cpp), the branch its constant
// condition takes: each node through its importer (SupportedOps' table) into `graph`'s @forward.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_NODEIMPORT_H
#define SHARDC_FRONTENDS_ONNX_NODEIMPORT_H

#include "frontends/onnx/GraphBuilder.h"

#include "onnx/onnx_pb.h"

#include "mlir/Support/LogicalResult.h"

namespace shardc::onnx_import {

// checkAllOpsSupported() must have accepted `proto` (it looks into If branches too).
mlir::LogicalResult importGraphNodes(GraphBuilder &graph, const onnx::GraphProto &proto,
                                     int64_t opset);

} // namespace shardc::onnx_import

#endif
