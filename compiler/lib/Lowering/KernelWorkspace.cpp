//===- KernelWorkspace.cpp --------------------------------------------------------------===//
#include "shardc/Lowering/KernelWorkspace.h"

#include "runtime/kernels/kernel.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace shardc {

namespace {

// A null Value is an absent optional operand.
runtime::Tensor typeOf(Value v) {
  if (!v)
    return runtime::Tensor();
  auto type = cast<RankedTensorType>(v.getType());
  return runtime::typeOnlyTensor(
      toProgramDType(type.getElementType()),
      std::vector<int64_t>(type.getShape().begin(), type.getShape().end()));
}

} // namespace

runtime::Status kernelWorkspaceBytes(const KernelCall &call, uint64_t *bytes) {
  runtime::KernelArgs args;
  for (Value v : call.inputs)
    args.inputs.push_back(typeOf(v));
  for (Value v : call.outputs)
    args.outputs.push_back(typeOf(v));
  // Kernels read attributes from a protobuf map; the call keeps them in a std::map.
  program::Op protoOp;
  for (auto &[name, attr] : call.attrs)
    (*protoOp.mutable_attrs())[name] = attr;
  args.attrs = &protoOp.attrs();
  return runtime::cpuKernelWorkspaceBytes(call.kernel, args, bytes);
}

} // namespace shardc
