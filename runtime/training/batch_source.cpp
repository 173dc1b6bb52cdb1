#include "runtime/training/batch_source.h"

#include "runtime/support/quote.h"

namespace shardc::runtime {

namespace {

class NpyBatches : public BatchSource {
public:
  Status fill(int64_t step, std::map<std::string, HostTensor> *inputs) override {
    for (size_t i = 0; i < source_.inputs().size(); ++i)
      SHARDC_RETURN_IF_ERROR(source_.batchOf(step, i, &(*inputs)[source_.inputs()[i].name]));
    return Status::ok();
  }
  int64_t itemsPerStep() const override { return source_.batchSize(); }
  const char *itemName() const override { return "samples"; }
  uint64_t heldBytes() const override { return source_.heldBytes(); }

  NpyBatchSource source_;
};

class TokenBatches : public BatchSource {
public:
  Status fill(int64_t step, std::map<std::string, HostTensor> *inputs) override {
    return stream_.batch(step, &(*inputs)[inputsName_], &(*inputs)[targetsName_]);
  }
  int64_t itemsPerStep() const override { return stream_.batchSize() * stream_.seqLen(); }
  const char *itemName() const override { return "tokens"; }
  uint64_t heldBytes() const override { return stream_.heldBytes(); }

  TokenStream stream_;
  std::string inputsName_, targetsName_;
};

// A training step without batch inputs (everything it needs is carried state).
class NoBatches : public BatchSource {
public:
  Status fill(int64_t, std::map<std::string, HostTensor> *) override { return Status::ok(); }
  int64_t itemsPerStep() const override { return 0; }
  const char *itemName() const override { return "samples"; }
  uint64_t heldBytes() const override { return 0; }
};

std::string describeInputs(const std::vector<GraphInputSpec> &inputs) {
  std::string text;
  for (const GraphInputSpec &in : inputs)
    text += (text.empty() ? "" : ", ") + quoteForMessage(in.name) + " " +
            describeTensorType(in.dtype, in.shape);
  return text.empty() ? "none" : text;
}

} // namespace

Status openNpyBatchSource(const std::string &dataDir, const std::vector<GraphInputSpec> &inputs,
                          std::unique_ptr<BatchSource> *out, const BatchSlice &slice) {
  if (inputs.empty()) {
    *out = std::make_unique<NoBatches>();
    return Status::ok();
  }
  auto source = std::make_unique<NpyBatches>();
  SHARDC_RETURN_IF_ERROR(NpyBatchSource::open(dataDir, inputs, &source->source_, slice));
  *out = std::move(source);
  return Status::ok();
}

Status openTokenBatchSource(const std::string &path, const std::vector<GraphInputSpec> &inputs,
                            uint64_t seed, std::unique_ptr<BatchSource> *out,
                            const BatchSlice &slice) {
  bool fits = inputs.size() == 2;
  for (const GraphInputSpec &in : inputs)
    fits = fits && in.dtype == program::I64 && in.shape.size() == 2 &&
           in.shape == inputs[0].shape && in.batchDim == 0;
  if (!fits)
    return Status::error("--tokens needs a model with exactly two batch inputs, both i64[B x T] "
                         "(token ids and targets, batch first); this one has " +
                         describeInputs(inputs));
  auto source = std::make_unique<TokenBatches>();
  const int64_t globalRows = slice.whole() ? inputs[0].shape[0] : slice.globalRows;
  SHARDC_RETURN_IF_ERROR(
      TokenStream::open(path, globalRows, inputs[0].shape[1], seed, &source->stream_));
  if (!slice.whole()) {
    if (inputs[0].shape[0] != slice.rows)
      return Status::error("--tokens: batch input " + quoteForMessage(inputs[0].name) + " has " +
                           std::to_string(inputs[0].shape[0]) + " rows, not the rank's " +
                           std::to_string(slice.rows));
    SHARDC_RETURN_IF_ERROR(source->stream_.keepRows(slice.begin, slice.rows));
  }
  source->inputsName_ = inputs[0].name;
  source->targetsName_ = inputs[1].name;
  *out = std::move(source);
  return Status::ok();
}

} // namespace shardc::runtime
