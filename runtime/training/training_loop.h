// The state a training run carries from step to step, and one step of the run.
//
// State = the trained parameters (initialised from the program's state_init bytes, which the
// bundle's weights file holds after the WEIGHTS region), their optimizer state (initialised to
// zeros, as PyTorch's optimizers do) and the step count (0). Step k feeds the state, the batch
// of step k and the lr of step k to the training-step program, and takes the loss and the
// updated state back from its outputs; the outputs are moved into the input map, never
// copied. The input tensors are allocated by create() (counted as the step inputs in the
// executor's MemoryTracker), the outputs by the first step: later steps allocate nothing.
//
// One of several data-parallel ranks: sharded parameters and optimizer state hold this rank's
// shard (runtime/common/sharded_tensor.h); a sharded parameter's state_init bytes are this
// rank's part of it, the rest of the shard starts as zeros. Checkpoints hold full tensors
// whatever the number of ranks: restore() slices them, consolidatedSnapshot() gathers them.
#pragma once

#include "runtime/checkpoint/checkpoint.h"
#include "runtime/executor/executor.h"
#include "runtime/executor/host_tensor.h"
#include "runtime/support/aligned_buffer.h"
#include "runtime/support/status.h"
#include "runtime/training/batch_source.h"
#include "runtime/training/training_signature.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace shardc::runtime {

// Reads the bytes a StateInit names (init.size_bytes() of them, from init.offset() of the
// bundle's weights file: readInitialValue in runtime/loader/bundle.h) into `dst`.
using InitialValueReader = std::function<Status(const program::StateInit &init, uint8_t *dst)>;

// Whether a checkpoint's step (updates applied) and data position (steps run) can be resumed
// from: what TrainingLoop::restore checks, for callers that check before building the loop.
Status checkResumePosition(const CheckpointContents &checkpoint);

class TrainingLoop {
public:
  // Derives the signature of the executor's program and builds the initial state. `executor`
  // must outlive the loop; `readInitialValue` supplies each state_init's bytes, read straight
  // into the parameter's input tensor (they are not kept anywhere else).
  static Status create(Executor *executor, const InitialValueReader &readInitialValue,
                       std::unique_ptr<TrainingLoop> *out);

  const TrainingSignature &signature() const { return signature_; }
  // Steps completed so far (their batches used), and those of them whose update was skipped.
  int64_t step() const { return step_; }
  int64_t skipped() const { return skipped_; }
  // With dynamic loss scaling (outputs "loss_scale" and "loss_scale_overflow"): the scale the
  // last step used and whether its gradients overflowed; false when the program has none.
  bool lastLossScale(float *scale, bool *overflow) const;
  // The current value of a carried tensor (parameter, optimizer state, "step"); null if unknown.
  // This rank's shard for a sharded tensor. State the program updates in place lives in the
  // executor's arena: this is a copy of it, made on demand outside the program's memory (no
  // MemoryScope) and valid until the next call for the same name; null too when it is in device
  // memory and could not be read (callers that must report why use snapshot()).
  const HostTensor *value(const std::string &name) const;

  // The seed training-mode dropout draws its masks from (the run's --seed; 0 until set). A
  // no-op for a program without dropout.
  void setSeed(uint64_t seed);

  // Replaces the state by a checkpoint's. Its parameters and optimizer state must be exactly
  // the program's (same names, dtypes, shapes; full tensors of the global shape for sharded
  // ones, of which this rank takes its shard): a checkpoint of another model or optimizer is an
  // error naming the first difference.
  Status restore(const CheckpointContents &checkpoint);
  // Copies the state into `out` (params, optimizerState, step; the caller fills the rest), as
  // this rank holds it (shards of sharded tensors).
  // Fails when state in device memory cannot be read.
  Status snapshot(CheckpointContents *out) const;
  // The same with full tensors: every sharded tensor gathered from all ranks through `comm`.
  // A collective when the program shards anything: every rank calls it at the same step. The
  // memory it takes is not the program's (no MemoryScope), like a checkpoint's.
  Status consolidatedSnapshot(Communicator *comm, CheckpointContents *out) const;

  // Runs step step() + 1 on the batch `batches` gives for it, with learning rate `lr`. A loss
  // that is not finite (NaN or infinity) discards the step's update: the state stays as it was
  // before the step and step() does not advance. The step is then run once more, checking
  // every op, and `nonFinite` names where this rank first saw a non-finite value (the loss is
  // the same on every rank, so every rank does this together); without `nonFinite`, such a
  // step is an error. With `skipNonFinite` the step instead counts as run, its update skipped
  // (skipped() grows; the optimizer's own step count does not).
  Status runStep(BatchSource *batches, float lr, float *loss,
                 Executor::NonFiniteSite *nonFinite = nullptr, bool skipNonFinite = false);
  // The first parameter or optimizer state tensor (index into params, then optimizerState)
  // whose part on this rank holds a NaN, or more infinities than when the run started or
  // resumed (a float mask buffer holds -inf by design), -1 when every one is sound.
  // *first is that index; an error when state in device memory cannot be read.
  Status firstUnsoundState(int *first) const;

private:
  // A view of the current value of a carried tensor: the executor's arena for state updated
  // in place, else the tensor the loop feeds.
  const Tensor carried(const std::string &name) const;
  // A copy of it, not counted as the program's memory (downloaded from device memory, which
  // may fail).
  Status copyOfCarried(const std::string &name, HostTensor *out) const;
  // The NaNs and infinities of a carried tensor (none unless f32).
  Status nonFiniteOf(const std::string &name, std::pair<int64_t, int64_t> *nanAndInf) const;
  // Counts each carried tensor's infinities, for firstUnsoundState.
  Status recordInfinities();
  std::map<std::string, int64_t> infinitiesAtStart_;

  TrainingLoop() = default;
  // The sharding of the carried input `name`, or null when it is whole.
  const program::Sharding *shardingOf(const std::string &name) const;
  // The communicator of the ranks along mesh axis `axis` through this rank (a group of the
  // program's), `world` when the program has no mesh; null for an axis of one rank.
  Communicator *axisCommunicator(Communicator *world, int axis) const;

  Executor *executor_ = nullptr;
  TrainingSignature signature_;
  // Every input of the next step: the carried state (but for what the program updates in
  // place, which stays in the executor's arena), the last batch and lr.
  std::map<std::string, HostTensor> inputs_;
  mutable std::map<std::string, HostTensor> valueCopies_; // value()'s copies of in-place state
  // The last step's outputs; the carried ones are moved out after each step.
  std::map<std::string, HostTensor> outputs_;
  int64_t step_ = 0;
  int64_t skipped_ = 0;
};

} // namespace shardc::runtime
