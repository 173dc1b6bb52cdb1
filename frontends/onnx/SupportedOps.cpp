//===- SupportedOps.cpp - operator table and the unsupported-op report ------------------===//
#include "frontends/onnx/SupportedOps.h"

#include "frontends/onnx/ErrorReporting.h"
#include "frontends/onnx/ops/OpImporters.h"

#include "llvm/ADT/MapVector.h"

#include <map>

namespace shardc::onnx_import {

namespace {

constexpr int kMany = 1 << 30; // variadic

constexpr uint32_t bit(int i) { return uint32_t(1) << i; }

// Arities are those of the schemas in opsets 13-20; where a later opset added an input (Reduce
// axes, Split num_outputs is an attribute) the wider range is listed and the importer checks
// the form its opset allows.
const OpInfo kOps[] = {
    // Elementwise
    {"Add", 13, 2, 2, 1, 1, 0, importAdd},
    {"Sub", 13, 2, 2, 1, 1, 0, importSub},
    {"Mul", 13, 2, 2, 1, 1, 0, importMul},
    {"Div", 13, 2, 2, 1, 1, 0, importDiv},
    {"Pow", 13, 2, 2, 1, 1, 0, importPow},
    {"Equal", 13, 2, 2, 1, 1, 0, importEqual},
    {"Less", 13, 2, 2, 1, 1, 0, importLess},
    {"Greater", 13, 2, 2, 1, 1, 0, importGreater},
    {"And", 13, 2, 2, 1, 1, 0, importAnd},
    {"Or", 13, 2, 2, 1, 1, 0, importOr},
    {"Not", 13, 1, 1, 1, 1, 0, importNot},
    {"Sqrt", 13, 1, 1, 1, 1, 0, importSqrt},
    {"Reciprocal", 13, 1, 1, 1, 1, 0, importReciprocal},
    {"Neg", 13, 1, 1, 1, 1, 0, importNeg},
    {"Exp", 13, 1, 1, 1, 1, 0, importExp},
    {"Log", 13, 1, 1, 1, 1, 0, importLog},
    {"Tanh", 13, 1, 1, 1, 1, 0, importTanh},
    {"Erf", 13, 1, 1, 1, 1, 0, importErf},
    {"Sin", 13, 1, 1, 1, 1, 0, importSin},
    {"Cos", 13, 1, 1, 1, 1, 0, importCos},
    {"Sigmoid", 13, 1, 1, 1, 1, 0, importSigmoid},
    {"Softplus", 13, 1, 1, 1, 1, 0, importSoftplus},
    {"Mod", 13, 2, 2, 1, 1, 0, importMod},
    {"Relu", 13, 1, 1, 1, 1, 0, importRelu},
    {"Abs", 13, 1, 1, 1, 1, 0, importAbs},
    {"Gelu", 20, 1, 1, 1, 1, 0, importGelu},
    {"Max", 13, 1, kMany, 1, 1, 0, importMax},
    {"Min", 13, 1, kMany, 1, 1, 0, importMin},
    {"Clip", 13, 1, 3, 1, 1, 0, importClip},
    {"Where", 13, 3, 3, 1, 1, 0, importWhere},
    {"HardSigmoid", 13, 1, 1, 1, 1, 0, importHardSigmoid},
    {"HardSwish", 14, 1, 1, 1, 1, 0, importHardSwish},
    {"CumSum", 14, 2, 2, 1, 1, bit(1), importCumSum},
    {"OneHot", 11, 3, 3, 1, 1, bit(1) | bit(2), importOneHot},
    {"Cast", 13, 1, 1, 1, 1, 0, importCast},
    // Linear algebra, normalisation, softmax
    {"MatMul", 13, 2, 2, 1, 1, 0, importMatMul},
    {"Gemm", 13, 2, 3, 1, 1, 0, importGemm},
    {"LayerNormalization", 17, 2, 3, 1, 3, 0, importLayerNormalization},
    {"Softmax", 13, 1, 1, 1, 1, 0, importSoftmax},
    {"LogSoftmax", 13, 1, 1, 1, 1, 0, importLogSoftmax},
    // Convolution, pooling, batch normalisation
    {"Conv", 13, 2, 3, 1, 1, 0, importConv},
    {"MaxPool", 13, 1, 1, 1, 2, 0, importMaxPool},
    {"AveragePool", 13, 1, 1, 1, 1, 0, importAveragePool},
    {"GlobalAveragePool", 13, 1, 1, 1, 1, 0, importGlobalAveragePool},
    {"GlobalMaxPool", 13, 1, 1, 1, 1, 0, importGlobalMaxPool},
    {"BatchNormalization", 13, 5, 5, 1, 5, 0, importBatchNormalization},
    {"InstanceNormalization", 13, 3, 3, 1, 1, 0, importInstanceNormalization},
    // Reductions (axes: an attribute or input 1, depending on op and opset)
    {"ReduceMean", 13, 1, 2, 1, 1, bit(1), importReduceMean},
    {"ReduceSum", 13, 1, 2, 1, 1, bit(1), importReduceSum},
    {"ReduceMax", 13, 1, 2, 1, 1, bit(1), importReduceMax},
    {"ReduceMin", 13, 1, 2, 1, 1, bit(1), importReduceMin},
    {"ReduceSumSquare", 13, 1, 2, 1, 1, bit(1), importReduceSumSquare},
    {"ReduceL1", 13, 1, 2, 1, 1, bit(1), importReduceL1},
    {"ReduceL2", 13, 1, 2, 1, 1, bit(1), importReduceL2},
    {"ReduceLogSum", 13, 1, 2, 1, 1, bit(1), importReduceLogSum},
    {"ReduceLogSumExp", 13, 1, 2, 1, 1, bit(1), importReduceLogSumExp},
    {"ArgMax", 13, 1, 1, 1, 1, 0, importArgMax},
    // Shapes
    {"Reshape", 13, 2, 2, 1, 1, bit(1), importReshape},
    {"Unsqueeze", 13, 2, 2, 1, 1, bit(1), importUnsqueeze},
    {"Squeeze", 13, 1, 2, 1, 1, bit(1), importSqueeze},
    {"Flatten", 13, 1, 1, 1, 1, 0, importFlatten},
    {"Expand", 13, 2, 2, 1, 1, bit(1), importExpand},
    {"Tile", 13, 2, 2, 1, 1, bit(1), importTile},
    {"Shape", 13, 1, 1, 1, 1, 0, importShape},
    {"ConstantOfShape", 13, 1, 1, 1, 1, bit(0), importConstantOfShape},
    {"Range", 13, 3, 3, 1, 1, bit(0) | bit(1) | bit(2), importRange},
    // Data movement
    {"Transpose", 13, 1, 1, 1, 1, 0, importTranspose},
    {"Concat", 13, 1, kMany, 1, 1, 0, importConcat},
    {"Split", 13, 1, 2, 1, kMany, bit(1), importSplit},
    {"Slice", 13, 3, 5, 1, 1, bit(1) | bit(2) | bit(3) | bit(4), importSlice},
    {"Pad", 13, 2, 4, 1, 1, bit(1) | bit(2) | bit(3), importPad},
    {"Gather", 13, 2, 2, 1, 1, 0, importGather},
    {"GatherElements", 13, 2, 2, 1, 1, 0, importGatherElements},
    {"TopK", 11, 2, 2, 2, 2, bit(1), importTopK},
    {"Trilu", 14, 1, 2, 1, 1, bit(1), importTrilu},
    {"ScatterND", 13, 3, 3, 1, 1, 0, importScatterND},
    {"ScatterElements", 13, 3, 3, 1, 1, 0, importScatterElements},
    {"EyeLike", 13, 1, 1, 1, 1, 0, importEyeLike},
    // Losses and the rest
    {"SoftmaxCrossEntropyLoss", 13, 2, 3, 1, 2, 0, importSoftmaxCrossEntropyLoss},
    {"NegativeLogLikelihoodLoss", 13, 2, 3, 1, 1, 0, importNegativeLogLikelihoodLoss},
    {"Dropout", 13, 1, 3, 1, 2, bit(1) | bit(2), importDropout},
    {"Identity", 13, 1, 1, 1, 1, 0, importIdentity},
    // Control flow: a constant condition is resolved at import
    {"If", 13, 1, 1, 1, kMany, bit(0), importIf},
    // Loop: unrolled at import; its trip count and condition must be compile-time constants.
    // Every input after them is a loop-carried value, a tensor or a sequence.
    {"Loop", 13, 2, kMany, 1, kMany, bit(0) | bit(1), importLoop, ~(bit(0) | bit(1))},
    // Sequences: lists of tensors resolved while importing (SequenceOps.cpp)
    {"SequenceEmpty", 13, 0, 0, 1, 1, 0, importSequenceEmpty},
    {"SequenceConstruct", 13, 1, kMany, 1, 1, 0, importSequenceConstruct},
    {"SplitToSequence", 13, 1, 2, 1, 1, bit(1), importSplitToSequence},
    {"SequenceAt", 13, 2, 2, 1, 1, bit(1), importSequenceAt, bit(0)},
    {"SequenceInsert", 13, 2, 3, 1, 1, bit(2), importSequenceInsert, bit(0)},
    {"SequenceErase", 13, 1, 2, 1, 1, bit(1), importSequenceErase, bit(0)},
    {"SequenceLength", 13, 1, 1, 1, 1, 0, importSequenceLength, bit(0)},
    {"ConcatFromSequence", 13, 1, 1, 1, 1, 0, importConcatFromSequence, bit(0)},
    {"Constant", 13, 0, 0, 1, 1, 0, importConstant},
};

bool isDefaultDomain(llvm::StringRef domain) { return domain.empty() || domain == "ai.onnx"; }

// Every node of `graph` and of the graphs its nodes hold as attributes (If's branches), with
// its index in its own graph. Nesting is bounded, so a hostile model cannot exhaust the stack.
template <typename Fn> void forEachNode(const onnx::GraphProto &graph, Fn fn, int depth = 0) {
  if (depth > 16)
    return;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    fn(node, i);
    for (const onnx::AttributeProto &attr : node.attribute())
      if (attr.type() == onnx::AttributeProto::GRAPH && attr.has_g())
        forEachNode(attr.g(), fn, depth + 1);
  }
}

const OpInfo *findByType(llvm::StringRef type) {
  for (const OpInfo &op : kOps)
    if (op.type == type)
      return &op;
  return nullptr;
}

struct UnsupportedType {
  size_t count = 0;
  std::string exampleNode;
  std::string note; // why, when the type exists but not at this opset
};

std::string describe(llvm::StringRef key, const UnsupportedType &u) {
  std::string text = key.str() + " (" + std::to_string(u.count) +
                     (u.count == 1 ? " node, " : " nodes, e.g. ") + quote(u.exampleNode);
  if (!u.note.empty())
    text += "; " + u.note;
  return text + ")";
}

} // namespace

const OpInfo *findOp(const onnx::NodeProto &node, int64_t opset) {
  if (!isDefaultDomain(node.domain()))
    return nullptr;
  const OpInfo *op = findByType(node.op_type());
  return op && op->sinceOpset <= opset ? op : nullptr;
}

std::string nodeDisplayName(const onnx::NodeProto &node, size_t index) {
  if (!node.name().empty())
    return node.name();
  return (node.op_type().empty() ? std::string("node") : node.op_type()) + "_" +
         std::to_string(index);
}

mlir::LogicalResult checkAllOpsSupported(const onnx::GraphProto &graph, int64_t opset,
                                         ErrorReporter &errors) {
  // Keyed by the shown type, in order of first appearance.
  llvm::MapVector<std::string, UnsupportedType, std::map<std::string, unsigned>> unsupported;
  forEachNode(graph, [&](const onnx::NodeProto &node, int i) {
    if (findOp(node, opset))
      return;
    std::string key = printable(node.op_type().empty() ? "''" : node.op_type());
    if (!isDefaultDomain(node.domain()))
      key = printable(node.domain()) + "." + key;
    UnsupportedType &entry = unsupported[key];
    if (entry.count++ == 0) {
      entry.exampleNode = nodeDisplayName(node, i);
      const OpInfo *known = isDefaultDomain(node.domain()) ? findByType(node.op_type()) : nullptr;
      if (known)
        entry.note = "needs opset " + std::to_string(known->sinceOpset) + ", the model imports " +
                     std::to_string(opset);
    }
  });
  if (unsupported.empty())
    return mlir::success();
  // A real model has a handful of unsupported types; keep a garbage one's line readable.
  constexpr size_t kMaxListed = 24;
  auto entries = unsupported.takeVector();
  std::string list;
  for (size_t i = 0; i < entries.size() && i < kMaxListed; ++i)
    list += (i ? ", " : "") + describe(entries[i].first, entries[i].second);
  if (entries.size() > kMaxListed)
    list += " and " + std::to_string(entries.size() - kMaxListed) + " more op types";
  return errors.fail("unsupported ops: " + list);
}

std::set<std::string> compileTimeInputNames(const onnx::GraphProto &graph, int64_t opset) {
  std::set<std::string> names;
  forEachNode(graph, [&](const onnx::NodeProto &node, int) {
    const OpInfo *op = findOp(node, opset);
    if (!op)
      return;
    for (int i = 0; i < node.input_size() && i < 32; ++i)
      if ((op->compileTimeInputs & bit(i)) && !node.input(i).empty())
        names.insert(node.input(i));
  });
  return names;
}

} // namespace shardc::onnx_import
