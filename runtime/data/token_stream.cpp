#include "runtime/data/token_stream.h"

#include "runtime/support/file_io.h"
#include "runtime/support/philox.h"

#include <cstring>
#include <limits>

// The token file is little-endian and is copied into uint16s as it is.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "token file reading assumes a little-endian host");

namespace shardc::runtime {

Status TokenStream::open(const std::string &path, int64_t batchSize, int64_t seqLen, uint64_t seed,
                         TokenStream *out) {
  if (batchSize < 1 || seqLen < 1)
    return Status::error(path + ": batch size and sequence length must be positive (got " +
                         std::to_string(batchSize) + " and " + std::to_string(seqLen) + ")");
  std::vector<uint8_t> bytes;
  SHARDC_RETURN_IF_ERROR(readFile(path, &bytes));
  if (bytes.size() % 2 != 0)
    return Status::error(path + ": " + std::to_string(bytes.size()) +
                         " bytes is not a whole number of uint16 tokens (odd size: truncated, "
                         "or not a token file?)");
  uint64_t count = bytes.size() / 2;
  // One window needs T inputs plus the target after the last one.
  if (count < static_cast<uint64_t>(seqLen) + 1)
    return Status::error(path + ": " + std::to_string(count) +
                         " tokens, too few for one window of sequence length " +
                         std::to_string(seqLen) + " (needs at least " + std::to_string(seqLen + 1) +
                         ")");
  TokenStream stream;
  stream.tokens_.resize(count);
  std::memcpy(stream.tokens_.data(), bytes.data(), bytes.size());
  stream.path_ = path;
  stream.batchSize_ = batchSize;
  stream.seqLen_ = seqLen;
  stream.rowCount_ = batchSize;
  stream.batchShape_ = {batchSize, seqLen};
  stream.seed_ = seed;
  *out = std::move(stream);
  return Status::ok();
}

Status TokenStream::keepRows(int64_t first, int64_t count) {
  if (first < 0 || count < 1 || first > batchSize_ || count > batchSize_ - first)
    return Status::error(path_ + ": rows [" + std::to_string(first) + ", " +
                         std::to_string(first + count) + ") do not lie inside a batch of " +
                         std::to_string(batchSize_) + " rows");
  firstRow_ = first;
  rowCount_ = count;
  batchShape_ = {count, seqLen_};
  return Status::ok();
}

int64_t TokenStream::windowStart(int64_t step, int64_t row) const {
  PhiloxStream stream(seed_,
                      philoxStreamId(static_cast<uint32_t>(step), kDataSamplingStreamTensorId));
  uint32_t words[2];
  stream.fill(2 * static_cast<uint64_t>(row), 2, words);
  uint64_t bits = static_cast<uint64_t>(words[0]) | static_cast<uint64_t>(words[1]) << 32;
  // Starts 0 .. n-T-1: n - T choices. The modulo bias of a 64-bit draw is below
  // (n - T) / 2^64, far below anything training could notice.
  uint64_t choices = tokens_.size() - static_cast<uint64_t>(seqLen_);
  return static_cast<int64_t>(bits % choices);
}

Status TokenStream::batch(int64_t step, HostTensor *inputs, HostTensor *targets) const {
  if (tokens_.empty())
    return Status::error("batch requested from a token stream that was not opened");
  if (step < 1 || step > static_cast<int64_t>(std::numeric_limits<uint32_t>::max()))
    return Status::error(path_ + ": batch step " + std::to_string(step) +
                         " is out of range (steps run from 1 to 2^32 - 1)");
  reshapeHostTensor(program::I64, batchShape_, inputs);
  reshapeHostTensor(program::I64, batchShape_, targets);
  int64_t *in = inputs->as<int64_t>();
  int64_t *tg = targets->as<int64_t>();
  for (int64_t b = 0; b < rowCount_; ++b) {
    const uint16_t *window = tokens_.data() + windowStart(step, firstRow_ + b);
    for (int64_t t = 0; t < seqLen_; ++t) {
      in[b * seqLen_ + t] = window[t];
      tg[b * seqLen_ + t] = window[t + 1];
    }
  }
  return Status::ok();
}

} // namespace shardc::runtime
