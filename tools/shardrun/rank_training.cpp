#include "tools/shardrun/rank_training.h"

#include "tools/shardrun/device_option.h"
#include "tools/shardrun/stop_signals.h"

#include "runtime/executor/chrome_trace.h"
#include "runtime/executor/executor.h"
#include "runtime/loader/rank_program.h"
#include "runtime/memory/memory_report.h"
#include "runtime/support/file_io.h"
#include "runtime/support/quote.h"
#include "runtime/training/batch_source.h"
#include "runtime/training/progress.h"
#include "runtime/training/setup_agreement.h"
#include "runtime/training/training_loop.h"
#include "runtime/training/training_signature.h"
#include "tools/shardrun/comm_options.h"
#include "tools/shardrun/tensor_files.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>

#include <unistd.h>

namespace shardrun {

using namespace shardc::runtime;
namespace program = shardc::program;

namespace {

// --trace keeps each rank's first spans per thread (24 bytes each): a million cover thousands
// of steps of a large model and cap a rank's trace memory at 24 MiB a thread.
constexpr size_t kTraceSpansPerLane = size_t{1} << 20;

// What a rank holds for its run.
struct RankState {
  std::unique_ptr<Device> device; // --device; outlives the executor (declared first)
  std::unique_ptr<Executor> executor;
  std::unique_ptr<TrainingLoop> loop;
  std::unique_ptr<BatchSource> batches;
};

Status setUpRank(const TrainingRun &run, int rank, Communicator *comm, MemoryTracker *tracker,
                 RankState *state) {
  const Options &options = *run.options;
  const std::string &bundleDir = options.bundle;
  program::Program program;
  Status status = programOfRank(run.bundle->bundle, rank, &program);
  if (!status.isOk())
    return Status::error(bundleDir + "/program.pb: rank " + std::to_string(rank) + ": " +
                         status.message());
  // The data is opened and checked before the executor allocates the arena and the workspace:
  // a missing or wrong data file is reported at once, whatever the size of the plan.
  TrainingSignature signature;
  status = deriveTrainingSignature(program, &signature);
  if (!status.isOk())
    return Status::error(bundleDir + ": " + status.message());
  if (options.tokensFile)
    status = openTokenBatchSource(*options.tokensFile, signature.batchInputs, run.seed,
                                  &state->batches, signature.batchSlice);
  else // no --data: the step has no batch inputs (prepareTraining checked), nothing is read
    status = openNpyBatchSource(options.dataDir.value_or(""), signature.batchInputs,
                                &state->batches, signature.batchSlice);
  SHARDC_RETURN_IF_ERROR(status);
  status = createRankDevice(options, &state->device);
  if (!status.isOk())
    return status;
  if (options.traceFile && state->device != nullptr && state->device->kind() != DeviceKind::Cpu)
    return Status::error("--trace times CPU ranks only: a " +
                         std::string(deviceKindName(state->device->kind())) +
                         " device's kernels return before they run, and are not timed yet");
  status = Executor::create(program, run.bundle->weights, &state->executor, tracker, comm,
                            state->device.get());
  if (!status.isOk())
    return Status::error(bundleDir + ": " + status.message());
  state->executor->setCollectiveOverlap(options.commOverlap.value_or("on") == "on");
  if (options.traceFile)
    state->executor->recordTimeline(kTraceSpansPerLane);
  const LoadedBundle &bundle = *run.bundle;
  status = TrainingLoop::create(
      state->executor.get(),
      [&bundle](const program::StateInit &init, uint8_t *dst) {
        return readInitialValue(bundle, init, dst);
      },
      &state->loop);
  if (!status.isOk())
    return Status::error(bundleDir + ": " + status.message());
  TrainingLoop &loop = *state->loop;
  if (run.checkpoint) {
    status = loop.restore(*run.checkpoint);
    if (!status.isOk())
      return Status::error(*options.resumeDir + ": " + status.message());
  }
  loop.setSeed(run.seed);
  return Status::ok();
}

// `full`: the state with every sharded tensor gathered (TrainingLoop::consolidatedSnapshot).
Status saveFullCheckpoint(CheckpointContents *full, const Options &options, uint64_t seed,
                          std::optional<uint64_t> frozenWeightsChecksum) {
  full->rngSeed = seed;
  full->frozenWeightsChecksum = frozenWeightsChecksum;
  // Batches are a pure function of the step run, so the data source resumes at the steps run
  // (dataPosition, set by the snapshot: the updates applied plus those skipped).
  return saveCheckpoint(*options.saveDir, *full,
                        static_cast<int>(options.keepCheckpoints.value_or(kDefaultKeepCheckpoints)));
}

bool shardsAnything(const program::Program &program) {
  for (const program::Binding &binding : program.inputs())
    if (binding.has_sharding())
      return true;
  return false;
}

// Records what the step's run of the program sent, for the check against the plan.
void recordCommSent(const Executor &executor, int64_t step, RankReport *report) {
  const uint64_t sent = executor.lastRunCommSent().totalBytesSent();
  if (!report->commMeasured) {
    report->commMeasured = true;
    report->commPerStep = executor.lastRunCommSent();
    report->commFirstStep = step;
    const program::Program &program = executor.program();
    for (int g = 0; g < program.groups_size(); ++g)
      report->commPerGroup.push_back(
          {program.groups(g).name(), executor.lastRunGroupCommSent()[static_cast<size_t>(g)]});
    if (program.groups_size() > 0)
      report->commPerGroup.push_back({"world", executor.lastRunWorldCommSent()});
  } else if (report->commOtherStep == 0 && sent != report->commPerStep.totalBytesSent()) {
    report->commOtherStep = step;
    report->commOtherBytes = sent;
  }
}

// A rank's run after its setup: the steps, the final writes and the summary. Rank 0 leads:
// it alone prints and writes files.
class RankTrainer {
public:
  RankTrainer(TrainingRun &run, int rank, Communicator *comm, MemoryTracker *tracker,
              RankState &state, RankOutcome *out)
      : run_(run), options_(*run.options), rank_(rank), lead_(rank == 0), comm_(comm),
        tracker_(tracker), executor_(*state.executor), loop_(*state.loop), batches_(*state.batches),
        out_(out), firstStep_(loop_.step()),
        skipNonFinite_(options_.onNonFinite.value_or("stop") == "skip-step"),
        saveOnSignal_(savesOnSignal(options_)),
        onCpu_(state.device == nullptr || state.device->kind() == DeviceKind::Cpu) {}

  Status train() {
    std::optional<ProgressLine> progress;
    if (lead_)
      progress.emplace(stderr, isatty(fileno(stderr)) != 0, firstStep_, *options_.steps,
                       batches_.itemsPerStep(), batches_.itemName());
    const Clock::time_point start = Clock::now();
    Status status = steps(progress ? &*progress : nullptr, start);
    if (progress)
      progress->finish();
    seconds_ = std::chrono::duration<double>(Clock::now() - start).count();
    SHARDC_RETURN_IF_ERROR(status);
    if (lead_)
      SHARDC_RETURN_IF_ERROR(run_.metrics.close());
    if (stopSignal_ != 0)
      return stopOnSignal();
    SHARDC_RETURN_IF_ERROR(writeFinalState());
    if (options_.traceFile)
      SHARDC_RETURN_IF_ERROR(writeTrace(*options_.traceFile));
    report();
    return Status::ok();
  }

private:
  using Clock = std::chrono::steady_clock;

  Status steps(ProgressLine *progress, Clock::time_point start) {
    out_->report.rank = rank_;
    out_->report.commPlanned = executor_.program().planned_comm_bytes();
    while (loop_.step() < *options_.steps) {
      const int64_t step = loop_.step() + 1;
      const float lr = static_cast<float>(run_.schedule.at(step));
      const Clock::time_point stepStart = Clock::now();
      Executor::NonFiniteSite nonFinite;
      Status status = loop_.runStep(&batches_, lr, &loss_, &nonFinite, skipNonFinite_);
      const double stepMs =
          std::chrono::duration<double, std::milli>(Clock::now() - stepStart).count();
      if (!status.isOk())
        return Status::error(options_.bundle + ": " + status.message());
      if (!std::isfinite(loss_) && !skipNonFinite_)
        return nonFiniteLoss(step, nonFinite);
      if (step == firstStep_ + 1)
        allocationsAfterFirstStep_ = tracker_->allocationCount();
      if (comm_ != nullptr)
        recordCommSent(executor_, step, &out_->report);
      if (lead_ && options_.metricsFile) {
        MetricsLog::LossScale scale;
        const bool scaled = loop_.lastLossScale(&scale.scale, &scale.overflow);
        SHARDC_RETURN_IF_ERROR(run_.metrics.write(
            step, loss_, lr, stepMs, comm_ != nullptr ? &executor_.lastRunCommSent() : nullptr,
            skipNonFinite_ ? loop_.skipped() : -1, scaled ? &scale : nullptr));
      }
      if (progress != nullptr)
        progress->update(step, loss_, lr,
                         std::chrono::duration<double>(Clock::now() - start).count());
      if (options_.saveDir && options_.saveEvery && step % *options_.saveEvery == 0)
        SHARDC_RETURN_IF_ERROR(saveStep());
      if (saveOnSignal_) {
        SHARDC_RETURN_IF_ERROR(agreeOnStopSignal());
        if (stopSignal_ != 0)
          break;
      }
    }
    return Status::ok();
  }

  // The checkpoint of the step just run: every rank joins the gathering of the state, rank 0
  // writes it.
  Status saveStep() {
    const int64_t step = loop_.step();
    SHARDC_RETURN_IF_ERROR(checkSoundState("the checkpoint of step " + std::to_string(step)));
    CheckpointContents full;
    SHARDC_RETURN_IF_ERROR(loop_.consolidatedSnapshot(comm_, &full));
    if (lead_)
      SHARDC_RETURN_IF_ERROR(
          saveFullCheckpoint(&full, options_, run_.seed, run_.frozenWeightsChecksum));
    // The others wait for the write here, under --io-timeout, rather than in the next step's
    // first collective under --comm-timeout, which a large checkpoint could outlast.
    SHARDC_RETURN_IF_ERROR(
        waitForRanks(comm_, ioTimeoutOf(options_),
                     "while rank 0 writes the checkpoint of step " + std::to_string(step)));
    lastSaved_ = step;
    return Status::ok();
  }

  // Whether a rank received a stop signal: every rank asks after each step (an all-gather of
  // one value outside the program's counted collectives), so that all stop after the same one
  // even when the signal reached them at different moments (under mpirun, one process after
  // another).
  Status agreeOnStopSignal() {
    float signal = static_cast<float>(requestedStopSignal());
    if (comm_ != nullptr && comm_->size() > 1) {
      std::vector<float> signals(static_cast<size_t>(comm_->size()));
      SHARDC_RETURN_IF_ERROR(comm_->allGather(&signal, signals.data(), 1));
      signal = *std::max_element(signals.begin(), signals.end());
    }
    stopSignal_ = static_cast<int>(signal);
    return Status::ok();
  }

  // After a stop signal: the checkpoint of the last step (unless its --save-every save wrote
  // it), nothing else (--outputs, --export-onnx and --trace are the end of a finished run), and
  // the one line saying where it is.
  Status stopOnSignal() {
    const int64_t step = loop_.step();
    if (lastSaved_ != step)
      SHARDC_RETURN_IF_ERROR(saveStep());
    out_->stopSignal = stopSignal_;
    out_->summary = std::string("shardrun: stopped by ") + stopSignalName(stopSignal_) +
                    " after step " + std::to_string(step) + ": checkpoint at step " +
                    std::to_string(step) + " in " + *options_.saveDir;
    return Status::ok();
  }

  // The parameters --outputs writes: this rank's, and with pipeline stages every stage's (the
  // gathered state holds them all).
  std::vector<std::string> writtenParams(const std::optional<CheckpointContents> &full) const {
    if (!full)
      return loop_.signature().params;
    std::vector<std::string> names;
    for (const auto &[name, tensor] : full->params)
      names.push_back(name);
    return names;
  }

  // The checkpoint (unless the last step saved it), --outputs and --export-onnx.
  Status writeFinalState() {
    // The state is gathered when the ranks hold shards of it (every rank joins, also those that
    // write nothing); a single rank's own values serve as they are.
    const bool save = options_.saveDir && lastSaved_ != loop_.step();
    const bool writesParams =
        options_.outputsDir || options_.exportOnnx || options_.saveAdaptersDir;
    // The final update may have made the state non-finite with a finite loss: nothing of it
    // is written.
    if (save || writesParams)
      SHARDC_RETURN_IF_ERROR(
          checkSoundState("the final state (step " + std::to_string(loop_.step()) + ")"));
    std::optional<CheckpointContents> full;
    // The consolidated snapshot also reports a failed read of state in device memory, which
    // value() cannot.
    if (save || (writesParams && (comm_ != nullptr || shardsAnything(executor_.program()) ||
                                  !executor_.memoryOnHost()))) {
      full.emplace();
      SHARDC_RETURN_IF_ERROR(loop_.consolidatedSnapshot(comm_, &*full));
    }
    if (!lead_)
      return Status::ok();
    const std::function<const HostTensor *(const std::string &)> valueOf =
        [&](const std::string &name) { return full ? &full->params.at(name) : loop_.value(name); };
    if (save)
      SHARDC_RETURN_IF_ERROR(
          saveFullCheckpoint(&*full, options_, run_.seed, run_.frozenWeightsChecksum));
    if (options_.outputsDir) {
      const std::vector<std::string> names = writtenParams(full);
      if (auto failure = writeParams(names, valueOf, *options_.outputsDir))
        return Status::error(failure->message);
      paramsWritten_ = names.size();
    }
    if (run_.adapters) {
      // A sharded run's gathered values, or the single rank's own.
      const auto adapterValue = [&](const std::string &name) -> const HostTensor * {
        if (!full)
          return loop_.value(name);
        auto found = full->params.find(name);
        return found == full->params.end() ? nullptr : &found->second;
      };
      Status status = writePeftAdapters(*options_.saveAdaptersDir, *run_.adapters, adapterValue);
      if (!status.isOk())
        return Status::error("--save-adapters: " + status.message());
    }
    if (run_.exporter) {
      Status status =
          run_.exporter->write(*options_.exportOnnx, valueOf, OnnxExportOptions(), &exported_);
      if (!status.isOk())
        return Status::error("--export-onnx: " + status.message());
    }
    return Status::ok();
  }

  // The loss of `step` is not finite; its update was discarded. Every rank has the same loss,
  // so all of them are here: they agree on the first non-finite value in program order (graph
  // inputs, then ops) over the ranks, and stop with the same message.
  Status nonFiniteLoss(int64_t step, const Executor::NonFiniteSite &site) {
    const program::Program &program = executor_.program();
    const int inputs = program.inputs_size();
    // Where in program order: 1 + input index, or 1 + inputs + op index; 0: nothing found.
    float key = 0;
    if (!site.input.empty()) {
      for (int i = 0; i < inputs; ++i)
        if (program.inputs(i).name() == site.input)
          key = static_cast<float>(1 + i);
    } else if (site.op >= 0) {
      key = static_cast<float>(1 + inputs + site.op);
    }
    int where = rank_;
    SHARDC_RETURN_IF_ERROR(earliestOverRanks(&key, &where));
    std::string found = "no op of rank " + std::to_string(rank_) + " produced one when rerun";
    const int index = static_cast<int>(key) - 1;
    if (key > 0 && index < inputs) {
      found = "rank " + std::to_string(where) + "'s input " +
              quoteForMessage(program.inputs(index).name()) + " already holds one" +
              (step > firstStep_ + 1 ? " (the update of step " + std::to_string(step - 1) +
                                           " made it so)"
                                     : "");
    } else if (key > 0) {
      Executor::NonFiniteSite at;
      at.op = index - inputs;
      at.opName = program.ops(at.op).name();
      at.kernel = program.ops(at.op).kernel();
      found = "rank " + std::to_string(where) + ", " + at.describe() + " produced it first";
    }
    const char *loss = std::isnan(loss_) ? "nan" : loss_ > 0 ? "inf" : "-inf";
    return Status::error(options_.bundle + ": step " + std::to_string(step) + ": the loss is " +
                         loss + ": " + found + "; stopped without applying the step, " +
                         savedSoFar());
  }

  // The ranks' earliest finding: `key` is this rank's (0: none, else 1 + its place in an order
  // every rank shares); on return, the smallest nonzero key over the ranks, and in `rank` the
  // lowest rank that has it. Every rank must call it at the same point (an all-gather outside
  // the program's counted collectives), so that all of them decide alike.
  Status earliestOverRanks(float *key, int *rank) {
    if (comm_ == nullptr || comm_->size() < 2)
      return Status::ok();
    std::vector<float> keys(static_cast<size_t>(comm_->size()));
    SHARDC_RETURN_IF_ERROR(comm_->allGather(key, keys.data(), 1));
    *key = 0;
    for (int r = 0; r < comm_->size(); ++r)
      if (keys[r] > 0 && (*key == 0 || keys[r] < *key)) {
        *key = keys[r];
        *rank = r;
      }
    return Status::ok();
  }

  // Fails, on every rank alike, when some rank's parameters or optimizer state hold a NaN or
  // more infinities than at the start (TrainingLoop::firstUnsoundState): the first such tensor
  // in the signature's order over all ranks is named.
  Status checkSoundState(const std::string &what) {
    int first = -1;
    SHARDC_RETURN_IF_ERROR(loop_.firstUnsoundState(&first));
    float key = static_cast<float>(first + 1); // 0: sound
    int rank = rank_;
    SHARDC_RETURN_IF_ERROR(earliestOverRanks(&key, &rank));
    if (key == 0)
      return Status::ok();
    const TrainingSignature &signature = loop_.signature();
    const size_t index = static_cast<size_t>(key) - 1;
    return nonFiniteState(index < signature.params.size()
                              ? signature.params[index]
                              : signature.optimizerState[index - signature.params.size()],
                          what);
  }

  Status nonFiniteState(const std::string &name, const std::string &what) {
    return Status::error(options_.bundle + ": " + quoteForMessage(name) +
                         " holds values that are not finite after the update of step " +
                         std::to_string(loop_.step()) + " (the loss was finite): " + what +
                         " is not written, " + savedSoFar());
  }

  // "the last checkpoint is step N in DIR" (or that there is none of this run).
  std::string savedSoFar() const {
    if (lastSaved_ >= 0)
      return "the last checkpoint is step " + std::to_string(lastSaved_) + " in " +
             *options_.saveDir;
    if (options_.resumeDir)
      return "nothing was saved since resuming from " + *options_.resumeDir;
    return "nothing was saved";
  }

  // Every rank's timeline, gathered to rank 0, which writes them as one Chrome trace.
  Status writeTrace(const std::string &path) {
    const OpTimeline &timeline = *executor_.timeline();
    std::vector<std::vector<OpSpan>> spans;
    Status status = gatherTimelines(comm_, timeline.spans(), &spans);
    if (!status.isOk())
      return Status::error("--trace: gathering the ranks' timelines: " + status.message());
    if (!lead_)
      return Status::ok();
    std::vector<program::Program> programs(spans.size());
    std::vector<RankTimeline> ranks(spans.size());
    for (size_t r = 0; r < spans.size(); ++r) {
      SHARDC_RETURN_IF_ERROR(programOfRank(run_.bundle->bundle, static_cast<int>(r), &programs[r]));
      ranks[r].rank = static_cast<int>(r);
      ranks[r].program = &programs[r];
      ranks[r].spans = std::move(spans[r]);
    }
    const std::string json = chromeTraceJson(ranks);
    status = writeFileAtomically(path, json.data(), json.size());
    if (!status.isOk())
      return Status::error("--trace: " + status.message());
    traceNote_ = "; wrote the timeline to " + path;
    if (timeline.dropped() > 0)
      traceNote_ += " (rank 0 kept its first " + std::to_string(kTraceSpansPerLane) +
                    " spans per thread, " + std::to_string(timeline.dropped()) + " more dropped)";
    return Status::ok();
  }

  // Rank 0's summary line and every rank's memory report.
  void report() {
    const int64_t ran = loop_.step() - firstStep_;
    const int worldSize = run_.bundle->bundle.world_size();
    if (lead_) {
      std::string &summary = out_->summary;
      summary = "shardrun: trained " + std::to_string(ran) + " step" + (ran == 1 ? "" : "s");
      char text[160];
      if (ran > 0) {
        std::snprintf(text, sizeof text, " (%lld..%lld)", static_cast<long long>(firstStep_ + 1),
                      static_cast<long long>(loop_.step()));
        summary += text;
        if (worldSize > 1)
          summary += " on " + std::to_string(worldSize) + " ranks";
        std::snprintf(text, sizeof text, " in %.2f s, %.1f ms/step, final loss %.9g", seconds_,
                      seconds_ * 1000.0 / static_cast<double>(ran), static_cast<double>(loss_));
        summary += text;
        if (skipNonFinite_)
          summary += "; " + std::to_string(loop_.skipped()) +
                     " step(s) skipped for a non-finite loss in all";
        if (onCpu_)
          summary += "; CPU kernels: " + cpuKernelPaths();
      }
      if (options_.saveDir)
        summary +=
            "; checkpoint at step " + std::to_string(loop_.step()) + " in " + *options_.saveDir;
      if (options_.outputsDir)
        summary += "; wrote " + std::to_string(paramsWritten_) + " parameters to " +
                   *options_.outputsDir;
      summary += traceNote_;
      if (run_.exporter)
        summary +=
            "; exported the trained model to " + *options_.exportOnnx +
            (exported_.externalData.empty() ? ""
                                            : " (parameters in " + exported_.externalData + ")");
    }

    // Steps after the first reuse every tensor: none of them may allocate.
    std::string &details = out_->report.memoryDetails;
    if (ran > 1)
      details += "; " + std::to_string(tracker_->allocationCount() - allocationsAfterFirstStep_) +
                 " allocations after the first step";
    details += "; the data source holds " + std::to_string(batches_.heldBytes()) + " more bytes (" +
               (worldSize > 1 ? "this rank's data" : "the whole data set") +
               ", not part of the plan)";
    if (ran > 0) {
      out_->report.memory = memoryReportOf(executor_, *tracker_);
    } else {
      // Resumed at the final step: no step ran, so the step outputs were never allocated and
      // there is no peak to hold against the plan.
      out_->report.memory.text = "memory: no step ran (the run resumed at step " +
                                 std::to_string(loop_.step()) + " of " +
                                 std::to_string(*options_.steps) +
                                 "): nothing measured to compare with the planned peak of " +
                                 std::to_string(executor_.program().planned_peak_bytes()) +
                                 " bytes";
    }
  }

  TrainingRun &run_;
  const Options &options_;
  const int rank_;
  const bool lead_;
  Communicator *comm_;
  MemoryTracker *tracker_;
  Executor &executor_;
  TrainingLoop &loop_;
  BatchSource &batches_;
  RankOutcome *out_;
  const int64_t firstStep_;
  const bool skipNonFinite_; // --on-nonfinite skip-step
  const bool saveOnSignal_;  // stop signals stop the loop and save (stop_signals.h)
  int stopSignal_ = 0;       // the stop signal the ranks agreed on after a step (0: none)
  float loss_ = NAN;
  size_t paramsWritten_ = 0; // by --outputs
  int64_t lastSaved_ = -1;
  uint64_t allocationsAfterFirstStep_ = 0;
  double seconds_ = 0;
  OnnxExportResult exported_;
  std::string traceNote_; // what the summary says of --trace
  const bool onCpu_;      // the summary names the CPU kernels' paths
};

} // namespace

Status runTrainingRank(TrainingRun &run, int rank, Communicator *comm, MemoryTracker *tracker,
                       const Status &setup, RankOutcome *out) {
  // Nothing of `run` is read before the setup succeeded: a failed setup may have left it empty.
  RankState state;
  Status status = setup.isOk() ? setUpRank(run, rank, comm, tracker, &state) : setup;
  if (comm != nullptr) {
    bool stop = false;
    // (run.options is set whether or not the caller's setup succeeded.)
    status = agreeOnSetup(comm, status, ioTimeoutOf(*run.options), &stop);
    out->stoppedForOtherRank = stop && status.isOk();
    if (stop)
      return status;
  }
  SHARDC_RETURN_IF_ERROR(status);
  out->setupDone = true;
  // Every rank is set up: the splits that create the program's groups (collectives of the
  // world) cannot wait for a rank that stopped. A failure from here on aborts the others.
  status = state.executor->createGroupCommunicators();
  if (!status.isOk())
    return Status::error(run.options->bundle + ": " + status.message());
  return RankTrainer(run, rank, comm, tracker, state, out).train();
}

} // namespace shardrun
