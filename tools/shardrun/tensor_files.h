// The .npy files shardrun reads and writes: graph inputs from --data, graph outputs and trained
// parameters to --outputs, each named by tensorNpyFileName.
#pragma once

#include "runtime/executor/executor.h"
#include "runtime/executor/host_tensor.h"
#include "runtime/program/program.pb.h"
#include "tools/shardrun/options.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardrun {

using shardc::runtime::Executor;
using shardc::runtime::HostTensor;

// Two tensors whose names map to the same file would silently overwrite each other. `kind` is
// "input" or "output".
std::optional<Failure>
checkDistinctFileNames(const google::protobuf::RepeatedPtrField<shardc::program::Binding> &bindings,
                       const char *kind, const std::string &bundle);

// DIR/<name>.npy for every graph input of `program` (validated), checked against it: before
// the executor exists, so a missing or wrong file is reported before the arena is allocated.
// State the program updates in place (Binding.in_place) goes to `inPlaceState` instead, read
// outside the program's memory (no MemoryScope): a temporary the caller copies into the
// executor's arena (Executor::setState) and releases, as a checkpoint's tensors are.
std::optional<Failure> readInputs(const shardc::program::Program &program,
                                  const std::string &dataDir,
                                  std::map<std::string, HostTensor> *inputs,
                                  std::map<std::string, HostTensor> *inPlaceState);

// DIR2/<name>.npy for every graph output (DIR2 created if needed).
std::optional<Failure> writeOutputs(const Executor &executor, const std::string &outputsDir,
                                    const std::map<std::string, HostTensor> &outputs);

// DIR2/<name>.npy for each of `names`, holding valueOf(name).
std::optional<Failure>
writeParams(const std::vector<std::string> &names,
            const std::function<const HostTensor *(const std::string &)> &valueOf,
            const std::string &outputsDir);

} // namespace shardrun
