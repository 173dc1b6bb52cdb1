// One rank's training loop (shardrun --steps): its executor, training loop and data source, the
// steps, and its part in checkpoints and the final outputs. The same code runs a single-rank
// bundle (no communicator), each thread of a local world, and each process under MPI.
//
// Rank 0 alone prints progress, writes the metrics, checkpoints, --outputs and --export-onnx;
// sharded tensors are gathered from every rank first (collectives every rank joins at the same
// step), so that what it writes is exactly what a single-rank run writes.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/support/memory_tracker.h"
#include "runtime/support/status.h"
#include "tools/shardrun/run_report.h"
#include "tools/shardrun/training_setup.h"

#include <string>

namespace shardrun {

struct RankOutcome {
  // Another rank's setup failed, and that rank reports it: this one stopped without running.
  bool stoppedForOtherRank = false;
  // Every rank finished its setup: a later failure leaves the others waiting in a collective.
  bool setupDone = false;
  std::string summary; // rank 0: "shardrun: trained 30 steps (1..30) in ..." (no newline)
  // The stop signal the ranks agreed to stop on (--save-on-signal), 0 when none stopped the
  // run; the summary then says where the checkpoint is.
  int stopSignal = 0;
  RankReport report;   // memory and communication, checked against the plan by the caller
};

// Runs rank `rank` of `run` (programs[rank] of the bundle), counting its memory in `tracker`
// (where the caller has already counted the weights). `comm` is the rank's communicator, null
// for a single-rank bundle. `setup` is the result of what the caller prepared for this rank
// (prepareTraining, under MPI): a failure there still joins the other ranks' agreement on
// whether setup succeeded everywhere (runtime/training/setup_agreement.h).
// Errors carry no rank; the caller adds it.
shardc::runtime::Status runTrainingRank(TrainingRun &run, int rank,
                                        shardc::runtime::Communicator *comm,
                                        shardc::runtime::MemoryTracker *tracker,
                                        const shardc::runtime::Status &setup, RankOutcome *out);

} // namespace shardrun
