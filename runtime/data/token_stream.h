// Language-model training batches sampled from a flat token file.
//
// The file is the nanoGPT / llm.c format without header: little-endian uint16 token ids, one
// after another (e.g. GPT-2 tokens, vocabulary < 65536). For batch size B, sequence length T and
// a seed, training step k (1-based) yields, for each row b < B,
//   inputs[b]  = tokens[s_b     : s_b + T]
//   targets[b] = tokens[s_b + 1 : s_b + T + 1]     (both int64, shape [B, T])
// where the window start s_b is uniform in [0, n - T - 1] and drawn from Philox keyed by the seed
// on stream philoxStreamId(k, kDataSamplingStreamTensorId), words 2b and 2b+1. A batch is a pure
// function of (file, B, T, seed, k): it does not depend on which batches were drawn before, so a
// run resumed at step k sees exactly what an uninterrupted run saw. The file is read once.
//
// Data parallelism: a rank that keeps rows [first, first + count) of the global batch of B rows
// (keepRows) gets windows s_first .. s_{first+count-1} of step k: its rows of exactly the batch
// a one-rank run sees. The windows are random, so every rank reads the whole file.
#pragma once

#include "runtime/executor/host_tensor.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime {

class TokenStream {
public:
  // Reads `path` and checks it holds at least one window (T + 1 tokens).
  static Status open(const std::string &path, int64_t batchSize, int64_t seqLen, uint64_t seed,
                     TokenStream *out);

  int64_t numTokens() const { return static_cast<int64_t>(tokens_.size()); }
  // The global batch size B.
  int64_t batchSize() const { return batchSize_; }
  int64_t seqLen() const { return seqLen_; }

  // Makes batch() return only rows [first, first + count) of each global batch (by default all
  // B rows). An error when they do not lie inside the batch.
  Status keepRows(int64_t first, int64_t count);
  // The rows batch() returns.
  int64_t rowCount() const { return rowCount_; }

  // The batch of training step `step` (1 <= step <= 2^32 - 1): inputs and targets, i64[R x T]
  // for the R = rowCount() kept rows, written into the tensors reusing their storage (no
  // allocation once they have the size).
  Status batch(int64_t step, HostTensor *inputs, HostTensor *targets) const;
  // Bytes of tokens read by open() and held until the stream is destroyed.
  uint64_t heldBytes() const { return tokens_.size() * sizeof(uint16_t); }
  // s_b of step `step`, row `row` (no range checks; batch() checks them).
  int64_t windowStart(int64_t step, int64_t row) const;

private:
  std::string path_;
  std::vector<uint16_t> tokens_;
  int64_t batchSize_ = 0;
  int64_t seqLen_ = 0;
  int64_t firstRow_ = 0;
  int64_t rowCount_ = 0;
  std::vector<int64_t> batchShape_; // {R, T}, kept so that batch() allocates nothing
  uint64_t seed_ = 0;
};

} // namespace shardc::runtime
