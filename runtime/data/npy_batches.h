// Training batches from .npy files: one file per graph input holding the whole data set, cut
// into consecutive batches along its leading dimension.
//
// For graph inputs (name, dtype, shape) whose batch of B rows lies in dimension `batchDim`
// (0, or 1 for a sequence-first model's [seq, batch] inputs), the file for input NAME is
// DIR/tensorNpyFileName(NAME). Batch-first (batchDim 0), it holds [N, shape[1:]...], N a
// positive multiple of B, and the batch of training step k (1-based) is rows [(k-1)B, kB)
// modulo N. Otherwise it holds consecutive blocks of the input's shape along dim 0:
// [n * shape[0], shape[1:]...] (the batch's B rows in dim batchDim of each block), and step k
// takes block (k-1) modulo n. Every input has the same number of batches. The data set is
// walked in order and wraps around each epoch, and since a batch depends only on k, resuming
// at step k yields exactly the batches of an uninterrupted run. Files are read once, by open().
//
// Data parallelism: a rank that takes rows [begin, begin + rows) of each global batch of
// B = globalRows rows (BatchSlice) gets, at step k, those rows of the batch a one-rank run sees
// at step k, along the batch dimension. It holds only those rows of each file (rows/B of the
// data set), and with the batch in dim 0 reads only them.
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
  size_t batchDim = 0; // the dimension of the batch's rows (Binding.batch_dim)
};

// The rows of every global batch that one rank takes (Program.batch_begin, batch_rows,
// global_batch_rows). The default, globalRows == 0, is a rank that takes the whole batch.
struct BatchSlice {
  int64_t begin = 0;
  int64_t rows = 0;
  int64_t globalRows = 0;

  bool whole() const { return globalRows == 0; }
};

class NpyBatchSource {
public:
  // Reads and checks DIR/<file of each input> (only the slice's rows of it). Errors name the
  // file and the input. With a slice, every input's batch dimension must be slice.rows.
  static Status open(const std::string &dataDir, const std::vector<GraphInputSpec> &inputs,
                     NpyBatchSource *out, const BatchSlice &slice = BatchSlice());

  // The global batch size B (the rank's rows are the inputs' batch dimension).
  int64_t batchSize() const { return batchSize_; }
  // The files' dim 0 (the largest, should inputs differ in the size of their blocks).
  int64_t numRows() const { return numRows_; }
  int64_t batchesPerEpoch() const { return batches_; }
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
  // Per input, the rank's rows of every batch of an epoch, batch after batch (with the whole
  // batch: the whole file).
  std::vector<HostTensor> data_;
  int64_t batchSize_ = 0;
  int64_t firstRow_ = 0; // the rank's first row in each batch
  int64_t rows_ = 0;     // the rank's rows per batch
  int64_t numRows_ = 0;
  int64_t batches_ = 0; // per epoch
};

} // namespace shardc::runtime
