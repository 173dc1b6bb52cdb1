// The state a training run carries from step to step, and one step of the run.
//
// State = the trained parameters (initialised from the program's state_init bytes in the
// weights), their optimizer state (initialised to zeros, as PyTorch's optimizers do) and the
// step count (0). Step k feeds the state, the batch of step k and the lr of step k to the
// training-step program, and takes the loss and the updated state back from its outputs; the
// outputs are moved into the input map, never copied. The input tensors are allocated by
// create() (counted as the step inputs in the executor's MemoryTracker), the outputs by the
// first step: later steps allocate nothing.
#pragma once

#include "runtime/checkpoint/checkpoint.h"
#include "runtime/executor/executor.h"
#include "runtime/executor/host_tensor.h"
#include "runtime/support/aligned_buffer.h"
#include "runtime/support/status.h"
#include "runtime/training/batch_source.h"
#include "runtime/training/training_signature.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace shardc::runtime {

class TrainingLoop {
public:
  // Derives the signature of the executor's program and builds the initial state. `executor`
  // must outlive the loop; `weights` is the WEIGHTS region the program's state_init points into
  // (validated by validateProgram against weights_bytes; checked against its size here too).
  static Status create(Executor *executor, const AlignedBuffer *weights,
                       std::unique_ptr<TrainingLoop> *out);

  const TrainingSignature &signature() const { return signature_; }
  // Steps completed so far.
  int64_t step() const { return step_; }
  // The current value of a carried tensor (parameter, optimizer state, "step"); null if unknown.
  const HostTensor *value(const std::string &name) const;

  // The seed training-mode dropout draws its masks from (the run's --seed; 0 until set). A
  // no-op for a program without dropout.
  void setSeed(uint64_t seed);

  // Replaces the state by a checkpoint's. Its parameters and optimizer state must be exactly
  // the program's (same names, dtypes, shapes): a checkpoint of another model or optimizer is
  // an error naming the first difference.
  Status restore(const CheckpointContents &checkpoint);
  // Copies the state into `out` (params, optimizerState, step; the caller fills the rest).
  void snapshot(CheckpointContents *out) const;

  // Runs step step() + 1 on the batch `batches` gives for it, with learning rate `lr`.
  Status runStep(BatchSource *batches, float lr, float *loss);

private:
  TrainingLoop() = default;

  Executor *executor_ = nullptr;
  TrainingSignature signature_;
  // Every input of the next step: the carried state, the last batch and lr.
  std::map<std::string, HostTensor> inputs_;
  // The last step's outputs; the carried ones are moved out after each step.
  std::map<std::string, HostTensor> outputs_;
  int64_t step_ = 0;
};

} // namespace shardc::runtime
