#include "runtime/training/training_loop.h"

#include "runtime/training/stage_gather.h"

#include "runtime/program/bindings.h"
#include "runtime/support/quote.h"
#include "runtime/training/shard_transfer.h"

#include <algorithm>
#include <set>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace shardc::runtime {

namespace {

const program::Buffer &inputBuffer(const program::Program &program, const std::string &name) {
  for (const program::Binding &b : program.inputs())
    if (b.name() == name)
      return program.buffers(b.buffer());
  return program::Buffer::default_instance(); // unreachable: names come from the bindings
}

HostTensor zerosLike(const program::Buffer &buffer) {
  return makeHostTensor(buffer.dtype(),
                        std::vector<int64_t>(buffer.shape().begin(), buffer.shape().end()));
}

// Checks that `tensors` holds exactly `names`, each of the program's type for that input (the
// full tensor's for a sharded input).
// `othersMayHoldMore`: a pipeline stage's program trains only its layers; the checkpoint holds
// every stage's (the setup checks the union, tools/shardrun/training_setup.cpp).
Status checkCheckpointTensors(const program::Program &program,
                              const std::vector<std::string> &names,
                              const std::map<std::string, HostTensor> &tensors, const char *kind,
                              bool othersMayHoldMore) {
  for (const std::string &name : names) {
    auto it = tensors.find(name);
    if (it == tensors.end())
      return Status::error(std::string("checkpoint ") + kind + " has no " + quoteForMessage(name) +
                           " (saved from another model or optimizer?)");
    const program::Buffer &buffer = inputBuffer(program, name);
    const program::Binding *binding = findBinding(program.inputs(), name);
    std::string expected =
        binding->has_sharding()
            ? describeTensorType(buffer.dtype(), binding->sharding().global_shape())
            : describeTensorType(buffer.dtype(), buffer.shape());
    if (it->second.describe() != expected)
      return Status::error(std::string("checkpoint ") + kind + " " + quoteForMessage(name) +
                           " is " + it->second.describe() + ", the program expects " + expected);
  }
  if (tensors.size() != names.size() && !othersMayHoldMore)
    for (const auto &[name, tensor] : tensors)
      if (std::find(names.begin(), names.end(), name) == names.end())
        return Status::error(std::string("checkpoint ") + kind + " has " + quoteForMessage(name) +
                             ", which the program does not train (saved from another model?)");
  return Status::ok();
}

} // namespace

Status TrainingLoop::create(Executor *executor, const InitialValueReader &readInitialValue,
                            std::unique_ptr<TrainingLoop> *out) {
  std::unique_ptr<TrainingLoop> loop(new TrainingLoop());
  loop->executor_ = executor;
  const program::Program &program = executor->program();
  SHARDC_RETURN_IF_ERROR(deriveTrainingSignature(program, &loop->signature_));
  // The inputs of every step live here for the whole run: they are the step inputs of the
  // memory plan, counted in the executor's tracker.
  MemoryScope scope(executor->memoryTracker(), MemoryUse::StepInputs);

  for (const program::StateInit &init : program.state_init()) {
    const program::Buffer &buffer = inputBuffer(program, init.name());
    // State the program updates in place is read straight into the arena when that is host
    // memory (on a GPU, through a host tensor copied up); the rest into the tensor the loop
    // feeds. Either starts as zeros: a shard's initial value may stop short of the buffer, the
    // rest being the padding past the end of the full tensor.
    const bool inPlace = executor->isInPlaceState(init.name());
    HostTensor tensor;
    uint8_t *bytes = nullptr;
    if (inPlace && executor->memoryOnHost()) {
      bytes = static_cast<uint8_t *>(executor->stateView(init.name())->data);
      std::memset(bytes, 0, buffer.size_bytes());
    } else {
      tensor = zerosLike(buffer);
      bytes = tensor.bytes.data();
    }
    const bool sharded = findBinding(program.inputs(), init.name())->has_sharding();
    if (sharded ? init.size_bytes() > buffer.size_bytes()
                : init.size_bytes() != buffer.size_bytes())
      return Status::error("initial value of " + quoteForMessage(init.name()) + " has " +
                           std::to_string(init.size_bytes()) + " bytes, the input " +
                           (sharded ? "holds " : "needs ") + std::to_string(buffer.size_bytes()));
    if (init.size_bytes() > 0) {
      Status status = readInitialValue(init, bytes);
      if (!status.isOk())
        return Status::error("initial value of " + quoteForMessage(init.name()) + ": " +
                             status.message());
    }
    if (!inPlace)
      loop->inputs_[init.name()] = std::move(tensor);
    else if (!executor->memoryOnHost())
      SHARDC_RETURN_IF_ERROR(executor->writeState(init.name(), tensor.bytes.data(),
                                                  tensor.bytes.size()));
  }
  for (const std::string &name : loop->signature_.optimizerState) {
    if (executor->isInPlaceState(name))
      SHARDC_RETURN_IF_ERROR(executor->fillState(name, 0));
    else
      loop->inputs_[name] = zerosLike(inputBuffer(program, name));
  }
  SHARDC_RETURN_IF_ERROR(loop->recordInfinities());
  if (executor->isInPlaceState(kStepInputName)) {
    const int64_t zero = 0;
    SHARDC_RETURN_IF_ERROR(executor->writeState(kStepInputName, &zero, sizeof zero));
  } else {
    loop->inputs_[kStepInputName] = makeHostTensor(program::I64, {});
  }
  loop->inputs_[kLrInputName] = makeHostTensor(program::F32, {});
  if (loop->signature_.hasSeed)
    loop->inputs_[kSeedInputName] = makeHostTensor(program::I64, {});
  // Batch inputs start as zeros of the right type so the map always holds every input.
  for (const GraphInputSpec &spec : loop->signature_.batchInputs)
    loop->inputs_[spec.name] = makeHostTensor(spec.dtype, spec.shape);
  *out = std::move(loop);
  return Status::ok();
}

void TrainingLoop::setSeed(uint64_t seed) {
  if (signature_.hasSeed)
    std::memcpy(inputs_[kSeedInputName].as<int64_t>(), &seed, sizeof seed);
}

const Tensor TrainingLoop::carried(const std::string &name) const {
  if (const Tensor *state = executor_->stateView(name))
    return *state;
  auto it = inputs_.find(name);
  return it == inputs_.end() ? Tensor() : const_cast<HostTensor &>(it->second).view();
}

Status TrainingLoop::copyOfCarried(const std::string &name, HostTensor *out) const {
  MemoryScope uncounted(nullptr, MemoryUse::StepInputs);
  if (executor_->memoryOnHost() || !executor_->isInPlaceState(name)) {
    *out = copyToHostTensor(carried(name));
    return Status::ok();
  }
  // State in device memory: downloaded.
  const Tensor *state = executor_->stateView(name);
  *out = makeHostTensor(state->dtype, state->shape);
  Status status = executor_->readState(name, out->bytes.data(), out->bytes.size());
  if (!status.isOk())
    return Status::error("reading " + quoteForMessage(name) + " from the device: " +
                         status.message());
  return Status::ok();
}

const HostTensor *TrainingLoop::value(const std::string &name) const {
  if (executor_->isInPlaceState(name)) {
    HostTensor &copy = valueCopies_[name];
    return copyOfCarried(name, &copy).isOk() ? &copy : nullptr;
  }
  auto it = inputs_.find(name);
  return it == inputs_.end() ? nullptr : &it->second;
}

Status checkResumePosition(const CheckpointContents &checkpoint) {
  // The updates applied, and the steps run (their batches used), which differ by the skipped
  // ones (--on-nonfinite skip-step): never fewer steps run than updates.
  if (checkpoint.dataPosition < checkpoint.step)
    return Status::error("data position " + std::to_string(checkpoint.dataPosition) +
                         " is before step " + std::to_string(checkpoint.step) +
                         " (not written by a training loop)");
  return Status::ok();
}

Status TrainingLoop::restore(const CheckpointContents &checkpoint) {
  const program::Program &program = executor_->program();
  const bool stage = pipelinePlaceOf(program).stages > 1;
  SHARDC_RETURN_IF_ERROR(checkCheckpointTensors(program, signature_.params, checkpoint.params,
                                                "parameters", stage));
  SHARDC_RETURN_IF_ERROR(checkCheckpointTensors(program, signature_.optimizerState,
                                                checkpoint.optimizerState, "optimizer state",
                                                stage));
  std::set<std::string> mine(signature_.params.begin(), signature_.params.end());
  mine.insert(signature_.optimizerState.begin(), signature_.optimizerState.end());
  // Copied into the existing input tensors (same sizes: no allocation); counted like them.
  MemoryScope scope(executor_->memoryTracker(), MemoryUse::StepInputs);
  for (const auto *tensors : {&checkpoint.params, &checkpoint.optimizerState})
    for (const auto &[name, tensor] : *tensors) {
      if (!mine.count(name))
        continue; // another pipeline stage's
      const program::Sharding *sharding = shardingOf(name);
      const bool inPlace = executor_->isInPlaceState(name);
      // A whole value goes where the loop keeps it: the arena for state updated in place, else
      // the tensor it feeds.
      if (sharding == nullptr) {
        if (inPlace)
          SHARDC_RETURN_IF_ERROR(executor_->setState(name, tensor));
        else
          inputs_[name] = tensor;
        continue;
      }
      // A shard is cut out of it: into the tensor the loop feeds, or, for state updated in
      // place, into a temporary of the input's shape that is not the program's memory (as the
      // checkpoint's own tensors are not), then copied into the arena.
      MemoryScope temporary(inPlace ? nullptr : executor_->memoryTracker(),
                            MemoryUse::StepInputs);
      HostTensor shard = inPlace ? zerosLike(inputBuffer(program, name)) : HostTensor();
      HostTensor &part = inPlace ? shard : inputs_[name];
      Status status = sliceShard(*sharding, shardPlaceOf(program, *sharding), tensor, &part);
      if (!status.isOk())
        return Status::error("checkpoint tensor " + quoteForMessage(name) + " " + status.message());
      if (inPlace)
        SHARDC_RETURN_IF_ERROR(executor_->setState(name, part));
    }
  SHARDC_RETURN_IF_ERROR(checkResumePosition(checkpoint));
  step_ = checkpoint.dataPosition;
  skipped_ = checkpoint.dataPosition - checkpoint.step;
  if (executor_->isInPlaceState(kStepInputName)) {
    const int64_t step = checkpoint.step;
    SHARDC_RETURN_IF_ERROR(executor_->writeState(kStepInputName, &step, sizeof step));
  } else {
    *inputs_[kStepInputName].as<int64_t>() = checkpoint.step;
  }
  return recordInfinities();
}

Status TrainingLoop::snapshot(CheckpointContents *out) const {
  out->params.clear();
  out->optimizerState.clear();
  for (const std::string &name : signature_.params)
    SHARDC_RETURN_IF_ERROR(copyOfCarried(name, &out->params[name]));
  for (const std::string &name : signature_.optimizerState)
    SHARDC_RETURN_IF_ERROR(copyOfCarried(name, &out->optimizerState[name]));
  out->step = step_ - skipped_;
  out->dataPosition = step_;
  return Status::ok();
}

const program::Sharding *TrainingLoop::shardingOf(const std::string &name) const {
  const program::Binding *binding = findBinding(executor_->program().inputs(), name);
  return binding != nullptr && binding->has_sharding() ? &binding->sharding() : nullptr;
}

Communicator *TrainingLoop::axisCommunicator(Communicator *world, int axis) const {
  const program::Program &program = executor_->program();
  if (program.mesh_axes_size() == 0 || axis == -1)
    return world; // no mesh, or across all of it
  for (int g = 0; g < program.groups_size(); ++g)
    if (program.groups(g).mesh_axes_size() == 1 && program.groups(g).mesh_axes(0) == axis)
      return executor_->groupCommunicator(g);
  // No group along it: the axis spans the world, or only this rank.
  return program.mesh_axes(axis).size() == program.world_size() ? world : nullptr;
}

Status TrainingLoop::consolidatedSnapshot(Communicator *comm, CheckpointContents *out) const {
  out->params.clear();
  out->optimizerState.clear();
  // Every rank walks the same names in the same order, so the gathers pair up.
  for (const auto &[names, tensors] :
       {std::make_pair(&signature_.params, &out->params),
        std::make_pair(&signature_.optimizerState, &out->optimizerState)})
    for (const std::string &name : *names) {
      const program::Sharding *sharding = shardingOf(name);
      // A failed read is reported after the gathers, which every rank must still join.
      HostTensor part;
      Status read = copyOfCarried(name, &part);
      if (sharding == nullptr) {
        SHARDC_RETURN_IF_ERROR(read);
        (*tensors)[name] = std::move(part); // the same on every rank
        continue;
      }
      Status status = gatherShards(axisCommunicator(comm, sharding->shard_axis()),
                                   axisCommunicator(comm, sharding->block_axis()), *sharding,
                                   part, &(*tensors)[name]);
      SHARDC_RETURN_IF_ERROR(read);
      if (!status.isOk())
        return Status::error("gathering the shards of " + quoteForMessage(name) + ": " +
                             status.message());
    }
  const PipelinePlace place = pipelinePlaceOf(executor_->program());
  if (place.stages > 1) {
    Status status = gatherStages(axisCommunicator(comm, place.axis), executor_->program(), out);
    if (!status.isOk())
      return Status::error("gathering the pipeline stages' state: " + status.message());
  }
  out->step = step_ - skipped_;
  out->dataPosition = step_;
  return Status::ok();
}

namespace {
// NaNs and infinities of an f32 tensor (none for another dtype).
std::pair<int64_t, int64_t> countNonFinite(const Tensor &t) {
  std::pair<int64_t, int64_t> nanAndInf{0, 0};
  if (t.dtype != program::F32)
    return nanAndInf;
  const float *v = t.as<float>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    nanAndInf.first += std::isnan(v[i]) ? 1 : 0;
    nanAndInf.second += std::isinf(v[i]) ? 1 : 0;
  }
  return nanAndInf;
}
} // namespace

Status TrainingLoop::nonFiniteOf(const std::string &name,
                                 std::pair<int64_t, int64_t> *nanAndInf) const {
  if (executor_->memoryOnHost() || !executor_->isInPlaceState(name)) {
    // In host memory: counted in place (this runs after every step that went non-finite).
    *nanAndInf = countNonFinite(carried(name));
    return Status::ok();
  }
  HostTensor copy;
  SHARDC_RETURN_IF_ERROR(copyOfCarried(name, &copy));
  *nanAndInf = countNonFinite(copy.view());
  return Status::ok();
}

Status TrainingLoop::recordInfinities() {
  infinitiesAtStart_.clear();
  for (const auto *names : {&signature_.params, &signature_.optimizerState})
    for (const std::string &name : *names) {
      std::pair<int64_t, int64_t> nanAndInf;
      SHARDC_RETURN_IF_ERROR(nonFiniteOf(name, &nanAndInf));
      infinitiesAtStart_[name] = nanAndInf.second;
    }
  return Status::ok();
}

Status TrainingLoop::firstUnsoundState(int *first) const {
  *first = -1;
  int index = 0;
  for (const auto *names : {&signature_.params, &signature_.optimizerState})
    for (const std::string &name : *names) {
      std::pair<int64_t, int64_t> nanAndInf;
      SHARDC_RETURN_IF_ERROR(nonFiniteOf(name, &nanAndInf));
      auto start = infinitiesAtStart_.find(name);
      if (nanAndInf.first > 0 ||
          nanAndInf.second > (start == infinitiesAtStart_.end() ? 0 : start->second)) {
        *first = index;
        return Status::ok();
      }
      ++index;
    }
  return Status::ok();
}

bool TrainingLoop::lastLossScale(float *scale, bool *overflow) const {
  auto s = outputs_.find(kLossScaleOutputName), o = outputs_.find(kLossScaleOverflowOutputName);
  if (s == outputs_.end() || o == outputs_.end() || s->second.dtype != program::F32 ||
      o->second.dtype != program::F32 || s->second.numel() != 1 || o->second.numel() != 1)
    return false;
  *scale = *s->second.as<float>();
  *overflow = *o->second.as<float>() != 0.0f;
  return true;
}

Status TrainingLoop::runStep(BatchSource *batches, float lr, float *loss,
                             Executor::NonFiniteSite *nonFinite, bool skipNonFinite) {
  int64_t next = step_ + 1;
  // The program counts the updates it applied (torch's state['step']): the steps run less
  // those skipped.
  const int64_t update = next - skipped_;
  {
    // Batches are written into the input tensors in place; any allocation here would be a
    // per-step allocation, and is counted as one.
    MemoryScope scope(executor_->memoryTracker(), MemoryUse::StepInputs);
    SHARDC_RETURN_IF_ERROR(batches->fill(next, &inputs_));
  }
  *inputs_[kLrInputName].as<float>() = lr;
  // The loss is final before the program's first in-place update: a step whose loss is not
  // finite stops there, its state untouched (then skipped, or run again to locate the fault).
  Executor *executor = executor_;
  Status status = executor_->run(inputs_, &outputs_, [executor] {
    float lossSoFar = 0;
    return executor->readOutput(kLossOutputName, &lossSoFar, sizeof lossSoFar).isOk() &&
           std::isfinite(lossSoFar);
  });
  if (!status.isOk())
    return Status::error("step " + std::to_string(next) + ": " + status.message());
  *loss = *outputs_.at(kLossOutputName).as<float>();

  // The program counts steps itself (torch's state['step']); a mismatch means the program is
  // not the training step the loop assumes, and every later step would be wrong.
  int64_t counted = 0;
  if (executor_->isInPlaceState(kStepInputName))
    SHARDC_RETURN_IF_ERROR(executor_->readState(kStepInputName, &counted, sizeof counted));
  else
    counted = *outputs_.at(kStepInputName).as<int64_t>();
  if (std::isfinite(*loss) && counted != update)
    return Status::error("step " + std::to_string(next) + ": the program returned step " +
                         std::to_string(counted) + " (expected " + std::to_string(update) + ")");
  if (!std::isfinite(*loss) && skipNonFinite) {
    // Its batch is used up, its update discarded (as a loss scaler skips an overflowing step).
    step_ = next;
    ++skipped_;
    return Status::ok();
  }
  if (!std::isfinite(*loss)) {
    if (nonFinite == nullptr)
      return Status::error("step " + std::to_string(next) + ": the loss is not finite");
    // The inputs still hold the state before the step: run it again, op by op.
    status = executor_->locateNonFinite(inputs_, &outputs_, /*infinities=*/!std::isnan(*loss),
                                        nonFinite);
    if (!status.isOk())
      return Status::error("step " + std::to_string(next) + ": " + status.message());
    return Status::ok();
  }
  // What the program updated in place is already where the next step reads it.
  for (const auto *names : {&signature_.params, &signature_.optimizerState})
    for (const std::string &name : *names)
      if (!executor_->isInPlaceState(name))
        std::swap(inputs_[name], outputs_[name]);
  if (!executor_->isInPlaceState(kStepInputName))
    std::swap(inputs_[kStepInputName], outputs_[kStepInputName]);
  step_ = next;
  return Status::ok();
}

} // namespace shardc::runtime
