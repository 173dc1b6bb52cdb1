// shardrun: executes a compiled shardc bundle.
//
//   shardrun BUNDLE --data DIR --outputs DIR2 [--threads N]
//   shardrun TRAIN_BUNDLE --steps K (--data DIR | --tokens FILE.bin) [loop options]
//            [--export-onnx FILE] [--comm local|mpi|nccl] [--comm-timeout S]
//            [--io-timeout S]
//
// Reads each graph input from DIR/<name>.npy, runs the program, writes each graph output to
// DIR2/<name>.npy (names mapped to file names by tensorNpyFileName). With --steps, a training
// bundle runs the training loop (runtime/training): K steps on batches from DIR or a token
// file, with an lr schedule, metrics, checkpoints and resume, and can write the trained model
// as ONNX at the end (runtime/export). A bundle compiled for several ranks trains with each
// rank a thread of this process (local_run.h) or, under mpirun/srun, a process (mpi_run.h).
// Errors are one line, "shardrun: error: ...", exit 1; usage errors exit 2.
#include "tools/shardrun/comm_options.h"
#include "tools/shardrun/local_run.h"
#include "tools/shardrun/mpi_run.h"
#include "tools/shardrun/options.h"
#include "tools/shardrun/stop_signals.h"

#include <cstdio>
#include <exception>
#include <optional>
#include <string>

namespace {

using namespace shardrun;

std::optional<Failure> runShardrun(const Options &options) {
  CommBackend backend = CommBackend::Local;
  if (auto failure = chooseCommBackend(options, &backend))
    return failure;
  switch (backend) {
  case CommBackend::Local:
    return runInProcess(options);
  case CommBackend::Mpi:
  case CommBackend::Nccl:
    return runUnderMpi(options, backend);
  }
  return std::nullopt;
}

int report(const Failure &failure) {
  // Always one line; usage errors carry the hint on the same line. An empty message was
  // printed already (by another rank under MPI, or by this one before its abort).
  if (!failure.message.empty())
    std::fprintf(stderr, "shardrun: error: %s%s\n", failure.message.c_str(),
                 failure.exitCode == kExitUsage ? " (see 'shardrun --help')" : "");
  return failure.exitCode;
}

} // namespace

int main(int argc, char **argv) {
  try {
    Options options;
    if (auto failure = parseArgs(argc, argv, &options))
      return report(*failure);
    if (options.help) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    // Before anything is loaded: a job preempted during its setup stops after its first step.
    if (options.steps && savesOnSignal(options))
      installStopSignalHandlers();
    if (auto failure = runShardrun(options))
      return report(*failure);
    return 0;
  } catch (const std::exception &e) {
    return report(error(std::string("internal error: ") + e.what()));
  } catch (...) {
    return report(error("internal error: unknown exception"));
  }
}
