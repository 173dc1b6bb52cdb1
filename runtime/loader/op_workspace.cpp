#include "runtime/loader/op_workspace.h"

#include "runtime/kernels/kernel.h"

namespace shardc::runtime {

namespace {

Tensor typeOf(const program::Buffer &buffer) {
  return typeOnlyTensor(buffer.dtype(),
                        std::vector<int64_t>(buffer.shape().begin(), buffer.shape().end()));
}

} // namespace

Status opWorkspaceBytes(const program::Program &program, int index, uint64_t *bytes) {
  const program::Op &op = program.ops(index);
  KernelArgs args;
  for (int buffer : op.inputs())
    args.inputs.push_back(buffer < 0 ? Tensor() : typeOf(program.buffers(buffer)));
  for (int buffer : op.outputs())
    args.outputs.push_back(typeOf(program.buffers(buffer)));
  args.attrs = &op.attrs();
  return cpuKernelWorkspaceBytes(op.kernel(), args, bytes);
}

} // namespace shardc::runtime
