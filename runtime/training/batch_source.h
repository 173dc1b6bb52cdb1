// Where the training loop's batches come from: the batch inputs of step k as a pure function of
// k (and the seed), so that a resumed run sees exactly the batches of an uninterrupted one.
#pragma once

#include "runtime/data/npy_batches.h"
#include "runtime/data/token_stream.h"
#include "runtime/executor/host_tensor.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace shardc::runtime {

class BatchSource {
public:
  virtual ~BatchSource() = default;
  // Stores the batch of step `step` (>= 1) into `inputs` under each batch input's name,
  // reusing the tensors already there (a step allocates nothing).
  virtual Status fill(int64_t step, std::map<std::string, HostTensor> *inputs) = 0;
  // Throughput unit of a step for progress reports: B samples, or B*T tokens, of the global
  // batch (all ranks together).
  virtual int64_t itemsPerStep() const = 0;
  virtual const char *itemName() const = 0; // "samples" or "tokens"
  // Bytes of data the source holds (whole .npy data sets, the token file): not part of the
  // program's memory plan, reported beside it.
  virtual uint64_t heldBytes() const = 0;
};

// Batches from DIR/<input>.npy (NpyBatchSource): step k uses rows [(k-1)B, kB) modulo N, or
// the `slice` of them a data-parallel rank takes (TrainingSignature::batchSlice).
// With no batch inputs at all, a source that adds nothing (DIR is not read).
Status openNpyBatchSource(const std::string &dataDir, const std::vector<GraphInputSpec> &inputs,
                          std::unique_ptr<BatchSource> *out,
                          const BatchSlice &slice = BatchSlice());

// Language-model batches from a uint16 token file (TokenStream). The program must have exactly
// two batch inputs, both i64[B x T]: the first in the program's input order (the ONNX graph's
// input order) receives the token windows, the second the targets (the windows shifted by one).
// With a `slice`, B is the rank's rows and the windows are those rows of the global batch.
Status openTokenBatchSource(const std::string &path, const std::vector<GraphInputSpec> &inputs,
                            uint64_t seed, std::unique_ptr<BatchSource> *out,
                            const BatchSlice &slice = BatchSlice());

} // namespace shardc::runtime
