#include "tools/shardrun/tensor_files.h"

#include "runtime/data/npy.h"
#include "runtime/data/tensor_file_name.h"
#include "runtime/loader/bundle.h"
#include "runtime/support/file_io.h"
#include "runtime/support/quote.h"

#include <filesystem>

namespace shardrun {

using namespace shardc::runtime;

std::optional<Failure>
checkDistinctFileNames(const google::protobuf::RepeatedPtrField<shardc::program::Binding> &bindings,
                       const char *kind, const std::string &bundle) {
  std::map<std::string, std::string> owner;
  for (const auto &binding : bindings) {
    std::string file = tensorNpyFileName(binding.name());
    auto [it, inserted] = owner.emplace(file, binding.name());
    if (!inserted)
      return error(bundle + ": graph " + kind + "s " + quoteForMessage(it->second) + " and " +
                   quoteForMessage(binding.name()) + " both map to the file name '" + file + "'");
  }
  return std::nullopt;
}

std::optional<Failure> readInputs(const shardc::program::Program &program,
                                  const std::string &dataDir,
                                  std::map<std::string, HostTensor> *inputs,
                                  std::map<std::string, HostTensor> *inPlaceState) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dataDir, ec))
    return error(dataDir + ": " +
                 (std::filesystem::exists(dataDir, ec) ? "not a directory" : "no such directory") +
                 " (given to --data)");
  for (const auto &binding : program.inputs()) {
    std::string file = tensorNpyFileName(binding.name());
    std::string path = joinPath(dataDir, file);
    if (!pathExists(path))
      return error(dataDir + ": no '" + file + "' for graph input " +
                   quoteForMessage(binding.name()));
    const MemoryCharge charge = currentMemoryCharge();
    MemoryScope temporary(binding.in_place() ? nullptr : charge.tracker, charge.use);
    HostTensor tensor;
    Status status = readNpy(path, &tensor);
    if (!status.isOk())
      return error(status.message());
    status = checkProgramInput(program, binding.name(), tensor);
    if (!status.isOk())
      return error(path + ": " + status.message());
    (*(binding.in_place() ? inPlaceState : inputs))[binding.name()] = std::move(tensor);
  }
  return std::nullopt;
}

namespace {

std::optional<Failure> createOutputDirectory(const std::string &outputsDir) {
  Status status = prepareOutputDirectory(outputsDir);
  if (!status.isOk())
    return error(status.message());
  return std::nullopt;
}

} // namespace

std::optional<Failure> writeOutputs(const Executor &executor, const std::string &outputsDir,
                                    const std::map<std::string, HostTensor> &outputs) {
  if (auto failure = createOutputDirectory(outputsDir))
    return failure;
  std::error_code ec;
  if (!std::filesystem::is_directory(outputsDir, ec))
    return error(outputsDir + ": not a directory");
  for (const auto &binding : executor.program().outputs()) {
    std::string path = joinPath(outputsDir, tensorNpyFileName(binding.name()));
    // State updated in place is not copied out by a run: it is read where it lies (through
    // the device, when that is not host memory).
    Status status = Status::ok();
    if (!binding.in_place()) {
      status = writeNpy(path, outputs.at(binding.name()));
    } else if (executor.memoryOnHost()) {
      status = writeNpy(path, copyToHostTensor(*executor.stateView(binding.name())));
    } else {
      const Tensor *state = executor.stateView(binding.name());
      HostTensor copy = makeHostTensor(state->dtype, state->shape);
      status = executor.readState(binding.name(), copy.bytes.data(), copy.bytes.size());
      if (status.isOk())
        status = writeNpy(path, copy);
    }
    if (!status.isOk())
      return error(status.message());
  }
  return std::nullopt;
}

std::optional<Failure>
writeParams(const std::vector<std::string> &names,
            const std::function<const HostTensor *(const std::string &)> &valueOf,
            const std::string &outputsDir) {
  if (auto failure = createOutputDirectory(outputsDir))
    return failure;
  for (const std::string &name : names) {
    Status status = writeNpy(joinPath(outputsDir, tensorNpyFileName(name)), *valueOf(name));
    if (!status.isOk())
      return error(status.message());
  }
  return std::nullopt;
}

} // namespace shardrun
