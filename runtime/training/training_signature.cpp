#include "runtime/training/training_signature.h"

#include "runtime/executor/host_tensor.h"
#include "runtime/support/quote.h"

#include <map>
#include <set>

namespace shardc::runtime {

namespace {

const char *const kOptimizerStateSuffixes[] = {".exp_avg", ".exp_avg_sq", ".momentum_buffer"};

// The trained parameter `name` is optimizer state of, or "" when it is none.
std::string optimizerStateOwner(const std::string &name, const std::set<std::string> &params) {
  for (const char *suffix : kOptimizerStateSuffixes) {
    std::string s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      std::string owner = name.substr(0, name.size() - s.size());
      if (params.count(owner))
        return owner;
    }
  }
  return "";
}

std::string describeBuffer(const program::Buffer &buffer) {
  return describeTensorType(buffer.dtype(), buffer.shape());
}

bool sameType(const program::Buffer &a, const program::Buffer &b) {
  return a.dtype() == b.dtype() &&
         std::vector<int64_t>(a.shape().begin(), a.shape().end()) ==
             std::vector<int64_t>(b.shape().begin(), b.shape().end());
}

} // namespace

Status deriveTrainingSignature(const program::Program &program, TrainingSignature *out) {
  TrainingSignature signature;
  if (program.state_init_size() == 0)
    return Status::error("training program has no trained parameters (state_init is empty)");
  std::set<std::string> params;
  for (const program::StateInit &init : program.state_init()) {
    signature.params.push_back(init.name());
    params.insert(init.name());
  }

  std::map<std::string, const program::Buffer *> inputs, outputs;
  for (const program::Binding &b : program.inputs())
    inputs[b.name()] = &program.buffers(b.buffer());
  for (const program::Binding &b : program.outputs())
    outputs[b.name()] = &program.buffers(b.buffer());

  auto requireScalar = [&](const std::map<std::string, const program::Buffer *> &map,
                           const char *kind, const char *name, program::DType dtype) -> Status {
    auto it = map.find(name);
    if (it == map.end())
      return Status::error(std::string("training program has no ") + kind + " '" + name + "'");
    if (it->second->dtype() != dtype || it->second->shape_size() != 0)
      return Status::error(std::string("training program: ") + kind + " '" + name +
                           "' is " + describeBuffer(*it->second) + ", expected " +
                           describeTensorType(dtype, std::vector<int64_t>{}));
    return Status::ok();
  };
  SHARDC_RETURN_IF_ERROR(requireScalar(inputs, "input", kStepInputName, program::I64));
  SHARDC_RETURN_IF_ERROR(requireScalar(inputs, "input", kLrInputName, program::F32));
  SHARDC_RETURN_IF_ERROR(requireScalar(outputs, "output", kLossOutputName, program::F32));
  if (inputs.count(kSeedInputName)) {
    SHARDC_RETURN_IF_ERROR(requireScalar(inputs, "input", kSeedInputName, program::I64));
    signature.hasSeed = true;
  }

  for (const program::Binding &b : program.inputs()) {
    const std::string &name = b.name();
    bool carried = false;
    if (params.count(name)) {
      carried = true;
    } else if (!optimizerStateOwner(name, params).empty()) {
      signature.optimizerState.push_back(name);
      carried = true;
    } else if (name == kStepInputName) {
      carried = true;
    } else if (name != kLrInputName && name != kSeedInputName) {
      const program::Buffer &buffer = program.buffers(b.buffer());
      std::vector<int64_t> shape(buffer.shape().begin(), buffer.shape().end());
      signature.batchInputs.push_back({name, buffer.dtype(), std::move(shape)});
    }
    if (!carried)
      continue;
    // What the step carries forward must come back, unchanged in type, as an output.
    auto it = outputs.find(name);
    if (it == outputs.end())
      return Status::error("training program: input " + quoteForMessage(name) +
                           " is carried from step to step but is not an output");
    if (!sameType(*inputs[name], *it->second))
      return Status::error("training program: output " + quoteForMessage(name) + " is " +
                           describeBuffer(*it->second) + " but the input is " +
                           describeBuffer(*inputs[name]));
  }
  for (const std::string &param : signature.params)
    if (!inputs.count(param))
      return Status::error("training program: state_init names " + quoteForMessage(param) +
                           ", which is not an input");
  *out = std::move(signature);
  return Status::ok();
}

} // namespace shardc::runtime
