#include "runtime/data/npy_batches.h"

#include "runtime/data/npy.h"
#include "runtime/data/tensor_file_name.h"
#include "runtime/support/quote.h"

#include <cstring>

namespace shardc::runtime {

Status NpyBatchSource::open(const std::string &dataDir, const std::vector<GraphInputSpec> &inputs,
                            NpyBatchSource *out) {
  if (inputs.empty())
    return Status::error(dataDir + ": no graph inputs to read batches for");
  NpyBatchSource source;
  std::string firstPath; // the file that fixed N, for the mismatch message
  for (const GraphInputSpec &input : inputs) {
    std::string what = "input " + quoteForMessage(input.name);
    std::string declared = describeTensorType(input.dtype, input.shape);
    if (input.shape.empty())
      return Status::error(what + ": a training input needs a batch dimension, it is " + declared);
    for (int64_t dim : input.shape)
      if (dim < 0)
        return Status::error(what + ": invalid shape " + declared);
    int64_t batch = input.shape[0];
    if (batch == 0)
      return Status::error(what + ": batch dimension is 0 in " + declared);
    if (source.batchSize_ != 0 && batch != source.batchSize_)
      return Status::error(what + ": batch dimension " + std::to_string(batch) +
                           " differs from the other inputs' " + std::to_string(source.batchSize_));
    source.batchSize_ = batch;

    std::string path = dataDir + "/" + tensorNpyFileName(input.name);
    HostTensor data;
    Status status = readNpy(path, &data);
    if (!status.isOk())
      return Status::error(what + ": " + status.message());
    std::string mismatch = path + ": " + what + " is " + declared + " (batch " +
                           std::to_string(batch) + "), the file holds " + data.describe();
    if (data.dtype != input.dtype)
      return Status::error(mismatch + ": dtype differs");
    if (data.shape.size() != input.shape.size())
      return Status::error(mismatch + ": rank differs");
    for (size_t d = 1; d < input.shape.size(); ++d)
      if (data.shape[d] != input.shape[d])
        return Status::error(mismatch + ": dimension " + std::to_string(d) + " differs");
    int64_t rows = data.shape[0];
    if (rows == 0 || rows % batch != 0)
      return Status::error(path + ": " + what + ": " + std::to_string(rows) +
                           " rows is not a positive multiple of the batch size " +
                           std::to_string(batch));
    if (source.numRows_ != 0 && rows != source.numRows_)
      return Status::error(path + ": " + what + ": " + std::to_string(rows) + " rows, but " +
                           firstPath + " has " + std::to_string(source.numRows_) +
                           " (every input needs the same number of rows)");
    if (source.numRows_ == 0)
      firstPath = path;
    source.numRows_ = rows;
    source.data_.push_back(std::move(data));
  }
  source.inputs_ = inputs;
  *out = std::move(source);
  return Status::ok();
}

Status NpyBatchSource::batch(int64_t step, std::vector<HostTensor> *out) const {
  if (data_.empty())
    return Status::error("batch requested from a data source that was not opened");
  out->resize(inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i)
    SHARDC_RETURN_IF_ERROR(batchOf(step, i, &(*out)[i]));
  return Status::ok();
}

Status NpyBatchSource::batchOf(int64_t step, size_t input, HostTensor *out) const {
  if (data_.empty())
    return Status::error("batch requested from a data source that was not opened");
  if (step < 1)
    return Status::error("batch step " + std::to_string(step) + " is invalid (steps start at 1)");
  if (input >= inputs_.size())
    return Status::error("batch requested for input " + std::to_string(input) + " of " +
                         std::to_string(inputs_.size()));
  // N is a multiple of B, so a batch never straddles the wrap-around.
  int64_t first = ((step - 1) % batchesPerEpoch()) * batchSize_;
  reshapeHostTensor(inputs_[input].dtype, inputs_[input].shape, out);
  size_t rowBytes = out->bytes.size() / static_cast<size_t>(batchSize_);
  if (!out->bytes.empty())
    std::memcpy(out->bytes.data(),
                data_[input].bytes.data() + static_cast<size_t>(first) * rowBytes,
                out->bytes.size());
  return Status::ok();
}

uint64_t NpyBatchSource::heldBytes() const {
  uint64_t bytes = 0;
  for (const HostTensor &tensor : data_)
    bytes += tensor.bytes.size();
  return bytes;
}

} // namespace shardc::runtime
