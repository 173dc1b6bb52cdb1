// One run of a single-rank program on inputs read from .npy files: a forward bundle, or one step
// of a training bundle without --steps (every input of the step from --data, every output to
// --outputs).
#pragma once

#include "runtime/loader/bundle.h"
#include "runtime/support/memory_tracker.h"
#include "tools/shardrun/options.h"

#include <optional>

namespace shardrun {

// `tracker` counts the run's memory (the weights are already in it).
std::optional<Failure> runOnce(const Options &options, const shardc::runtime::LoadedBundle &bundle,
                               shardc::runtime::MemoryTracker *tracker);

} // namespace shardrun
