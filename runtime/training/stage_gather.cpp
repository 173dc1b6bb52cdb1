#include "runtime/training/stage_gather.h"

#include <cstring>
#include <string>
#include <vector>

namespace shardc::runtime {

PipelinePlace pipelinePlaceOf(const program::Program &program) {
  PipelinePlace place;
  for (int a = 0; a < program.mesh_axes_size(); ++a)
    if (program.mesh_axes(a).name() == "pp") {
      place.axis = a;
      place.stages = program.mesh_axes(a).size();
      place.stage = a < program.mesh_coordinate_size() ? program.mesh_coordinate(a) : 0;
    }
  return place;
}

namespace {

// name, dtype, rank, dims, byte count, bytes; for each tensor of params then optimizerState.
void appendRaw(std::vector<uint8_t> &out, const void *data, size_t size) {
  const auto *bytes = static_cast<const uint8_t *>(data);
  out.insert(out.end(), bytes, bytes + size);
}

void appendU64(std::vector<uint8_t> &out, uint64_t v) { appendRaw(out, &v, sizeof v); }

std::vector<uint8_t> serialize(const CheckpointContents &contents) {
  std::vector<uint8_t> out;
  for (const auto *tensors : {&contents.params, &contents.optimizerState}) {
    appendU64(out, tensors->size());
    for (const auto &[name, t] : *tensors) {
      appendU64(out, name.size());
      appendRaw(out, name.data(), name.size());
      appendU64(out, static_cast<uint64_t>(t.dtype));
      appendU64(out, t.shape.size());
      for (int64_t d : t.shape)
        appendU64(out, static_cast<uint64_t>(d));
      appendU64(out, t.bytes.size());
      appendRaw(out, t.bytes.data(), t.bytes.size());
    }
  }
  return out;
}

class Reader {
public:
  explicit Reader(const std::vector<uint8_t> &in) : in_(in) {}
  bool u64(uint64_t *v) { return raw(v, sizeof *v); }
  bool raw(void *dst, size_t size) {
    if (size > in_.size() - at_)
      return false;
    std::memcpy(dst, in_.data() + at_, size);
    at_ += size;
    return true;
  }

private:
  const std::vector<uint8_t> &in_;
  size_t at_ = 0;
};

Status deserializeInto(const std::vector<uint8_t> &in, int stage, CheckpointContents *contents) {
  Reader r(in);
  const Status bad = Status::error("the tensors of pipeline stage " + std::to_string(stage) +
                                   " arrived damaged");
  for (auto *tensors : {&contents->params, &contents->optimizerState}) {
    uint64_t count = 0;
    if (!r.u64(&count))
      return bad;
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t size = 0, dtype = 0, rank = 0, bytes = 0;
      if (!r.u64(&size) || size > in.size())
        return bad;
      std::string name(size, '\0');
      if (!r.raw(name.data(), size) || !r.u64(&dtype) || !r.u64(&rank) || rank > 64)
        return bad;
      std::vector<int64_t> shape(rank);
      for (int64_t &d : shape) {
        uint64_t v = 0;
        if (!r.u64(&v))
          return bad;
        d = static_cast<int64_t>(v);
      }
      if (!r.u64(&bytes) || bytes > in.size())
        return bad;
      HostTensor t;
      t.dtype = static_cast<DType>(dtype);
      t.shape = shape;
      t.bytes.resize(bytes);
      if (!r.raw(t.bytes.data(), bytes))
        return bad;
      tensors->emplace(name, std::move(t)); // a name already here (tied) keeps its value
    }
  }
  return Status::ok();
}

} // namespace

Status gatherStages(Communicator *pp, const program::Program &program,
                    CheckpointContents *contents) {
  const PipelinePlace place = pipelinePlaceOf(program);
  if (place.stages <= 1)
    return Status::ok();
  for (int a = 0; a < program.mesh_coordinate_size(); ++a)
    if (a != place.axis && program.mesh_coordinate(a) != 0)
      return Status::ok();
  if (pp == nullptr)
    return Status::error("no communicator along the pipeline axis to gather the stages with");
  if (place.stage > 0) {
    std::vector<uint8_t> message = serialize(*contents);
    uint64_t size = message.size();
    SHARDC_RETURN_IF_ERROR(pp->transfer(&size, sizeof size, 0, nullptr, 0, Communicator::kNoPeer,
                                        CommDType::Bytes));
    return pp->transfer(message.data(), message.size(), 0, nullptr, 0, Communicator::kNoPeer,
                        CommDType::Bytes);
  }
  for (int s = 1; s < place.stages; ++s) {
    uint64_t size = 0;
    SHARDC_RETURN_IF_ERROR(
        pp->transfer(nullptr, 0, Communicator::kNoPeer, &size, sizeof size, s, CommDType::Bytes));
    std::vector<uint8_t> message(size);
    SHARDC_RETURN_IF_ERROR(pp->transfer(nullptr, 0, Communicator::kNoPeer, message.data(),
                                        message.size(), s, CommDType::Bytes));
    SHARDC_RETURN_IF_ERROR(deserializeInto(message, s, contents));
  }
  return Status::ok();
}

} // namespace shardc::runtime
