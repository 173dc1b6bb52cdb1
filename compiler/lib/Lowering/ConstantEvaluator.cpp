//===- ConstantEvaluator.cpp - fold graph ops by running the runtime's CPU kernels ------===//
#include "shardc/Lowering/ConstantEvaluator.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Lowering/KernelMapping.h"
#include "shardc/Lowering/KernelWorkspace.h"
#include "shardc/Lowering/TensorBytes.h"

#include "runtime/kernels/kernel.h"
#include "runtime/support/aligned_buffer.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace shardc {

std::optional<DenseElementsAttr> getConstantValue(Value v) {
  DenseElementsAttr attr;
  if (v && matchPattern(v, m_Constant(&attr)))
    return attr;
  return std::nullopt;
}

namespace {

bool allResultsStatic(Operation *op) {
  for (Type t : op->getResultTypes()) {
    auto ranked = dyn_cast<RankedTensorType>(t);
    if (!ranked || !ranked.hasStaticShape())
      return false;
  }
  return true;
}

// Replaces every result of `op` with a value or a new constant, then erases `op`.
void replaceWithFoldResults(Operation *op, ArrayRef<OpFoldResult> results) {
  OpBuilder builder(op);
  for (auto [result, folded] : llvm::zip(op->getResults(), results)) {
    Value replacement = dyn_cast<Value>(folded);
    if (!replacement)
      replacement = builder.create<graph::ConstantOp>(op->getLoc(),
                                                      cast<ElementsAttr>(cast<Attribute>(folded)));
    result.replaceAllUsesWith(replacement);
  }
  op->erase();
}

// The op's dialect folder (shape, range, reshapes, identity, dropout...).
bool tryDialectFold(Operation *op) {
  SmallVector<Attribute> operands;
  for (Value v : op->getOperands()) {
    auto c = getConstantValue(v);
    operands.push_back(c ? Attribute(*c) : Attribute());
  }
  SmallVector<OpFoldResult> results;
  if (failed(op->fold(operands, results)) || results.size() != op->getNumResults())
    return false;
  // A folder that returns a non-constant attribute cannot become a graph.constant.
  for (OpFoldResult r : results)
    if (auto attr = dyn_cast<Attribute>(r); attr && !isa<ElementsAttr>(attr))
      return false;
  replaceWithFoldResults(op, results);
  return true;
}

runtime::Tensor viewOf(RankedTensorType type, std::vector<char> &bytes) {
  runtime::Tensor t;
  t.dtype = toProgramDType(type.getElementType());
  t.shape.assign(type.getShape().begin(), type.getShape().end());
  t.data = bytes.data();
  return t;
}

// Runs the op's runtime kernel on its constant operands.
int64_t runtimeBytes(Type type) {
  auto ranked = cast<RankedTensorType>(type);
  return ranked.getNumElements() * static_cast<int64_t>(runtimeElementSize(ranked.getElementType()));
}

LogicalResult evaluateWithKernel(Operation *op, bool &folded) {
  // Kernels work on dense copies: an operand that is small as an attribute but huge once
  // expanded (a splat from ConstantOfShape) must not be materialised, nor a huge result.
  int64_t outBytes = 0;
  for (Type t : op->getResultTypes())
    outBytes += runtimeBytes(t);
  if (outBytes > kMaxFoldedConstantBytes)
    return success();
  for (Type t : op->getOperandTypes())
    if (runtimeBytes(t) > kMaxFoldedConstantBytes)
      return success();
  FailureOr<KernelCall> call = mapToKernel(op);
  if (failed(call))
    return failure();
  runtime::KernelFn fn = runtime::findCpuKernel(call->kernel);
  if (!fn)
    return op->emitOpError("no CPU kernel '") << call->kernel << "' to evaluate it";

  // Keep every buffer alive until the kernel has run; 64 extra bytes make empty tensors
  // non-null so the kernel does not take them for absent operands.
  std::vector<std::vector<char>> storage;
  storage.reserve(call->inputs.size() + call->outputs.size());
  runtime::KernelArgs args;
  for (Value v : call->inputs) {
    if (!v) {
      args.inputs.emplace_back();
      continue;
    }
    storage.push_back(toRuntimeBytes(*getConstantValue(v)));
    storage.back().reserve(storage.back().size() + 64);
    args.inputs.push_back(viewOf(cast<RankedTensorType>(v.getType()), storage.back()));
  }
  for (Value v : call->outputs) {
    auto type = cast<RankedTensorType>(v.getType());
    storage.emplace_back(type.getNumElements() * runtimeElementSize(type.getElementType()));
    storage.back().reserve(storage.back().size() + 64);
    args.outputs.push_back(viewOf(type, storage.back()));
  }
  program::Op protoOp;
  for (auto &[name, attr] : call->attrs)
    (*protoOp.mutable_attrs())[name] = attr;
  args.attrs = &protoOp.attrs();
  // The kernel's temporaries, in a workspace of its own. Operands its size function rejects
  // are left for the kernel to report (it checks them before it takes any scratch).
  uint64_t workspaceBytes = 0;
  if (!kernelWorkspaceBytes(*call, &workspaceBytes).isOk())
    workspaceBytes = 0;
  runtime::AlignedBuffer workspace;
  runtime::Status status =
      runtime::AlignedBuffer::allocate(workspaceBytes, "workspace", &workspace);
  if (!status.isOk())
    return op->emitOpError("cannot be evaluated at compile time: ") << status.message();
  args.workspace = workspace.data();
  args.workspaceBytes = workspaceBytes;
  status = fn(args);
  if (!status.isOk())
    return op->emitOpError("cannot be evaluated at compile time: ") << status.message();

  SmallVector<OpFoldResult> results;
  size_t first = storage.size() - call->outputs.size();
  for (auto [i, v] : llvm::enumerate(call->outputs))
    results.push_back(fromRuntimeBytes(cast<RankedTensorType>(v.getType()), storage[first + i]));
  replaceWithFoldResults(op, results);
  folded = true;
  return success();
}

} // namespace

LogicalResult tryFoldToConstants(Operation *op, bool &folded) {
  folded = false;
  if (isa<graph::ConstantOp>(op) || op->getDialect() == nullptr ||
      !isa<graph::GraphDialect>(op->getDialect()))
    return success();
  // A collective's result depends on the other ranks, never on its operands alone.
  if (isa<graph::AllReduceOp, graph::ReduceScatterOp, graph::AllGatherOp, graph::AllToAllOp,
          graph::ShardSliceOp, graph::SendRecvOp>(op))
    return success();
  if (!allResultsStatic(op))
    return success();
  if (tryDialectFold(op)) {
    folded = true;
    return success();
  }
  for (Value v : op->getOperands())
    if (!getConstantValue(v))
      return success();
  return evaluateWithKernel(op, folded);
}

} // namespace shardc
