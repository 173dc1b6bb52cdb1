#include "tools/shardrun/device_option.h"

namespace shardrun {

shardc::runtime::Status createRankDevice(const Options &options, std::unique_ptr<shardc::runtime::Device> *out) {
  out->reset();
  shardc::runtime::DeviceChoice choice = shardc::runtime::DeviceChoice::Cpu;
  SHARDC_RETURN_IF_ERROR(shardc::runtime::parseDeviceChoice(options.device.value_or("cpu"), &choice));
  return shardc::runtime::createDevice(choice, 0, out);
}

shardc::runtime::PeakMemoryReport memoryReportOf(const shardc::runtime::Executor &executor,
                                                 const shardc::runtime::MemoryTracker &tracker) {
  // Host memory is counted by the tracker as the plan counts it; a device's by the device.
  if (executor.memoryOnHost())
    return shardc::runtime::comparePeakMemory(executor.program(), tracker);
  const std::string name = executor.device()->describe();
  return shardc::runtime::compareDevicePeakMemory(executor.program(), tracker, name.c_str(),
                                                  executor.device()->memoryCounters().peak,
                                                  executor.workspaceBytes());
}

} // namespace shardrun
