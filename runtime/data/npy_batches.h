// Training batches from .npy files: one file per graph input holding the whole data set, cut
// into consecutive batches along the leading (batch) dimension.
//
// For graph inputs (name, dtype, shape) with batch size B = shape[0], the file for input NAME is
// DIR/tensorNpyFileName(NAME). Each must hold dtype and shape [N, shape[1:]...] with the same N
// for every input, N a positive multiple of B. The batch of training step k (1-based) is rows
// [(k-1)B, kB) modulo N: the data set is walked in order and wraps around each epoch, and since
// a batch depends only on k, resuming at step k yields exactly the batches of an uninterrupted
// run. Files are read once, by open().
#pragma once

#include "runtime/executor/host_tensor.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime {

// A graph input as the compiled program declares it (its shape includes the batch dimension).
struct GraphInputSpec {
  std::string name;
  DType dtype = program::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
};

class NpyBatchSource {
public:
  // Reads and checks DIR/<file of each input>. Errors name the file and the input.
  static Status open(const std::string &dataDir, const std::vector<GraphInputSpec> &inputs,
                     NpyBatchSource *out);

  int64_t batchSize() const { return batchSize_; }
  int64_t numRows() const { return numRows_; }
  int64_t batchesPerEpoch() const { return batchSize_ > 0 ? numRows_ / batchSize_ : 0; }
  const std::vector<GraphInputSpec> &inputs() const { return inputs_; }

  // The batch of training step `step` (>= 1): one tensor per input, in the order given to
  // open(), each of the input's declared shape. Tensors already in `out` are reused.
  Status batch(int64_t step, std::vector<HostTensor> *out) const;
  // The batch of input `input` (an index into inputs()) for step `step`, written into `out`
  // reusing its storage: a training loop refilling the same tensors allocates nothing.
  Status batchOf(int64_t step, size_t input, HostTensor *out) const;
  // Bytes of data read by open() and held until the source is destroyed.
  uint64_t heldBytes() const;

private:
  std::vector<GraphInputSpec> inputs_;
  std::vector<HostTensor> data_; // the whole file of each input
  int64_t batchSize_ = 0;
  int64_t numRows_ = 0;
};

} // namespace shardc::runtime
