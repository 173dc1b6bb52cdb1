#include "runtime/data/npy_batches.h"

#include "runtime/data/npy.h"
#include "runtime/data/tensor_file_name.h"
#include "runtime/support/quote.h"

#include <cstring>

namespace shardc::runtime {

Status NpyBatchSource::open(const std::string &dataDir, const std::vector<GraphInputSpec> &inputs,
                            NpyBatchSource *out, const BatchSlice &slice) {
  if (inputs.empty())
    return Status::error(dataDir + ": no graph inputs to read batches for");
  if (!slice.whole() && (slice.begin < 0 || slice.rows < 1 || slice.begin > slice.globalRows ||
                         slice.rows > slice.globalRows - slice.begin))
    return Status::error("invalid batch slice: rows [" + std::to_string(slice.begin) + ", " +
                         std::to_string(slice.begin + slice.rows) + ") of " +
                         std::to_string(slice.globalRows));
  // In messages the batch size is the global one; "global" says so when the rank has a part.
  const std::string batchWord = slice.whole() ? "batch size " : "global batch size ";
  NpyBatchSource source;
  std::string firstPath; // the file that fixed the number of batches, for the mismatch message
  std::vector<NpyFileInfo> files;
  // Per input, the whole batch's shape: the input's, with the global batch in its batch dim.
  std::vector<std::vector<int64_t>> blocks;
  for (const GraphInputSpec &input : inputs) {
    std::string what = "input " + quoteForMessage(input.name);
    std::string declared = describeTensorType(input.dtype, input.shape);
    if (input.shape.size() <= input.batchDim)
      return Status::error(what + ": a training input needs a batch dimension, it is " + declared);
    for (int64_t dim : input.shape)
      if (dim < 0)
        return Status::error(what + ": invalid shape " + declared);
    const size_t bd = input.batchDim;
    if (!slice.whole() && input.shape[bd] != slice.rows)
      return Status::error(what + ": batch dimension " + std::to_string(input.shape[bd]) +
                           " is not the rank's " + std::to_string(slice.rows) + " rows");
    int64_t batch = slice.whole() ? input.shape[bd] : slice.globalRows;
    if (batch == 0)
      return Status::error(what + ": batch dimension is 0 in " + declared);
    if (source.batchSize_ != 0 && batch != source.batchSize_)
      return Status::error(what + ": batch dimension " + std::to_string(batch) +
                           " differs from the other inputs' " + std::to_string(source.batchSize_));
    source.batchSize_ = batch;
    std::vector<int64_t> block = input.shape;
    block[bd] = batch;
    if (block[0] == 0)
      return Status::error(what + ": dimension 0 is 0 in " + declared);

    std::string path = dataDir + "/" + tensorNpyFileName(input.name);
    NpyFileInfo info;
    Status status = readNpyInfo(path, &info);
    if (!status.isOk())
      return Status::error(what + ": " + status.message());
    std::string mismatch = path + ": " + what + " is " + declared + " (" +
                           (slice.whole() ? "batch " : "global batch ") + std::to_string(batch) +
                           (bd ? " in dim " + std::to_string(bd) : std::string()) +
                           "), the file holds " + describeTensorType(info.dtype, info.shape);
    if (info.dtype != input.dtype)
      return Status::error(mismatch + ": dtype differs");
    if (info.shape.size() != input.shape.size())
      return Status::error(mismatch + ": rank differs");
    for (size_t d = 1; d < block.size(); ++d)
      if (info.shape[d] != block[d])
        return Status::error(mismatch + ": dimension " + std::to_string(d) + " differs");
    int64_t rows = info.shape[0];
    if (rows == 0 || rows % block[0] != 0)
      return Status::error(path + ": " + what + ": " + std::to_string(rows) +
                           " rows is not a positive multiple of " +
                           (bd ? "its dimension 0, " : "the " + batchWord) +
                           std::to_string(block[0]));
    const int64_t batches = rows / block[0];
    if (source.batches_ != 0 && batches != source.batches_)
      return Status::error(path + ": " + what + ": " + std::to_string(batches) + " batches, but " +
                           firstPath + " has " + std::to_string(source.batches_) +
                           " (every input needs as many batches)");
    if (source.batches_ == 0)
      firstPath = path;
    source.batches_ = batches;
    source.numRows_ = std::max(source.numRows_, rows);
    files.push_back(std::move(info));
    blocks.push_back(std::move(block));
  }
  source.firstRow_ = slice.whole() ? 0 : slice.begin;
  source.rows_ = slice.whole() ? source.batchSize_ : slice.rows;

  // Only this rank's rows of each batch are held, each batch's as one tensor of the input's
  // shape, one after another. Batches are consecutive blocks along dim 0 of the file. With the
  // batch in dim 0, only the rank's rows are read: one range per batch, or the whole file in
  // one read when the rank takes whole batches. With the batch in another dimension (a
  // sequence-first input) the file is read whole and the rank's rows copied out of each block.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string path = dataDir + "/" + tensorNpyFileName(inputs[i].name);
    const size_t bd = inputs[i].batchDim;
    std::vector<int64_t> held = inputs[i].shape; // the batches' tensors one after another
    held.insert(held.begin(), source.batches_);
    HostTensor data = makeHostTensor(inputs[i].dtype, held);
    const size_t batchBytes = data.bytes.size() / static_cast<size_t>(source.batches_);
    if (bd == 0 && source.rows_ == source.batchSize_) {
      SHARDC_RETURN_IF_ERROR(readNpyRows(path, files[i], 0, files[i].shape[0], data.bytes.data()));
    } else if (bd == 0) {
      for (int64_t b = 0; b < source.batches_; ++b)
        SHARDC_RETURN_IF_ERROR(
            readNpyRows(path, files[i], b * source.batchSize_ + source.firstRow_, source.rows_,
                        data.bytes.data() + static_cast<size_t>(b) * batchBytes));
    } else {
      // A block is [outer, B, inner] (outer counts dim 0), the rank's part [outer, rows, inner].
      size_t inner = dtypeSize(inputs[i].dtype);
      for (size_t d = bd + 1; d < blocks[i].size(); ++d)
        inner *= static_cast<size_t>(blocks[i][d]);
      const size_t take = inner * static_cast<size_t>(source.rows_);
      const size_t outer = take ? batchBytes / take : 0;
      const size_t blockBytes = outer * inner * static_cast<size_t>(source.batchSize_);
      std::vector<uint8_t> file(blockBytes * static_cast<size_t>(source.batches_));
      SHARDC_RETURN_IF_ERROR(readNpyRows(path, files[i], 0, files[i].shape[0], file.data()));
      for (int64_t b = 0; b < source.batches_; ++b) {
        const uint8_t *from = file.data() + static_cast<size_t>(b) * blockBytes +
                              static_cast<size_t>(source.firstRow_) * inner;
        uint8_t *to = data.bytes.data() + static_cast<size_t>(b) * batchBytes;
        for (size_t o = 0; o < outer; ++o)
          std::memcpy(to + o * take, from + o * inner * static_cast<size_t>(source.batchSize_),
                      take);
      }
    }
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
  // N is a multiple of B, so a batch never straddles the wrap-around; data_ holds the rank's
  // rows of each batch one after another.
  int64_t batchIndex = (step - 1) % batchesPerEpoch();
  reshapeHostTensor(inputs_[input].dtype, inputs_[input].shape, out);
  if (!out->bytes.empty())
    std::memcpy(out->bytes.data(),
                data_[input].bytes.data() + static_cast<size_t>(batchIndex) * out->bytes.size(),
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
