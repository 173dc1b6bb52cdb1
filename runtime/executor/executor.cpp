#include "runtime/executor/executor.h"

#include "runtime/executor/comm_groups.h"
#include "runtime/loader/program_validation.h"
#include "runtime/support/quote.h"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <exception>
#include <iterator>
#include <utility>

namespace shardc::runtime {

namespace {

// Whether `values` hold a NaN (or, with `infinities`, an infinity).
bool holdsNonFinite(const float *values, int64_t count, bool infinities) {
  for (int64_t i = 0; i < count; ++i)
    if (infinities ? std::isinf(values[i]) : std::isnan(values[i]))
      return true;
  return false;
}

// Copies `src` into `dst` reusing dst's shape storage: no allocation once capacities settled.
void refreshTensor(const Tensor &src, Tensor *dst) {
  dst->dtype = src.dtype;
  dst->shape.assign(src.shape.begin(), src.shape.end());
  dst->data = src.data;
}

const Tensor &absentTensor() {
  static const Tensor absent;
  return absent;
}

// after - before, per collective kind; *total accumulates it.
CommCounters difference(const CommCounters &after, const CommCounters &before,
                        CommCounters *total) {
  CommCounters sent;
  for (int k = 0; k < kCollectiveKinds; ++k) {
    sent.calls[k] = after.calls[k] - before.calls[k];
    sent.bytesSent[k] = after.bytesSent[k] - before.bytesSent[k];
    total->calls[k] += sent.calls[k];
    total->bytesSent[k] += sent.bytesSent[k];
  }
  return sent;
}

// Every op must have a kernel on the device before anything is allocated.
Status checkKernelsExist(const program::Program &prog, DeviceKind kind) {
  for (int i = 0; i < prog.ops_size(); ++i)
    if (findKernel(kind, prog.ops(i).kernel()) == nullptr)
      return Status::error(
          "rank " + std::to_string(prog.rank()) + ", op " +
          (prog.ops(i).name().empty() ? "#" + std::to_string(i)
                                      : quoteForMessage(prog.ops(i).name())) +
          " (kernel " + prog.ops(i).kernel() + "): no " + deviceKindName(kind) +
          " kernel yet");
  return Status::ok();
}

// Raises `*bytes` to the largest workspace a kernel of `kind` asks for among the program's ops.
Status largestKernelWorkspace(const program::Program &prog, DeviceKind kind, uint64_t *bytes) {
  for (const program::Op &op : prog.ops()) {
    KernelArgs sizing;
    for (int index : op.inputs())
      sizing.inputs.push_back(index < 0 ? Tensor()
                                        : typeOnlyTensor(prog.buffers(index).dtype(),
                                                         {prog.buffers(index).shape().begin(),
                                                          prog.buffers(index).shape().end()}));
    for (int index : op.outputs())
      sizing.outputs.push_back(typeOnlyTensor(
          prog.buffers(index).dtype(),
          {prog.buffers(index).shape().begin(), prog.buffers(index).shape().end()}));
    sizing.attrs = &op.attrs();
    uint64_t need = 0;
    Status sized = kernelWorkspaceBytes(kind, op.kernel(), sizing, &need);
    if (!sized.isOk())
      return Status::error("op " + quoteForMessage(op.name()) + " (kernel " + op.kernel() +
                           "): " + sized.message());
    *bytes = std::max(*bytes, need);
  }
  return Status::ok();
}

} // namespace

Status Executor::create(const program::Program &program,
                        std::shared_ptr<const AlignedBuffer> weights,
                        std::unique_ptr<Executor> *out, MemoryTracker *tracker,
                        Communicator *comm, Device *device) {
  SHARDC_RETURN_IF_ERROR(validateProgram(program));
  // A communicator of another world would make the collectives exchange data with the wrong
  // peers (or wait for ones that do not exist).
  if (comm != nullptr && (comm->size() != program.world_size() || comm->rank() != program.rank()))
    return Status::error("the program of rank " + std::to_string(program.rank()) + " of " +
                         std::to_string(program.world_size()) +
                         " ranks was given the communicator of rank " +
                         std::to_string(comm->rank()) + " of " + std::to_string(comm->size()));
  std::unique_ptr<Executor> executor(new Executor());
  executor->program_ = program;
  executor->tracker_ = tracker;
  executor->comm_ = comm;
  const program::Program &prog = executor->program_;
  // Every executor runs on a device: the one given, else a CPU device of its own.
  if (device == nullptr) {
    executor->ownedDevice_ = createCpuDevice();
    device = executor->ownedDevice_.get();
  }
  executor->device_ = device;
  executor->stream_ = device->defaultStream();
  const DeviceKind kind = device->kind();
  SHARDC_RETURN_IF_ERROR(checkKernelsExist(prog, kind));
  if (prog.workspace_bytes() > SIZE_MAX || prog.arena_bytes() > SIZE_MAX)
    return Status::error("an arena of " + std::to_string(prog.arena_bytes()) +
                         " bytes and a workspace of " + std::to_string(prog.workspace_bytes()) +
                         " bytes do not fit in memory");
  if (prog.weights_bytes() > 0 && (!weights || weights->size() < prog.weights_bytes()))
    return Status::error("the weights region needs " + std::to_string(prog.weights_bytes()) +
                         " bytes but only " + std::to_string(weights ? weights->size() : 0) +
                         " were loaded");
  // The compiler sized the workspace for the CPU kernels (validateProgram checked every op's
  // need against it); another device's kernels may need more (cuBLASLt's scratch), so the
  // largest need of that device's kernels is asked here. On the CPU the asynchronous
  // collectives, which may overlap the ops, have a workspace of their own; elsewhere they run
  // in order and share the one workspace.
  const bool separateCommWorkspace = kind == DeviceKind::Cpu && prog.comm_workspace_bytes() > 0;
  uint64_t workspaceBytes = prog.workspace_bytes();
  if (kind != DeviceKind::Cpu)
    SHARDC_RETURN_IF_ERROR(largestKernelWorkspace(prog, kind, &workspaceBytes));
  // The sizes the host allocator takes (rounded as AlignedBuffer rounds), which are the plan's:
  // the measured peak, on the host or on the device, is then the plan's exactly. The CPU device
  // allocates through AlignedBuffer, so the tracker of the scope counts what it hands out.
  auto allocation = [](uint64_t bytes) {
    return static_cast<size_t>(AlignedBuffer::allocationSize(bytes));
  };
  {
    MemoryScope scope(tracker, MemoryUse::Arena);
    SHARDC_RETURN_IF_ERROR(DeviceBuffer::allocate(device, allocation(prog.arena_bytes()),
                                                  "the arena", &executor->arena_));
  }
  {
    MemoryScope scope(tracker, MemoryUse::Workspace);
    executor->workspaceBytes_ = allocation(workspaceBytes);
    SHARDC_RETURN_IF_ERROR(DeviceBuffer::allocate(device,
                                                  static_cast<size_t>(executor->workspaceBytes_),
                                                  "the workspace", &executor->workspace_));
    if (separateCommWorkspace)
      SHARDC_RETURN_IF_ERROR(DeviceBuffer::allocate(
          device, allocation(prog.comm_workspace_bytes()), "the communication workspace",
          &executor->commWorkspace_));
  }
  uint8_t *weightsBase = nullptr;
  if (device->addressesHostMemory()) {
    // The kernels read the caller's copy in place (shared read-only by the ranks of a
    // process). A program without parameters still gets a non-null (empty) weights base; it
    // stands for the weights file, and is counted as one.
    if (!weights) {
      MemoryScope scope(tracker, MemoryUse::Weights);
      auto empty = std::make_shared<AlignedBuffer>();
      SHARDC_RETURN_IF_ERROR(AlignedBuffer::allocate(0, "weights region", empty.get()));
      weights = std::move(empty);
    }
    executor->hostWeights_ = std::move(weights);
    // Handed out writable only because Tensor::data is `void *`: validation guarantees no op
    // writes the weights.
    weightsBase = const_cast<uint8_t *>(executor->hostWeights_->data());
  } else {
    // Uploaded once; the host copy stays with the caller (shared by ranks).
    SHARDC_RETURN_IF_ERROR(DeviceBuffer::allocate(device, allocation(prog.weights_bytes()),
                                                  "the weights", &executor->deviceWeights_));
    if (prog.weights_bytes() > 0) {
      SHARDC_RETURN_IF_ERROR(device->copyHostToDevice(executor->deviceWeights_.data(),
                                                      weights->data(), prog.weights_bytes(),
                                                      executor->stream_));
      SHARDC_RETURN_IF_ERROR(device->synchronize(executor->stream_));
    }
    weightsBase = static_cast<uint8_t *>(executor->deviceWeights_.data());
  }
  uint8_t *arenaBase = static_cast<uint8_t *>(executor->arena_.data());

  executor->bufferViews_.reserve(prog.buffers_size());
  for (const program::Buffer &buffer : prog.buffers()) {
    Tensor view;
    view.dtype = buffer.dtype();
    view.shape.assign(buffer.shape().begin(), buffer.shape().end());
    view.data = (buffer.region() == program::WEIGHTS ? weightsBase : arenaBase) + buffer.offset();
    executor->bufferViews_.push_back(std::move(view));
  }

  executor->ops_.resize(prog.ops_size());
  for (int i = 0; i < prog.ops_size(); ++i) {
    const program::Op &op = prog.ops(i);
    PreparedOp &prepared = executor->ops_[i];
    prepared.kernel = findKernel(kind, op.kernel());
    prepared.args.attrs = &op.attrs();
    prepared.args.comm = comm;
    // validateProgram checked the index.
    if (auto group = op.attrs().find("group");
        group != op.attrs().end() && isCollectiveKernel(op.kernel()))
      prepared.group = static_cast<int>(group->second.i());
    for (int index : op.inputs())
      prepared.args.inputs.push_back(index < 0 ? absentTensor() : executor->bufferViews_[index]);
    for (int index : op.outputs())
      prepared.args.outputs.push_back(executor->bufferViews_[index]);
  }

  for (int i = 0; i < prog.inputs_size(); ++i)
    executor->inputIndex_[prog.inputs(i).name()] = i;
  executor->stateFed_.assign(static_cast<size_t>(prog.inputs_size()), false);
  // validateProgram checked that in-place outputs lie exactly over their inputs' bytes.
  std::vector<bool> inPlaceBuffer(static_cast<size_t>(prog.buffers_size()), false);
  for (const program::Binding &binding : prog.outputs())
    if (binding.in_place())
      inPlaceBuffer[static_cast<size_t>(binding.buffer())] = true;
  executor->firstStateWrite_ = prog.ops_size();
  for (int i = 0; i < prog.ops_size() && executor->firstStateWrite_ == prog.ops_size(); ++i)
    for (int index : prog.ops(i).outputs())
      if (inPlaceBuffer[static_cast<size_t>(index)])
        executor->firstStateWrite_ = i;
  executor->completesAt_.resize(static_cast<size_t>(prog.ops_size()) + 1);
  for (int i = 0; i < prog.ops_size(); ++i)
    if (prog.ops(i).completes_before() != 0) {
      // validateProgram checked that it lies after i, within the program.
      executor->completesAt_[static_cast<size_t>(prog.ops(i).completes_before())].push_back(i);
      ++executor->asyncCollectives_;
    }
  executor->movesData_.assign(static_cast<size_t>(prog.ops_size()), false);
  for (int i = 0; i < prog.ops_size(); ++i)
    executor->movesData_[static_cast<size_t>(i)] =
        kernelMovesDataBetweenRanks(prog.ops(i).kernel());
  for (int i = 0; i < prog.ops_size(); ++i) {
    const auto posted = prog.ops(i).attrs().find("posted");
    const int group = executor->ops_[static_cast<size_t>(i)].group;
    if (prog.ops(i).kernel() == "send_recv" && posted != prog.ops(i).attrs().end() &&
        posted->second.i() != 0 &&
        std::find(executor->postingGroups_.begin(), executor->postingGroups_.end(), group) ==
            executor->postingGroups_.end())
      executor->postingGroups_.push_back(group);
  }
  executor->tickets_.assign(static_cast<size_t>(prog.ops_size()), 0);
  executor->issued_.assign(static_cast<size_t>(prog.ops_size()), false);
  executor->groups_.resize(static_cast<size_t>(prog.groups_size()));
  executor->lastRunGroupComm_.resize(static_cast<size_t>(prog.groups_size()));
  *out = std::move(executor);
  return Status::ok();
}

Status Executor::createGroupCommunicators() {
  if (groupsCreated_ || comm_ == nullptr || program_.groups_size() == 0)
    return Status::ok();
  std::vector<std::unique_ptr<Communicator>> groups;
  SHARDC_RETURN_IF_ERROR(shardc::runtime::createGroupCommunicators(program_, *comm_, &groups));
  groups_ = std::move(groups);
  groupsCreated_ = true;
  return Status::ok();
}

Communicator *Executor::groupCommunicator(int index) const {
  if (index < 0 || index >= static_cast<int>(groups_.size()))
    return nullptr;
  return groups_[static_cast<size_t>(index)].get();
}

const program::Buffer &Executor::inputBuffer(const program::Binding &binding) const {
  return program_.buffers(binding.buffer());
}

Status checkProgramInput(const program::Program &program, const std::string &name,
                         const HostTensor &tensor) {
  const program::Binding *bound = nullptr;
  for (const program::Binding &binding : program.inputs())
    if (binding.name() == name)
      bound = &binding;
  if (bound == nullptr) {
    std::string known;
    for (const program::Binding &binding : program.inputs())
      known += (known.empty() ? "" : ", ") + quoteForMessage(binding.name());
    return Status::error("unexpected input " + quoteForMessage(name) +
                         " (the program's inputs are: " + (known.empty() ? "none" : known) + ")");
  }
  const program::Buffer &buffer = program.buffers(bound->buffer());
  bool sameShape = static_cast<int>(tensor.shape.size()) == buffer.shape_size();
  for (size_t d = 0; sameShape && d < tensor.shape.size(); ++d)
    sameShape = tensor.shape[d] == buffer.shape(static_cast<int>(d));
  if (tensor.dtype != buffer.dtype() || !sameShape)
    return Status::error("input " + quoteForMessage(name) + ": expected " +
                         describeTensorType(buffer.dtype(), buffer.shape()) + ", got " +
                         tensor.describe());
  if (tensor.bytes.size() != buffer.size_bytes())
    return Status::error("input " + quoteForMessage(name) + ": holds " +
                         std::to_string(tensor.bytes.size()) + " bytes, but " + tensor.describe() +
                         " is " + std::to_string(buffer.size_bytes()) + " bytes");
  return Status::ok();
}

Status Executor::checkInput(const std::string &name, const HostTensor &tensor) const {
  return checkProgramInput(program_, name, tensor);
}

int Executor::inPlaceInput(const std::string &name) const {
  auto it = inputIndex_.find(name);
  return it != inputIndex_.end() && program_.inputs(it->second).in_place() ? it->second : -1;
}

bool Executor::isInPlaceState(const std::string &name) const { return inPlaceInput(name) >= 0; }

Tensor *Executor::stateView(const std::string &name) {
  const int input = inPlaceInput(name);
  if (input < 0)
    return nullptr;
  stateFed_[static_cast<size_t>(input)] = true;
  return &bufferViews_[static_cast<size_t>(program_.inputs(input).buffer())];
}

const Tensor *Executor::stateView(const std::string &name) const {
  const int input = inPlaceInput(name);
  return input < 0 ? nullptr
                   : &bufferViews_[static_cast<size_t>(program_.inputs(input).buffer())];
}

Status Executor::setState(const std::string &name, const HostTensor &tensor) {
  if (!isInPlaceState(name))
    return Status::error(quoteForMessage(name) + " is not state the program updates in place");
  SHARDC_RETURN_IF_ERROR(checkInput(name, tensor));
  return writeState(name, tensor.bytes.data(), tensor.bytes.size());
}

Status Executor::writeState(const std::string &name, const void *bytes, size_t size) {
  Tensor *view = stateView(name);
  if (view == nullptr)
    return Status::error(quoteForMessage(name) + " is not state the program updates in place");
  if (size > view->sizeBytes())
    return Status::error("state " + quoteForMessage(name) + " holds " +
                         std::to_string(view->sizeBytes()) + " bytes, not " + std::to_string(size));
  if (size == 0)
    return Status::ok();
  // Synchronous: the caller's bytes may be gone once this returns.
  SHARDC_RETURN_IF_ERROR(device_->copyHostToDevice(view->data, bytes, size, stream_));
  return device_->synchronize(stream_);
}

Status Executor::fillState(const std::string &name, uint8_t value) {
  Tensor *view = stateView(name);
  if (view == nullptr)
    return Status::error(quoteForMessage(name) + " is not state the program updates in place");
  SHARDC_RETURN_IF_ERROR(device_->fill(view->data, value, view->sizeBytes(), stream_));
  return device_->synchronize(stream_);
}

Status Executor::readView(const Tensor &view, void *out, size_t size) const {
  if (size > view.sizeBytes())
    return Status::error("reading " + std::to_string(size) + " bytes of " + view.describe());
  if (size == 0)
    return Status::ok();
  SHARDC_RETURN_IF_ERROR(device_->copyDeviceToHost(out, view.data, size, stream_));
  return device_->synchronize(stream_);
}

Status Executor::readState(const std::string &name, void *out, size_t size) const {
  const Tensor *view = stateView(name);
  if (view == nullptr)
    return Status::error(quoteForMessage(name) + " is not state the program updates in place");
  return readView(*view, out, size);
}

Status Executor::readOutput(const std::string &name, void *out, size_t size) const {
  const Tensor *view = outputView(name);
  if (view == nullptr)
    return Status::error("the program has no output " + quoteForMessage(name));
  return readView(*view, out, size);
}

const Tensor *Executor::outputView(const std::string &name) const {
  for (const program::Binding &binding : program_.outputs())
    if (binding.name() == name)
      return &bufferViews_[static_cast<size_t>(binding.buffer())];
  return nullptr;
}

Status Executor::run(const std::map<std::string, HostTensor> &inputs,
                     std::map<std::string, HostTensor> *outputs, const StateUpdateGate &gate) {
  // A run that failed left its collectives to finish (or fail) on their own: they are over
  // before this run writes into the arena, and their outcome belonged to that run.
  if (commThread_ != nullptr) {
    int ignored = -1;
    (void)commThread_->drain(&ignored);
    commThread_->clearFailure();
    std::fill(issued_.begin(), issued_.end(), false);
  }
  // Check everything before touching the arena.
  for (const auto &[name, tensor] : inputs)
    SHARDC_RETURN_IF_ERROR(checkInput(name, tensor));
  for (int i = 0; i < program_.inputs_size(); ++i) {
    const program::Binding &binding = program_.inputs(i);
    if (inputs.find(binding.name()) == inputs.end() &&
        !(binding.in_place() && stateFed_[static_cast<size_t>(i)]))
      return Status::error(
          "missing input " + quoteForMessage(binding.name()) + " (" +
          describeTensorType(inputBuffer(binding).dtype(), inputBuffer(binding).shape()) + ")");
  }

  for (int i = 0; i < program_.inputs_size(); ++i) {
    const program::Binding &binding = program_.inputs(i);
    auto it = inputs.find(binding.name());
    if (it == inputs.end())
      continue; // state updated in place, where the last run left it
    const HostTensor &tensor = it->second;
    const Tensor &view = bufferViews_[static_cast<size_t>(binding.buffer())];
    if (!tensor.bytes.empty())
      SHARDC_RETURN_IF_ERROR(device_->copyHostToDevice(view.data, tensor.bytes.data(),
                                                       tensor.bytes.size(), stream_));
    stateFed_[static_cast<size_t>(i)] = true;
  }

  SHARDC_RETURN_IF_ERROR(createGroupCommunicators());

  // The counters only grow, so the difference is what this run's collectives sent. (A fixed
  // number of groups: nothing here allocates.)
  auto countersOf = [](const Communicator *comm) {
    return comm != nullptr ? comm->counters() : CommCounters();
  };
  const CommCounters worldBefore = countersOf(comm_);
  for (size_t g = 0; g < groups_.size(); ++g)
    lastRunGroupComm_[g] = countersOf(groups_[g].get());
  Status status = runOps(gate);
  if (status.isOk())
    status = finishPostedTransfers();
  ++runIndex_; // the timeline's run number, whatever the outcome
  // The kernels of a device only queued their work: it must be done (and its errors known)
  // before the outputs are read.
  if (status.isOk())
    status = device_->synchronize(stream_);
  lastRunComm_ = CommCounters();
  lastRunWorldComm_ = difference(countersOf(comm_), worldBefore, &lastRunComm_);
  for (size_t g = 0; g < groups_.size(); ++g)
    lastRunGroupComm_[g] =
        difference(countersOf(groups_[g].get()), lastRunGroupComm_[g], &lastRunComm_);
  SHARDC_RETURN_IF_ERROR(status);

  // The caller's tensors are reused where they exist (assign keeps their capacity): a training
  // loop hands last step's buffers back, so steady-state steps allocate nothing here.
  auto isCopiedOut = [&](const std::string &name) {
    for (const program::Binding &binding : program_.outputs())
      if (binding.name() == name)
        return !binding.in_place();
    return false;
  };
  for (auto it = outputs->begin(); it != outputs->end();)
    it = isCopiedOut(it->first) ? std::next(it) : outputs->erase(it);
  MemoryScope scope(tracker_, MemoryUse::StepOutputs);
  for (const program::Binding &binding : program_.outputs()) {
    if (binding.in_place())
      continue;
    const program::Buffer &buffer = program_.buffers(binding.buffer());
    HostTensor &tensor = (*outputs)[binding.name()];
    tensor.dtype = buffer.dtype();
    tensor.shape.assign(buffer.shape().begin(), buffer.shape().end());
    const Tensor &view = bufferViews_[static_cast<size_t>(binding.buffer())];
    tensor.bytes.resize(buffer.size_bytes());
    SHARDC_RETURN_IF_ERROR(readView(view, tensor.bytes.data(), tensor.bytes.size()));
  }
  return Status::ok();
}

std::string Executor::NonFiniteSite::describe() const {
  if (!input.empty())
    return "input " + quoteForMessage(input);
  if (op < 0)
    return "";
  return "op " + (opName.empty() ? "#" + std::to_string(op) : quoteForMessage(opName)) +
         " (kernel " + kernel + ")";
}

Status Executor::locateNonFinite(const std::map<std::string, HostTensor> &inputs,
                                 std::map<std::string, HostTensor> *outputs, bool infinities,
                                 NonFiniteSite *site) {
  *site = NonFiniteSite();
  for (const program::Binding &binding : program_.inputs()) {
    auto it = inputs.find(binding.name());
    if (it != inputs.end() && it->second.dtype == program::F32 &&
        holdsNonFinite(it->second.as<float>(), it->second.numel(), infinities)) {
      site->input = binding.name();
      break;
    }
  }
  checkFinite_ = site;
  checkInfinities_ = infinities;
  Status status = run(inputs, outputs, [] { return false; });
  checkFinite_ = nullptr;
  return status;
}

Status Executor::opError(size_t index, const std::string &cause) const {
  const program::Op &op = program_.ops(static_cast<int>(index));
  std::string opName = op.name().empty() ? "#" + std::to_string(index) : quoteForMessage(op.name());
  // The kernel name is not quoted: validation guarantees it is one of the known names.
  return Status::error("rank " + std::to_string(program_.rank()) + ", op " + opName +
                       " (kernel " + op.kernel() + "): " + cause);
}

void Executor::recordTimeline(size_t maxSpansPerLane) {
  timeline_ = std::make_unique<OpTimeline>(maxSpansPerLane);
}

void Executor::prepareArgs(size_t index) {
  PreparedOp &prepared = ops_[index];
  const program::Op &op = program_.ops(static_cast<int>(index));
  KernelArgs &args = prepared.args;
  args.inputs.resize(op.inputs_size());
  for (int i = 0; i < op.inputs_size(); ++i)
    refreshTensor(op.inputs(i) < 0 ? absentTensor() : bufferViews_[op.inputs(i)],
                  &args.inputs[i]);
  args.outputs.resize(op.outputs_size());
  for (int i = 0; i < op.outputs_size(); ++i)
    refreshTensor(bufferViews_[op.outputs(i)], &args.outputs[i]);
  args.attrs = &op.attrs();
  if (op.completes_before() != 0 && commWorkspace_.data() != nullptr) {
    // An asynchronous collective may overlap the ops (on the CPU): it has its own scratch.
    args.workspace = commWorkspace_.data();
    args.workspaceBytes = program_.comm_workspace_bytes();
  } else {
    args.workspace = workspace_.data();
    args.workspaceBytes = workspaceBytes_;
  }
  args.comm = prepared.group < 0 ? comm_ : groups_[static_cast<size_t>(prepared.group)].get();
  args.stream = stream_ != nullptr ? stream_->nativeHandle() : nullptr;
}

Status Executor::callKernel(size_t index, TimelineLane lane) {
  PreparedOp &prepared = ops_[index];
  // Kernels report errors through Status; this only keeps a stray exception (e.g. bad_alloc
  // inside a library) from crossing the runtime API, or ending the communication thread.
  try {
    if (timeline_ == nullptr)
      return prepared.kernel(prepared.args);
    OpSpan span;
    span.op = static_cast<int32_t>(index);
    span.run = runIndex_;
    span.lane = lane;
    span.startNs = wallClockNs();
    Status status = prepared.kernel(prepared.args);
    span.endNs = wallClockNs();
    timeline_->add(span);
    return status;
  } catch (const std::exception &e) {
    return Status::error(std::string("internal error: ") + e.what());
  } catch (...) {
    return Status::error("internal error: unknown exception");
  }
}

Status Executor::completeBefore(size_t index) {
  for (int collective : completesAt_[index])
    SHARDC_RETURN_IF_ERROR(complete(static_cast<size_t>(collective)));
  return Status::ok();
}

Status Executor::completeAll() {
  for (size_t i = 0; i < issued_.size(); ++i)
    SHARDC_RETURN_IF_ERROR(complete(i));
  return Status::ok();
}

Status Executor::finishPostedTransfers() {
  for (int group : postingGroups_) {
    Communicator *comm = group < 0 ? comm_ : groups_[static_cast<size_t>(group)].get();
    if (comm != nullptr)
      SHARDC_RETURN_IF_ERROR(comm->finishPosted());
  }
  return Status::ok();
}

Status Executor::complete(size_t collective) {
  if (!issued_[collective])
    return Status::ok(); // ran in order, or already waited for
  issued_[collective] = false;
  OpSpan span;
  span.startNs = timeline_ != nullptr ? wallClockNs() : 0;
  int failedOp = -1;
  Status status = commThread_->waitFor(tickets_[collective], &failedOp);
  if (timeline_ != nullptr) {
    span.op = static_cast<int32_t>(collective);
    span.run = runIndex_;
    span.lane = TimelineLane::Wait;
    span.endNs = wallClockNs();
    timeline_->add(span);
  }
  if (!status.isOk())
    return opError(static_cast<size_t>(failedOp), status.message());
  return Status::ok();
}

Status Executor::runOps(const StateUpdateGate &gate) {
  // Looking for the first non-finite value reads every f32 output; on a device, through a host
  // copy (a diagnosis run, so its allocation and synchronisation do not matter).
  std::vector<float> hostCopy;
  auto outputHoldsNonFinite = [&](const Tensor &out) {
    if (memoryOnHost())
      return holdsNonFinite(out.as<float>(), out.numel(), checkInfinities_);
    hostCopy.resize(static_cast<size_t>(out.numel()));
    return readView(out, hostCopy.data(), hostCopy.size() * sizeof(float)).isOk() &&
           holdsNonFinite(hostCopy.data(), out.numel(), checkInfinities_);
  };
  // The asynchronous collectives overlap the ops before their completion point on the CPU,
  // with a communicator; a diagnosis run checks every op's outputs as it ends, so it runs them
  // in order.
  const bool overlap = overlapCollectives_ && asyncCollectives_ > 0 && comm_ != nullptr &&
                       device_->kind() == DeviceKind::Cpu && checkFinite_ == nullptr;
  if (overlap && commThread_ == nullptr)
    commThread_ = std::make_unique<CommThread>(
        asyncCollectives_ + 1, [this](int op) { return callKernel(op, TimelineLane::Comm); });

  for (size_t current = 0; current < ops_.size(); ++current) {
    SHARDC_RETURN_IF_ERROR(completeBefore(current));
    if (gate && current == static_cast<size_t>(firstStateWrite_)) {
      // The gate reads outputs (the loss), which a pending collective may still be writing.
      SHARDC_RETURN_IF_ERROR(completeAll());
      if (!gate()) {
        return Status::ok();
      }
    }
    prepareArgs(current);
    const program::Op &op = program_.ops(static_cast<int>(current));
    if (overlap && movesData_[current]) {
      // Every collective goes through the communication thread, the one thread using the
      // rank's communicators while it runs, so that they see the collectives in program order;
      // one that is not asynchronous is waited for at once.
      tickets_[current] = commThread_->issue(static_cast<int>(current));
      issued_[current] = true;
      if (op.completes_before() == 0)
        SHARDC_RETURN_IF_ERROR(complete(current));
      continue;
    }
    Status status = callKernel(current, TimelineLane::Compute);
    if (!status.isOk())
      return opError(current, status.message());
    if (checkFinite_ != nullptr && checkFinite_->op < 0 && checkFinite_->input.empty())
      for (const Tensor &out : ops_[current].args.outputs)
        if (out.dtype == program::F32 && outputHoldsNonFinite(out)) {
          checkFinite_->op = static_cast<int>(current);
          checkFinite_->opName = op.name();
          checkFinite_->kernel = op.kernel();
          break;
        }
  }
  return completeAll();
}

} // namespace shardc::runtime
