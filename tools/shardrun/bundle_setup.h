// Loading the bundle to run and the checks that do not depend on how its ranks are run.
#pragma once

#include "runtime/loader/bundle.h"
#include "runtime/support/memory_tracker.h"
#include "tools/shardrun/options.h"

#include <optional>

namespace shardrun {

// Reads options.bundle's program.pb (enough to know its world size). *trainingLoop says whether
// the run is the training loop (--steps on a training bundle) rather than one run of the
// program.
std::optional<Failure> readRunBundle(const Options &options, shardc::runtime::LoadedBundle *bundle,
                                     bool *trainingLoop);

// Validates the bundle read by readRunBundle and loads its weights, counted in
// `weightsTracker` (null: not counted).
std::optional<Failure> loadRunBundle(const Options &options, bool trainingLoop,
                                     shardc::runtime::MemoryTracker *weightsTracker,
                                     shardc::runtime::LoadedBundle *bundle);

// Sets the CPU kernels' threads (--threads, or, when several ranks run as threads of this
// process, one each) and how they multiply bf16 operands (--bf16-products): a failure when
// native products are asked for on a CPU without them.
std::optional<Failure> setCpuKernelOptions(const Options &options, int ranksInProcess);

} // namespace shardrun
