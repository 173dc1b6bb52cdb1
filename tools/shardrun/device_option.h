// shardrun --device: the device each rank's executor runs on.
#pragma once

#include "runtime/device/device.h"
#include "runtime/executor/executor.h"
#include "runtime/memory/memory_report.h"
#include "runtime/support/status.h"
#include "tools/shardrun/options.h"

#include <memory>

namespace shardrun {

// The device --device names for one rank: null for cpu (the executor's host memory, counted
// by the rank's memory tracker), else a device of the rank's own. Every rank of a process uses
// GPU 0: ranks run as threads sharing it.
shardc::runtime::Status createRankDevice(const Options &options, std::unique_ptr<shardc::runtime::Device> *out);

// The end-of-run memory comparison: of host memory, or of the device's when the executor runs
// on one.
shardc::runtime::PeakMemoryReport memoryReportOf(const shardc::runtime::Executor &executor,
                                                 const shardc::runtime::MemoryTracker &tracker);

} // namespace shardrun
