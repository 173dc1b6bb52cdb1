//===- BufferRoles.cpp ------------------------------------------------------------------===//
#include "llvm/ADT/StringRef.h"
#include "shardc/Lowering/BufferRoles.h"

#include "shardc/Autodiff/TrainStep.h"
#include "shardc/Dialect/Graph/GraphDialect.h"

#include "runtime/kernels/kernel_traits.h"

#include <string>
#include <vector>

using namespace mlir;

namespace shardc {

program::BufferRole argumentRole(func::FuncOp func, unsigned index) {
  if (func.getArgAttr(index, kStateAttr))
    return program::ROLE_OPTIMIZER_STATE;
  if (auto param = func.getArgAttrOfType<StringAttr>(index, graph::kParamAttr))
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (func.getResultAttrOfType<StringAttr>(i, graph::kBufferAttr) == param)
        return program::ROLE_BUFFER;
  if (func.getArgAttr(index, graph::kParamAttr))
    return program::ROLE_PARAMETER;
  return program::ROLE_INPUT;
}

std::optional<program::BufferRole> resultRole(func::FuncOp func, unsigned index) {
  if (func.getResultAttr(index, graph::kParamAttr))
    return program::ROLE_PARAMETER;
  if (func.getResultAttr(index, graph::kBufferAttr))
    return program::ROLE_BUFFER;
  if (func.getResultAttr(index, kStateAttr))
    return program::ROLE_OPTIMIZER_STATE;
  if (func.getResultAttr(index, kStepAttr))
    return program::ROLE_INPUT;
  return std::nullopt;
}

void markGradientBuffers(program::Program &program) {
  // The op that writes each buffer, to follow a clipped gradient back to its source.
  std::vector<int> producer(program.buffers_size(), -1);
  for (int i = 0; i < program.ops_size(); ++i)
    for (int buffer : program.ops(i).outputs())
      producer[buffer] = i;
  auto mark = [&](int buffer) {
    if (buffer >= 0 && program.buffers(buffer).region() == program::ARENA)
      program.mutable_buffers(buffer)->set_role(program::ROLE_GRADIENT);
  };
  // A gradient accumulated over microbatches (passes/microbatch/MicroBatches) is a chain of adds
  // named ".../microbatch_sum": the running sums and each microbatch's gradient are gradients.
  auto markAccumulated = [&](int buffer) {
    std::vector<int> pending{buffer};
    while (!pending.empty()) {
      int b = pending.back();
      pending.pop_back();
      mark(b);
      if (b < 0 || producer[b] < 0)
        continue;
      const program::Op &add = program.ops(producer[b]);
      llvm::StringRef name = add.name();
      if (add.kernel() == "add" && name.ends_with("/microbatch_sum"))
        pending.insert(pending.end(), add.inputs().begin(), add.inputs().end());
    }
  };
  for (const program::Op &op : program.ops()) {
    if (!runtime::kernelHasTrait(op.kernel(), runtime::kOptimizerUpdateKernel) ||
        op.inputs_size() < 2)
      continue;
    int grad = op.inputs(1);
    if (grad >= 0 && producer[grad] >= 0) {
      const program::Op &clip = program.ops(producer[grad]);
      if (runtime::kernelHasTrait(clip.kernel(), runtime::kGradientClipKernel) &&
          clip.inputs_size() > 0)
        markAccumulated(clip.inputs(0));
    }
    markAccumulated(grad);
  }
}

} // namespace shardc
