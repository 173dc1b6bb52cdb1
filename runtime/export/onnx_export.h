// Writing the trained model as ONNX (`shardrun --export-onnx FILE`).
//
// A training bundle holds source.onnx (Bundle.source_onnx_file): the model shardc compiled,
// in which each trained parameter's initializer has name, data_type and dims but no values;
// every other tensor keeps its values. The exporter loads it once, before training, so that a
// damaged bundle or a mismatch is reported before a long run rather than after it; at the end
// it fills in the trained values (f32, raw_data little-endian) and writes FILE atomically.
//
// protobuf cannot serialize or parse a message of 2 GiB or more. When the trained values would
// take the model past that, they go instead to FILE.data next to FILE, referenced as ONNX
// external data (location = the data file's name, offset, length; every offset 64-aligned),
// which onnx.load() and onnxruntime read from the model's directory.
#pragma once

#include "runtime/executor/host_tensor.h"
#include "runtime/loader/bundle.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
class TensorProto;
} // namespace onnx

namespace shardc::runtime {

// Drops every field of `tensor` that can hold its values (raw_data, typed data, external data),
// releasing their memory; name, data_type and dims stay. shardc uses it to strip the trained
// initializers from source.onnx, the exporter to reset its template after a write.
void dropTensorValues(onnx::TensorProto &tensor);

// The largest serialized model written as one file: protobuf's limit is 2^31 - 1 bytes.
constexpr uint64_t kMaxInlineOnnxBytes = 0x7fffffffULL;

struct OnnxExportOptions {
  // Above this estimated size the trained values go to FILE.data (tests lower it).
  uint64_t maxInlineBytes = kMaxInlineOnnxBytes;
};

// A LoRA adapter pair merged into the weight it adapts (`shardrun --export-onnx --merge-lora`;
// the bundle's lora.json lists them): the exported weight is W + scale · B·A, W [out, in] (its
// transpose for a weight stored [in, out]), A [r, in], B [out, r] (PEFT's merge_and_unload).
// With a quantized base (shardc --base-dtype), W is the dequantized weight the adapters were
// trained against, so the merged weights are full-precision f32; a quantized weight without
// adapters (loraA empty) is written dequantized: the export computes what the step did.
struct LoraMergeSpec {
  std::string weight, loraA, loraB;
  double scale = 1.0;
  bool weightInByOut = false;
  std::string baseDtype = "fp32"; // fp32, bf16, int8 or nf4
};

// What write() did, for the summary line.
struct OnnxExportResult {
  size_t tensors = 0;       // trained parameters written
  std::string externalData; // the external-data file, or "" when everything is inline
};

class OnnxExporter {
public:
  ~OnnxExporter();

  // Loads `bundle`'s source.onnx (its checksum must match program.pb's) and checks that every
  // trained parameter of the rank-0 program (state_init) is an f32 initializer of the model
  // with the program's shape. `bundle` must have passed validateBundleAndLoadWeights.
  // With `merges`, the LoRA adapters they name are merged into their weights instead of
  // being looked for as initializers (each weight an f32 initializer with its values).
  static Status open(const LoadedBundle &bundle, std::unique_ptr<OnnxExporter> *out,
                     const std::vector<LoraMergeSpec> &merges = {});

  // Fails when `path` cannot be written: it is a directory, or its directory does not exist or
  // is not writable. Checked before training so that a typo does not cost the run.
  static Status checkDestination(const std::string &path);

  // The trained parameters, in state_init order.
  const std::vector<std::string> &parameterNames() const { return names_; }

  // Writes the model to `path` with each trained parameter's value from `valueOf(name)`, which
  // must be an f32 tensor of the parameter's shape. The template is left as it was, so write()
  // can be called again (later in training).
  Status write(const std::string &path,
               const std::function<const HostTensor *(const std::string &)> &valueOf,
               const OnnxExportOptions &options, OnnxExportResult *result);

private:
  OnnxExporter();

  struct Param {
    std::string name;
    int initializer; // index into graph.initializer
    std::vector<int64_t> shape;
  };

  Status collectValues(const std::function<const HostTensor *(const std::string &)> &valueOf,
                       std::vector<const HostTensor *> *values) const;
  void clearTrainedValues();

  std::string sourcePath_; // BUNDLE/source.onnx, for messages
  std::unique_ptr<onnx::ModelProto> model_;
  // A merged weight: its initializer and the base value it is merged onto (f32, [out, in] or
  // [in, out] as stored).
  struct Merge {
    LoraMergeSpec spec;
    int initializer;
    std::vector<int64_t> shape;
    std::vector<float> base;
  };
  Status mergedWeight(const Merge &merge,
                      const std::function<const HostTensor *(const std::string &)> &valueOf,
                      HostTensor *out) const;
  void clearMergedValues();

  std::vector<Param> params_;
  std::vector<Merge> merges_;
  std::vector<std::string> names_;
};

} // namespace shardc::runtime
