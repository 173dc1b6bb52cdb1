#include "runtime/training/training_signature.h"

#include "runtime/executor/host_tensor.h"
#include "runtime/loader/sharding_validation.h"
#include "runtime/program/bindings.h"
#include "runtime/support/quote.h"

#include <google/protobuf/util/message_differencer.h>

#include <map>
#include <set>

namespace shardc::runtime {

namespace {

const char *const kOptimizerStateSuffixes[] = {".exp_avg", ".exp_avg_sq", ".momentum_buffer"};

// Dynamic loss scaling's state (--precision fp16): scalars carried from step to step, starting
// at zero, saved with the optimizer state.
bool isLossScaleState(const std::string &name) { return name.rfind("loss_scale.", 0) == 0; }

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
  return a.dtype() == b.dtype() && std::vector<int64_t>(a.shape().begin(), a.shape().end()) ==
                                       std::vector<int64_t>(b.shape().begin(), b.shape().end());
}

bool sameSharding(const program::Binding &a, const program::Binding &b) {
  if (a.has_sharding() != b.has_sharding())
    return false;
  return !a.has_sharding() ||
         google::protobuf::util::MessageDifferencer::Equals(a.sharding(), b.sharding());
}

// The rank's rows of the global batch; every batch input must have that many.
Status deriveBatchSlice(const program::Program &program,
                        const std::vector<GraphInputSpec> &batchInputs, BatchSlice *out) {
  if (program.global_batch_rows() == 0)
    return Status::ok(); // the whole batch
  const int64_t begin = program.batch_begin(), rows = program.batch_rows(),
                global = program.global_batch_rows();
  if (global < 0 || begin < 0 || rows < 1 || begin > global || rows > global - begin)
    return Status::error("training program: batch rows [" + std::to_string(begin) + ", " +
                         std::to_string(begin + rows) + ") do not lie inside the global batch of " +
                         std::to_string(global) + " rows");
  for (const GraphInputSpec &input : batchInputs)
    if (input.shape.size() <= input.batchDim || input.shape[input.batchDim] != rows)
      return Status::error("training program: batch input " + quoteForMessage(input.name) + " is " +
                           describeTensorType(input.dtype, input.shape) + ", but the rank takes " +
                           std::to_string(rows) + " rows of each batch (along dim " +
                           std::to_string(input.batchDim) + ")");
  *out = BatchSlice{begin, rows, global};
  return Status::ok();
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
      return Status::error(std::string("training program: ") + kind + " '" + name + "' is " +
                           describeBuffer(*it->second) + ", expected " +
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
    } else if (!optimizerStateOwner(name, params).empty() || isLossScaleState(name)) {
      signature.optimizerState.push_back(name);
      carried = true;
    } else if (name == kStepInputName) {
      carried = true;
    } else if (name != kLrInputName && name != kSeedInputName) {
      const program::Buffer &buffer = program.buffers(b.buffer());
      std::vector<int64_t> shape(buffer.shape().begin(), buffer.shape().end());
      if (b.batch_dim() < 0 || static_cast<size_t>(b.batch_dim()) >= std::max<size_t>(shape.size(), 1))
        return Status::error("training program: batch input " + quoteForMessage(name) +
                             " has batch_dim " + std::to_string(b.batch_dim()) + ", but it is " +
                             describeBuffer(buffer));
      signature.batchInputs.push_back(
          {name, buffer.dtype(), std::move(shape), static_cast<size_t>(b.batch_dim())});
    }
    if (b.has_sharding()) {
      if (!carried)
        return Status::error("training program: input " + quoteForMessage(name) +
                             " is sharded, but only parameters and optimizer state can be");
      Status status =
          checkSharding(b.sharding(), program.buffers(b.buffer()), program);
      if (!status.isOk())
        return Status::error("training program: input " + quoteForMessage(name) + ": " +
                             status.message());
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
    if (!sameSharding(b, *findBinding(program.outputs(), name)))
      return Status::error("training program: output " + quoteForMessage(name) +
                           " is not sharded like the input");
  }
  for (const std::string &param : signature.params)
    if (!inputs.count(param))
      return Status::error("training program: state_init names " + quoteForMessage(param) +
                           ", which is not an input");
  SHARDC_RETURN_IF_ERROR(deriveBatchSlice(program, signature.batchInputs, &signature.batchSlice));
  *out = std::move(signature);
  return Status::ok();
}

} // namespace shardc::runtime
