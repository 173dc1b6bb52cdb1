// Runs one rank's program: copies graph inputs into the arena, calls each op's kernel in
// program order on views into the arena and weights regions, copies graph outputs out.
// All planning was done by the compiler; the executor only follows the program.
#pragma once

#include "runtime/executor/host_tensor.h"
#include "runtime/kernels/kernel.h"
#include "runtime/memory/arena.h"
#include "runtime/program/program.pb.h"
#include "runtime/support/aligned_buffer.h"
#include "runtime/support/status.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace shardc::runtime {

class Executor {
public:
  // Builds an executor for `program`, which it copies. The program is validated again
  // (validateProgram: cheap, and it keeps hand-built programs from crashing the executor).
  // `weights` holds the WEIGHTS region; it may be null when the program has no weights.
  static Status create(const program::Program &program,
                       std::shared_ptr<const AlignedBuffer> weights,
                       std::unique_ptr<Executor> *out);

  // Checks one graph input against the program's binding: the name must be bound, dtype and
  // shape must match exactly ("input 'x': expected f32[2x3], got i64[2x3]").
  Status checkInput(const std::string &name, const HostTensor &tensor) const;

  // Runs the program once. `inputs` must hold exactly the program's graph inputs; `outputs` is
  // replaced by the graph outputs (tensors already in it are overwritten in place, reusing their
  // memory; entries that are not outputs are removed).
  // Kernel errors read "rank R, op 'NAME' (kernel K): cause".
  // Not reentrant: one run at a time per executor (runs share the arena).
  Status run(const std::map<std::string, HostTensor> &inputs,
             std::map<std::string, HostTensor> *outputs);

  const program::Program &program() const { return program_; }
  const Arena &arena() const { return arena_; }

private:
  // An op ready to call: its kernel and the arguments it is called with. `args` is refreshed
  // from the buffer views before every call (so a kernel that modified its arguments cannot
  // affect later runs) without reallocating: the vectors keep their capacity.
  struct PreparedOp {
    KernelFn kernel = nullptr;
    KernelArgs args;
  };

  Executor() = default;
  Status runOps();
  const program::Buffer &inputBuffer(const program::Binding &binding) const;

  program::Program program_;
  Arena arena_;
  std::vector<Tensor> bufferViews_; // one view per program buffer
  std::vector<PreparedOp> ops_;
  std::map<std::string, int> inputIndex_; // graph input name -> index in program_.inputs()
};

} // namespace shardc::runtime
