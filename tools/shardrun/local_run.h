// Running a bundle in this process: a single rank on the calling thread, or the ranks of a
// multi-rank bundle as threads (backend "local"), each with its own executor, training loop,
// data source and MemoryTracker.
#pragma once

#include "tools/shardrun/options.h"

#include <optional>

namespace shardrun {

// `expectedWorldSize` (0: any) is the world size the caller needs the bundle to have: 1 for a
// run under an MPI launcher that started a single process.
std::optional<Failure> runInProcess(const Options &options, int expectedWorldSize = 0);

} // namespace shardrun
