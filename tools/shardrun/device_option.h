// shardrun --device: the device each rank's executor runs on.
#pragma once

#include "runtime/device/device.h"
#include "runtime/executor/executor.h"
#include "runtime/memory/memory_report.h"
#include "runtime/support/status.h"
#include "tools/shardrun/options.h"

#include <memory>

namespace shardrun {

// The device --device names, one per rank: the CPU device (host memory, counted by the rank's
// memory tracker too) or the CUDA device. Every rank of a process uses GPU 0: ranks run as
// threads sharing it.
shardc::runtime::Status createRankDevice(const Options &options, std::unique_ptr<shardc::runtime::Device> *out);

// The end-of-run memory comparison: of host memory (the tracker's count), or of the device's
// when its memory is not the host's.
shardc::runtime::PeakMemoryReport memoryReportOf(const shardc::runtime::Executor &executor,
                                                 const shardc::runtime::MemoryTracker &tracker);

} // namespace shardrun
