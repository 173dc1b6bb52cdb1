//===- SupportedOps.h - the ONNX operators shardc imports -------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_SUPPORTEDOPS_H
#define SHARDC_FRONTENDS_ONNX_SUPPORTEDOPS_H

#include "onnx/onnx_pb.h"

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <set>
#include <string>

namespace shardc::onnx_import {

class ErrorReporter;
class NodeContext;

struct OpInfo {
  llvm::StringLiteral type;
  // The first default-domain opset that defines the operator (13 when it predates 13).
  int64_t sinceOpset;
  // Input/output counts allowed by the operator's schemas in opsets 13-20, counting omitted
  // optional inputs/outputs that are written as empty names.
  int minInputs, maxInputs, minOutputs, maxOutputs;
  // Bit i: input i is read at compile time (shape operands such as Reshape's `shape`, and
  // Dropout's ratio/training_mode). Initializers used there become graph.constant.
  uint32_t compileTimeInputs;
  mlir::LogicalResult (*import)(NodeContext &node);
  // Bit i: input i may be an ONNX sequence (SequenceAt's `input_sequence`, Loop's carried
  // values). Elsewhere a sequence is refused naming the input.
  uint32_t sequenceInputs = 0;
};

// The table entry for a node, or nullptr when shardc does not import it (another domain, an
// unknown type, or an operator newer than the model's opset).
const OpInfo *findOp(const onnx::NodeProto &node, int64_t opset);

// Fails with ONE error listing every unsupported op type with its node count and a node
// name: "unsupported ops: Conv (2 nodes, e.g. 'conv1'), Hardmax (1 node, 'hm')".
mlir::LogicalResult checkAllOpsSupported(const onnx::GraphProto &graph, int64_t opset,
                                         ErrorReporter &errors);

// Names of the tensors consumed at a compile-time input position by any node.
std::set<std::string> compileTimeInputNames(const onnx::GraphProto &graph, int64_t opset);

// The node's name, or "OpType_N" (N: its index in the graph) when it has none.
std::string nodeDisplayName(const onnx::NodeProto &node, size_t index);

} // namespace shardc::onnx_import

#endif
