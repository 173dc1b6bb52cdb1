// Runs one rank's program: copies graph inputs into the arena, calls each op's kernel in
// program order on views into the arena and weights regions (and the one workspace for the
// kernels' scratch), copies graph outputs out. All planning was done by the compiler; the
// executor only follows the program and allocates nothing after its first run.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/device/device.h"
#include "runtime/executor/comm_thread.h"
#include "runtime/executor/host_tensor.h"
#include "runtime/executor/op_timeline.h"
#include "runtime/kernels/kernel.h"
#include "runtime/program/program.pb.h"
#include "runtime/support/aligned_buffer.h"
#include "runtime/support/memory_tracker.h"
#include "runtime/support/status.h"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace shardc::runtime {

// Checks one graph input against `program`'s binding (validateProgram must have accepted the
// program): the name must be bound, dtype and shape must match exactly ("input 'x': expected
// f32[2x3], got i64[2x3]"). Needs no executor, so inputs can be checked before the arena is
// allocated.
Status checkProgramInput(const program::Program &program, const std::string &name,
                         const HostTensor &tensor);

class Executor {
public:
  // Builds an executor for `program`, which it copies. The program is validated again
  // (validateProgram: cheap, and it keeps hand-built programs from crashing the executor).
  // `weights` holds the WEIGHTS region; it may be null when the program has no weights.
  // With a `tracker` (which must outlive the executor and every output tensor it fills), the
  // arena, the workspace and the output tensors run() allocates are counted in it.
  // `comm` (which must outlive the executor) is the rank's communicator over the world, handed
  // to the collective kernels (KernelArgs::comm) of ops without a "group"; null in a
  // single-rank run. When given, its size and rank must be the program's world_size and rank.
  // The ops with a "group" get that group's communicator, which createGroupCommunicators()
  // splits from `comm`.
  // The executor runs on `device` (which must outlive it), or on a CPU device of its own when
  // given none: the arena and the workspace live in that device's memory (counted by the
  // device, Device::memoryCounters, and, allocated on the CPU, by `tracker` too), the ops run
  // that device's kernels (a program using a kernel the device lacks is refused here, naming
  // the op) queued on its default stream, and inputs, outputs and state move through the
  // device's copies. A device that addresses host memory (the CPU) reads `weights` in place,
  // shared by the ranks of a process; another gets its own copy.
  static Status create(const program::Program &program,
                       std::shared_ptr<const AlignedBuffer> weights, std::unique_ptr<Executor> *out,
                       MemoryTracker *tracker = nullptr, Communicator *comm = nullptr,
                       Device *device = nullptr);

  // Creates the communicators of the program's groups (runtime/executor/comm_groups.h): a
  // collective every rank of the world calls once, which is why create() does not (a rank
  // whose setup failed before it would leave the others waiting). Callers that coordinate the
  // ranks' setup call it once every rank is set up; run() calls it first if nobody did. Does
  // nothing without groups or without a communicator, and after it succeeded once.
  Status createGroupCommunicators();

  // Checks one graph input against the program's binding: the name must be bound, dtype and
  // shape must match exactly ("input 'x': expected f32[2x3], got i64[2x3]").
  Status checkInput(const std::string &name, const HostTensor &tensor) const;

  // Asked once per run, just before the first op that writes state updated in place
  // (Binding.in_place), when every output the program computes before it (the loss) is final:
  // false stops the run there, the state unchanged.
  using StateUpdateGate = std::function<bool()>;

  // Runs the program once. `inputs` must hold the program's graph inputs, except state updated
  // in place (Binding.in_place), which lives in the arena from run to run: it is copied in when
  // present (the first run must feed it, unless setState or stateView did) and otherwise used
  // as the previous run left it. `outputs` is replaced by the graph outputs other than that
  // state (tensors already in it are overwritten in place, reusing their memory; entries that
  // are not such outputs are removed); read the state with stateView.
  // A run `gate` stops copies out the outputs as they stand: those computed before the state
  // updates (the loss) are complete.
  // Kernel errors read "rank R, op 'NAME' (kernel K): cause".
  // Not reentrant: one run at a time per executor (runs share the arena).
  Status run(const std::map<std::string, HostTensor> &inputs,
             std::map<std::string, HostTensor> *outputs, const StateUpdateGate &gate = nullptr);

  // Whether input `name` is state updated in place.
  bool isInPlaceState(const std::string &name) const;
  // The arena bytes of state `name` updated in place (null when it is not such state): its
  // value after the last run, and where a caller may write its next value directly (which
  // counts as feeding it; a value written there replaces the state from the next run on).
  Tensor *stateView(const std::string &name);
  const Tensor *stateView(const std::string &name) const;
  // Copies `tensor` into state `name` updated in place (dtype and shape as its input binding).
  Status setState(const std::string &name, const HostTensor &tensor);
  // The arena bytes of graph output `name` (null when there is none) as the last run left
  // them; for a gate reading the loss before the state updates.
  const Tensor *outputView(const std::string &name) const;

  // Whether the views above point to host memory. With a GPU device they point to device
  // memory and must not be dereferenced: state and outputs then move through the calls below
  // (which work on every device).
  bool memoryOnHost() const { return device_->addressesHostMemory(); }
  // Copies `bytes` bytes into state `name` updated in place, from its first byte (which counts
  // as feeding it); or sets all its bytes to `value`.
  Status writeState(const std::string &name, const void *bytes, size_t size);
  Status fillState(const std::string &name, uint8_t value);
  // Copies the first `size` bytes of state `name`, or of graph output `name`, into `out`.
  Status readState(const std::string &name, void *out, size_t size) const;
  Status readOutput(const std::string &name, void *out, size_t size) const;
  // The device given to create(), or the CPU device the executor made for itself; never null.
  Device *device() const { return device_; }
  // The workspace the kernels are given: the largest need of the device's kernels (at least the
  // program's workspace_bytes), rounded as the host allocator rounds.
  uint64_t workspaceBytes() const { return workspaceBytes_; }

  // Where a run first produced a NaN (or, with `infinities`, an infinity), in program order: an
  // f32 graph input that already holds one, else the first op with such an f32 output. NaN and
  // infinity are looked for apart: a float attention mask holds -inf by design, so the first
  // infinity of a step is often no fault.
  struct NonFiniteSite {
    std::string input; // the graph input, when one holds it
    int op = -1;       // else the op's index (-1: none found)
    std::string opName, kernel;
    bool found() const { return !input.empty() || op >= 0; }
    // "input 'NAME'" or "op 'NAME' (kernel K)"; "" when none was found.
    std::string describe() const;
  };
  // Runs the program like run() (every op, so that the collectives of all ranks pair up) and
  // finds the first non-finite value of this rank. For diagnosis after a step went non-finite:
  // checking every op's outputs costs a pass over each of them.
  // The non-finite values it looks for come before the state updates (the loss is final
  // there), so the run stops before them: the state is unchanged.
  Status locateNonFinite(const std::map<std::string, HostTensor> &inputs,
                         std::map<std::string, HostTensor> *outputs, bool infinities,
                         NonFiniteSite *site);

  const program::Program &program() const { return program_; }
  // The tracker given to create() (null: none); callers that hold the step's input tensors
  // count them in it too (MemoryUse::StepInputs).
  MemoryTracker *memoryTracker() const { return tracker_; }
  // What the communicators sent during the last run() (zero without one): the counters' change
  // across the kernels alone, so collectives outside the program (checkpoint gathering) never
  // mix in. The total over the world's and every group's communicator is what
  // Program.planned_comm_bytes predicts.
  const CommCounters &lastRunCommSent() const { return lastRunComm_; }
  // The same for the ops without a group (the world's communicator) ...
  const CommCounters &lastRunWorldCommSent() const { return lastRunWorldComm_; }
  // ... and for the ops of each group ([i]: Program.groups(i); empty without groups).
  const std::vector<CommCounters> &lastRunGroupCommSent() const { return lastRunGroupComm_; }
  // Program.groups(i)'s communicator; null before createGroupCommunicators().
  Communicator *groupCommunicator(int index) const;

  // Whether the asynchronous collectives (Op.completes_before) run on the rank's communication
  // thread, overlapping the ops up to their completion point (the default), or in program
  // order like any op. Either way the results are the same, bit for bit. With overlap, the
  // other collectives run on that thread too (waited for at once), so that the communicators
  // see all of them in program order from one thread. They always run in order on a device
  // other than the CPU, in a single-rank run and in locateNonFinite's run.
  void setCollectiveOverlap(bool overlap) { overlapCollectives_ = overlap; }
  // Records when each op of the following runs starts and ends (timeline()), keeping at most
  // `maxSpansPerLane` spans per lane; only on the CPU (a device's kernels return when queued).
  void recordTimeline(size_t maxSpansPerLane);
  const OpTimeline *timeline() const { return timeline_.get(); }
  // The asynchronous collectives' scratch: the program's comm_workspace_bytes.
  uint64_t commWorkspaceBytes() const { return program_.comm_workspace_bytes(); }

private:
  // An op ready to call: its kernel and the arguments it is called with. `args` is refreshed
  // from the buffer views before every call (so a kernel that modified its arguments cannot
  // affect later runs) without reallocating: the vectors keep their capacity.
  struct PreparedOp {
    KernelFn kernel = nullptr;
    KernelArgs args;
    int group = -1; // the op's "group" attribute; -1: the world
  };

  Executor() = default;
  // Runs the ops in order; with `gate`, asks it before op firstStateWrite_ and stops there
  // when it answers false.
  Status runOps(const StateUpdateGate &gate);
  // Prepares op `index`'s arguments for a call (refreshed from the buffer views).
  void prepareArgs(size_t index);
  // Runs op `index`'s kernel; with a timeline, records it on `lane`.
  Status callKernel(size_t index, TimelineLane lane);
  // Waits for the asynchronous collectives that complete before op `index` (all of them at
  // ops_size()); an error names the collective that failed.
  Status completeBefore(size_t index);
  // Waits for every asynchronous collective still running, in program order.
  Status completeAll();
  // Waits until the peers have taken every message this run posted (send_recv with
  // "posted"), so that a run ends with its messages delivered.
  Status finishPostedTransfers();
  // Waits for asynchronous collective `collective` when it was issued and not waited for.
  Status complete(size_t collective);
  // "rank R, op 'NAME' (kernel K): cause".
  Status opError(size_t index, const std::string &cause) const;
  // The index in program_.inputs() of the input `name` when it is state updated in place,
  // else -1.
  int inPlaceInput(const std::string &name) const;
  // Set by locateNonFinite for its run: runOps records the first op with a NaN output (or an
  // infinite one, with checkInfinities_).
  NonFiniteSite *checkFinite_ = nullptr;
  bool checkInfinities_ = false;
  const program::Buffer &inputBuffer(const program::Binding &binding) const;

  // Copies `size` bytes of buffer view `view` to `out` (device to host where needed).
  Status readView(const Tensor &view, void *out, size_t size) const;

  program::Program program_;
  MemoryTracker *tracker_ = nullptr;
  // The device's memory holds the arena and the workspace, and the weights unless the device
  // addresses host memory (then the kernels read the caller's copy, hostWeights_).
  std::unique_ptr<Device> ownedDevice_; // made by create() when given none
  Device *device_ = nullptr;
  DeviceStream *stream_ = nullptr;
  DeviceBuffer arena_, workspace_, commWorkspace_, deviceWeights_;
  std::shared_ptr<const AlignedBuffer> hostWeights_;
  // The workspace the device's kernels need (at least the program's workspace_bytes).
  uint64_t workspaceBytes_ = 0;
  Communicator *comm_ = nullptr;
  // [i]: Program.groups(i)'s, once created (groupsCreated_).
  std::vector<std::unique_ptr<Communicator>> groups_;
  bool groupsCreated_ = false;
  CommCounters lastRunComm_;
  CommCounters lastRunWorldComm_;
  std::vector<CommCounters> lastRunGroupComm_;
  std::vector<Tensor> bufferViews_; // one view per program buffer
  std::vector<PreparedOp> ops_;
  std::map<std::string, int> inputIndex_; // graph input name -> index in program_.inputs()
  // [j]: the asynchronous collectives that complete before op j (j = ops_size(): at the end).
  std::vector<std::vector<int>> completesAt_;
  size_t asyncCollectives_ = 0;
  // The communicators (a group's index; -1: the world) of the send_recv ops that post.
  std::vector<int> postingGroups_;
  // Per op: whether its kernel sends data between ranks (kernelMovesDataBetweenRanks).
  std::vector<bool> movesData_;
  bool overlapCollectives_ = true;
  // Per op: the communication thread's ticket of its last issue; issued_[i] whether it is
  // issued in the current run and not yet waited for.
  std::vector<uint64_t> tickets_;
  std::vector<bool> issued_;
  std::unique_ptr<OpTimeline> timeline_;
  // Read by the communication thread too: a failed run's collectives may still be recording.
  std::atomic<int32_t> runIndex_{0};
  // State updated in place: the index of the first op writing any of it (ops_size() when
  // none does), and per input binding whether its bytes were fed (by an input, setState or
  // stateView).
  int firstStateWrite_ = 0;
  std::vector<bool> stateFed_;
  // Started by the first run that overlaps collectives. Declared last, so destroyed first: it
  // finishes the collectives still running (a run that failed does not wait for them) while
  // the memory they use is still there.
  std::unique_ptr<CommThread> commThread_;
};

} // namespace shardc::runtime
