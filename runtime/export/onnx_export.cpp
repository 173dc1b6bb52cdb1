#include "runtime/export/onnx_export.h"

#include "runtime/support/file_io.h"
#include "runtime/support/quote.h"
#include "runtime/support/lora_names.h"
#include "runtime/support/quantized_weights.h"

#include "onnx/onnx_pb.h"

#include <google/protobuf/stubs/common.h>
#if GOOGLE_PROTOBUF_VERSION < 4022000
#include <google/protobuf/stubs/logging.h>
#endif

#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

// raw_data and external data are little-endian; the trained values are copied as they are in
// memory.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX export writes host-order floats as ONNX's little-endian raw_data"
#endif

namespace shardc::runtime {

namespace {

// Offsets of tensors in the external-data file are multiples of this, so that readers can map
// the file and use every tensor in place.
constexpr uint64_t kExternalDataAlignment = 64;
// An upper bound of what one tensor's raw_data adds to the serialized model besides its bytes:
// field tag and length varint, and the longer length prefixes of the enclosing messages.
constexpr uint64_t kPerTensorOverhead = 32;


std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string parentDirectory(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// "FLOAT[2x3]", for messages.
std::string describeOnnxType(const onnx::TensorProto &tensor) {
  std::string text;
  if (onnx::TensorProto_DataType_IsValid(tensor.data_type()))
    text = onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(tensor.data_type()));
  else
    text = "data type " + std::to_string(tensor.data_type());
  text += '[';
  for (int i = 0; i < tensor.dims_size(); ++i)
    text += (i ? "x" : "") + std::to_string(tensor.dims(i));
  return text + ']';
}

void addExternalDataEntry(onnx::TensorProto &tensor, const char *key, const std::string &value) {
  onnx::StringStringEntryProto *entry = tensor.add_external_data();
  entry->set_key(key);
  entry->set_value(value);
}

} // namespace

OnnxExporter::OnnxExporter() = default;
OnnxExporter::~OnnxExporter() = default;

Status OnnxExporter::open(const LoadedBundle &loaded, std::unique_ptr<OnnxExporter> *out,
                          const std::vector<LoraMergeSpec> &merges) {
  const program::Bundle &bundle = loaded.bundle;
  const std::string &dir = loaded.dir;
  if (bundle.mode() != "train")
    return Status::error(dir + ": a forward bundle has no trained parameters to export; "
                               "compile the model with shardc --mode train");
  if (bundle.source_onnx_file().empty())
    return Status::error(dir + ": the bundle has no source.onnx to export from (it was compiled "
                               "by a shardc without --export-onnx support, or without the "
                               "model's weights); recompile the model with shardc --mode train");
  if (!isPlainFileName(bundle.source_onnx_file()))
    return Status::error(joinPath(dir, "program.pb") + ": source_onnx_file " +
                         quoteForMessage(bundle.source_onnx_file()) +
                         " is not a file name inside the bundle");

  auto exporter = std::unique_ptr<OnnxExporter>(new OnnxExporter());
  const std::string path = joinPath(dir, bundle.source_onnx_file());
  exporter->sourcePath_ = path;
  {
    std::vector<uint8_t> bytes;
    SHARDC_RETURN_IF_ERROR(readFile(path, &bytes));
    if (XXH3_64bits(bytes.data(), bytes.size()) != bundle.source_onnx_checksum())
      return Status::error(path + ": checksum mismatch (file truncated, damaged or altered)");
    if (bytes.size() > static_cast<size_t>(INT_MAX))
      return Status::error(path + ": 2 GiB or larger; protobuf cannot parse it");
    exporter->model_ = std::make_unique<onnx::ModelProto>();
    bool parsed;
    {
#if GOOGLE_PROTOBUF_VERSION < 4022000
      // One error line, not protobuf's log lines in front of it.
      google::protobuf::LogSilencer silenceProtobufLogs;
#endif
      parsed = exporter->model_->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
    }
    if (!parsed || !exporter->model_->has_graph())
      return Status::error(path + ": not a valid ONNX model (it matches its checksum, so the "
                                  "compiler wrote it wrong; recompile the model)");
  }

  const onnx::GraphProto &graph = exporter->model_->graph();
  std::map<std::string, int> initializers;
  std::map<std::string, int> duplicated;
  for (int i = 0; i < graph.initializer_size(); ++i)
    if (!initializers.emplace(graph.initializer(i).name(), i).second)
      duplicated.emplace(graph.initializer(i).name(), i);

  // The trained parameters are the program's state_init inputs; their buffers give the shape
  // the training loop's values have.
  const program::Program &program = bundle.programs(0);
  std::set<std::string> mergedAdapters;
  for (const LoraMergeSpec &m : merges)
    if (!m.loraA.empty())
      mergedAdapters.insert({m.loraA, m.loraB});
  for (const program::StateInit &init : program.state_init()) {
    const std::string &name = init.name();
    if (mergedAdapters.count(name))
      continue; // merged into its weight below
    const program::Buffer *buffer = nullptr;
    for (const program::Binding &binding : program.inputs())
      if (binding.name() == name)
        buffer = &program.buffers(binding.buffer());
    if (buffer == nullptr)
      return Status::error(joinPath(dir, "program.pb") + ": trained parameter " +
                           quoteForMessage(name) + " is not an input of the program");
    auto it = initializers.find(name);
    if (it == initializers.end())
      return Status::error(
          path + ": the model has no initializer " + quoteForMessage(name) +
          " for the trained parameter of that name" +
          (isLoraAdapterName(name)
               ? " (a LoRA adapter: add --merge-lora to export the model with the adapters "
                 "merged into its weights, or write them for PEFT with --save-adapters DIR)"
               : ""));
    if (duplicated.count(name))
      return Status::error(path + ": initializer " + quoteForMessage(name) + " is defined twice");
    const onnx::TensorProto &tensor = graph.initializer(it->second);
    std::vector<int64_t> shape(buffer->shape().begin(), buffer->shape().end());
    std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
    if (buffer->dtype() != program::F32 || tensor.data_type() != onnx::TensorProto::FLOAT ||
        dims != shape)
      return Status::error(path + ": initializer " + quoteForMessage(name) + " is " +
                           describeOnnxType(tensor) + " but the trained parameter is " +
                           describeTensorType(buffer->dtype(), shape));
    exporter->params_.push_back(Param{name, it->second, std::move(shape)});
    exporter->names_.push_back(name);
  }
  // The weights the adapters merge into: f32 initializers with their values in the template.
  for (const LoraMergeSpec &spec : merges) {
    auto it = initializers.find(spec.weight);
    if (it == initializers.end())
      return Status::error(path + ": the model has no initializer " + quoteForMessage(spec.weight) +
                           " for the LoRA adapters " + quoteForMessage(spec.loraA) +
                           " to merge into");
    const onnx::TensorProto &tensor = graph.initializer(it->second);
    std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
    int64_t numel = 1;
    for (int64_t d : dims)
      numel *= d;
    Merge merge{spec, it->second, dims, {}};
    if (tensor.data_type() != onnx::TensorProto::FLOAT || dims.size() != 2)
      return Status::error(path + ": initializer " + quoteForMessage(spec.weight) + " is " +
                           describeOnnxType(tensor) +
                           "; merging LoRA adapters needs a 2-D f32 weight");
    if (tensor.raw_data().size() == static_cast<size_t>(numel) * sizeof(float)) {
      merge.base.resize(static_cast<size_t>(numel));
      std::memcpy(merge.base.data(), tensor.raw_data().data(), tensor.raw_data().size());
    } else if (tensor.float_data_size() == numel) {
      merge.base.assign(tensor.float_data().begin(), tensor.float_data().end());
    } else {
      return Status::error(path + ": initializer " + quoteForMessage(spec.weight) +
                           " holds no inline values to merge the LoRA adapters into");
    }
    if (spec.baseDtype != "fp32") {
      // The base the adapters were trained against: the weight as the bundle stores it, [out,
      // in], quantized and dequantized again (the quantizer is deterministic).
      std::optional<WeightFormat> format = weightFormatFromName(spec.baseDtype);
      if (!format)
        return Status::error("lora.json: unknown base_dtype " + quoteForMessage(spec.baseDtype));
      const bool inByOut = spec.weightInByOut;
      const int64_t rows = dims[inByOut ? 1 : 0], cols = dims[inByOut ? 0 : 1];
      if (*format == WeightFormat::Nf4 && rows * cols % kNf4BlockSize != 0)
        return Status::error("lora.json: weight " + quoteForMessage(spec.weight) +
                             " cannot be nf4 (not a multiple of 64 elements)");
      std::vector<float> outByIn =
          inByOut ? transposedMatrix(merge.base.data(), cols, rows) : merge.base;
      QuantizedWeight q = quantizeWeight(*format, outByIn.data(), rows, cols);
      dequantizeRows(*format, q.codes.data(), q.scales.data(), cols, 0, rows, outByIn.data());
      merge.base = inByOut ? transposedMatrix(outByIn.data(), rows, cols) : std::move(outByIn);
    }
    exporter->merges_.push_back(std::move(merge));
  }
  // The compiler strips these already; a template that still has values would only waste
  // memory until the export (the merged weights' base values are held by merges_).
  exporter->clearTrainedValues();
  exporter->clearMergedValues();
  *out = std::move(exporter);
  return Status::ok();
}

Status OnnxExporter::checkDestination(const std::string &path) {
  if (path.empty() || path.back() == '/')
    return Status::error(quoteForMessage(path) + ": not a file name");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return Status::error(path + ": is a directory, expected a file name");
  // The model and its external data file: neither may replace a device node or a pipe.
  SHARDC_RETURN_IF_ERROR(checkRegularFileDestination(path));
  SHARDC_RETURN_IF_ERROR(checkRegularFileDestination(path + ".data"));
  const std::string dir = parentDirectory(path);
  if (::stat(dir.c_str(), &st) != 0)
    return Status::error(path + ": cannot write: directory " + quoteForMessage(dir) + ": " +
                         std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return Status::error(path + ": cannot write: " + quoteForMessage(dir) + " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return Status::error(path + ": cannot write into directory " + quoteForMessage(dir) + ": " +
                         std::strerror(errno));
  return Status::ok();
}

Status
OnnxExporter::collectValues(const std::function<const HostTensor *(const std::string &)> &valueOf,
                            std::vector<const HostTensor *> *values) const {
  values->clear();
  for (const Param &param : params_) {
    const HostTensor *value = valueOf(param.name);
    if (value == nullptr)
      return Status::error("no value for trained parameter " + quoteForMessage(param.name));
    if (value->dtype != program::F32 || value->shape != param.shape ||
        value->bytes.size() != static_cast<size_t>(value->numel()) * sizeof(float))
      return Status::error("trained parameter " + quoteForMessage(param.name) + " is " +
                           value->describe() + ", the model's initializer is " +
                           describeTensorType(program::F32, param.shape));
    values->push_back(value);
  }
  return Status::ok();
}

Status OnnxExporter::mergedWeight(
    const Merge &merge, const std::function<const HostTensor *(const std::string &)> &valueOf,
    HostTensor *out) const {
  out->dtype = program::F32;
  out->shape = merge.shape;
  out->bytes.resize(merge.base.size() * sizeof(float));
  std::memcpy(out->bytes.data(), merge.base.data(), out->bytes.size());
  if (merge.spec.loraA.empty())
    return Status::ok(); // a quantized weight without adapters: its dequantized value
  const bool inByOut = merge.spec.weightInByOut;
  const int64_t rows = merge.shape[inByOut ? 1 : 0], cols = merge.shape[inByOut ? 0 : 1];
  const HostTensor *a = valueOf(merge.spec.loraA), *b = valueOf(merge.spec.loraB);
  if (a == nullptr || b == nullptr)
    return Status::error("no value for the LoRA adapters of " +
                         quoteForMessage(merge.spec.weight));
  if (a->dtype != program::F32 || b->dtype != program::F32 || a->shape.size() != 2 ||
      b->shape.size() != 2 || a->shape[0] != b->shape[1] || a->shape[1] != cols ||
      b->shape[0] != rows)
    return Status::error("LoRA adapters " + a->describe() + " and " + b->describe() +
                         " do not fit the weight " + quoteForMessage(merge.spec.weight));
  const int64_t rank = a->shape[0];
  const float *pa = a->as<float>(), *pb = b->as<float>();
  const float scale = static_cast<float>(merge.spec.scale);
  float *merged = out->as<float>();
  // PEFT's merge: delta = (B · A) * scale in f32, then W + delta.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float sum = 0.0f;
      for (int64_t k = 0; k < rank; ++k)
        sum += pb[r * rank + k] * pa[k * cols + c];
      merged[inByOut ? c * rows + r : r * cols + c] += sum * scale;
    }
  return Status::ok();
}

void OnnxExporter::clearMergedValues() {
  onnx::GraphProto &graph = *model_->mutable_graph();
  for (const Merge &merge : merges_)
    dropTensorValues(*graph.mutable_initializer(merge.initializer));
}

void OnnxExporter::clearTrainedValues() {
  onnx::GraphProto &graph = *model_->mutable_graph();
  for (const Param &param : params_)
    dropTensorValues(*graph.mutable_initializer(param.initializer));
}

Status OnnxExporter::write(const std::string &path,
                           const std::function<const HostTensor *(const std::string &)> &valueOf,
                           const OnnxExportOptions &options, OnnxExportResult *result) {
  std::vector<const HostTensor *> values;
  SHARDC_RETURN_IF_ERROR(collectValues(valueOf, &values));
  // The merged weights are written as trained parameters are.
  std::vector<HostTensor> mergedValues(merges_.size());
  for (size_t i = 0; i < merges_.size(); ++i)
    SHARDC_RETURN_IF_ERROR(mergedWeight(merges_[i], valueOf, &mergedValues[i]));
  std::vector<int> targets;
  for (const Param &param : params_)
    targets.push_back(param.initializer);
  for (size_t i = 0; i < merges_.size(); ++i) {
    targets.push_back(merges_[i].initializer);
    values.push_back(&mergedValues[i]);
  }

  uint64_t estimate = model_->ByteSizeLong() + kPerTensorOverhead;
  for (const HostTensor *value : values)
    estimate += value->bytes.size() + kPerTensorOverhead;
  const bool external = estimate > options.maxInlineBytes;

  // Whatever happens below, the template gets its stripped state (and memory) back.
  struct RestoreTemplate {
    OnnxExporter *exporter;
    ~RestoreTemplate() {
      exporter->clearTrainedValues();
      exporter->clearMergedValues();
    }
  } restore{this};

  onnx::GraphProto &graph = *model_->mutable_graph();
  const std::string dataPath = path + ".data";
  std::vector<ByteSpan> dataPieces;
  static const uint8_t kZeros[kExternalDataAlignment] = {};
  uint64_t dataOffset = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    onnx::TensorProto &tensor = *graph.mutable_initializer(targets[i]);
    const HostTensor &value = *values[i];
    dropTensorValues(tensor);
    if (!external) {
      tensor.set_raw_data(value.bytes.data(), value.bytes.size());
      continue;
    }
    uint64_t padding =
        (kExternalDataAlignment - dataOffset % kExternalDataAlignment) % kExternalDataAlignment;
    if (padding > 0)
      dataPieces.push_back({kZeros, padding});
    dataOffset += padding;
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    // ONNX resolves the location relative to the model file's directory.
    addExternalDataEntry(tensor, "location", baseName(dataPath));
    addExternalDataEntry(tensor, "offset", std::to_string(dataOffset));
    addExternalDataEntry(tensor, "length", std::to_string(value.bytes.size()));
    dataPieces.push_back({value.bytes.data(), value.bytes.size()});
    dataOffset += value.bytes.size();
  }

  size_t size = model_->ByteSizeLong();
  if (size > kMaxInlineOnnxBytes)
    return Status::error(path + ": the model takes " + std::to_string(size) +
                         " bytes without the trained values; protobuf cannot write 2 GiB or "
                         "more");
  std::string serialized;
  if (!model_->SerializeToString(&serialized))
    return Status::error(path + ": cannot serialise the model");
  // The data file first: the model that refers to it is what makes the export complete.
  if (external)
    SHARDC_RETURN_IF_ERROR(writeFileAtomically(dataPath, dataPieces));
  SHARDC_RETURN_IF_ERROR(writeFileAtomically(path, serialized.data(), serialized.size()));
  if (result != nullptr) {
    result->tensors = targets.size();
    result->externalData = external ? dataPath : "";
  }
  return Status::ok();
}

void dropTensorValues(onnx::TensorProto &tensor) {
  // Swapping with an empty string releases the memory, which clear_raw_data() would keep.
  std::string().swap(*tensor.mutable_raw_data());
  tensor.clear_raw_data();
  tensor.clear_float_data();
  tensor.clear_int32_data();
  tensor.clear_int64_data();
  tensor.clear_double_data();
  tensor.clear_uint64_data();
  tensor.clear_string_data();
  tensor.clear_external_data();
  tensor.clear_data_location();
}

} // namespace shardc::runtime
