#include "runtime/checkpoint/safetensors.h"

#include "runtime/support/file_io.h"
#include "runtime/support/quote.h"
#include "runtime/support/strict_json.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

// safetensors data is little-endian and goes to kernels as it is.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors I/O assumes a little-endian host");

namespace shardc::runtime {

namespace {

constexpr const char *kMetadataKey = "__metadata__";
constexpr const char *kSupportedDtypes = "F32 I64 I32 BOOL";
constexpr size_t kLengthPrefixBytes = 8;

struct DtypeCode {
  const char *name;
  DType dtype;
  // Position in the Python library's Dtype enum order (BOOL < I32 < F32 < I64 among ours);
  // the writer sorts by it, descending, as the library does.
  int libraryOrder;
};
constexpr DtypeCode kDtypeCodes[] = {{"BOOL", program::BOOL, 0},
                                     {"I32", program::I32, 1},
                                     {"F32", program::F32, 2},
                                     {"I64", program::I64, 3}};

const DtypeCode *codeOf(DType dtype) {
  for (const DtypeCode &code : kDtypeCodes)
    if (code.dtype == dtype)
      return &code;
  return nullptr;
}

const DtypeCode *codeNamed(const std::string &name) {
  for (const DtypeCode &code : kDtypeCodes)
    if (name == code.name)
      return &code;
  return nullptr;
}

// numel * element size, or false if a dim is negative or the product overflows.
bool byteSizeOf(DType dtype, const std::vector<int64_t> &shape, uint64_t *out) {
  uint64_t bytes = dtypeSize(dtype);
  const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (int64_t dim : shape) {
    if (dim < 0)
      return false;
    if (dim != 0 && bytes > limit / static_cast<uint64_t>(dim))
      return false;
    bytes *= static_cast<uint64_t>(dim);
  }
  *out = bytes;
  return true;
}

std::string tensorPrefix(const std::string &source, const std::string &name) {
  return source + ": tensor " + quoteForMessage(name) + ": ";
}

struct HeaderEntry {
  std::string name;
  const DtypeCode *code = nullptr;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

// Reads one tensor entry {"dtype", "shape", "data_offsets"}; errors name the tensor.
Status parseEntry(const std::string &source, const std::string &name, const Json &value,
                  HeaderEntry *out) {
  std::string prefix = tensorPrefix(source, name);
  if (!value.is_object())
    return Status::error(prefix + "header entry is not an object");
  const Json *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
  for (const auto &member : value.items()) {
    if (member.key() == "dtype")
      dtype = &member.value();
    else if (member.key() == "shape")
      shape = &member.value();
    else if (member.key() == "data_offsets")
      offsets = &member.value();
    else
      return Status::error(prefix + "unexpected field " + quoteForMessage(member.key()));
  }
  if (dtype == nullptr || shape == nullptr || offsets == nullptr)
    return Status::error(prefix + "missing field '" +
                         (dtype == nullptr   ? "dtype"
                          : shape == nullptr ? "shape"
                                             : "data_offsets") +
                         "'");
  if (!dtype->is_string())
    return Status::error(prefix + "'dtype' is not a string");
  const std::string &dtypeName = dtype->get_ref<const std::string &>();
  out->name = name;
  out->code = codeNamed(dtypeName);
  if (out->code == nullptr)
    return Status::error(prefix + "unsupported dtype " + quoteForMessage(dtypeName) +
                         " (supported: " + kSupportedDtypes + ")");
  if (!shape->is_array())
    return Status::error(prefix + "'shape' is not an array");
  out->shape.clear();
  for (const Json &dim : *shape) {
    int64_t d;
    if (!asInt64(dim, &d) || d < 0)
      return Status::error(prefix + "'shape' holds something other than a non-negative integer");
    out->shape.push_back(d);
  }
  if (!offsets->is_array() || offsets->size() != 2 || !asUint64((*offsets)[0], &out->begin) ||
      !asUint64((*offsets)[1], &out->end))
    return Status::error(prefix + "'data_offsets' is not a pair of non-negative integers");
  return Status::ok();
}

std::string offsetsText(const HeaderEntry &entry) {
  return "[" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + "]";
}

// Checks the header and the data section; on success `entries` are sorted by offset.
Status parseHeader(const uint8_t *data, size_t size, const std::string &source,
                   std::vector<HeaderEntry> *entries, SafetensorsMetadata *metadata,
                   size_t *dataStart) {
  if (size < kLengthPrefixBytes)
    return Status::error(source + ": not a safetensors file (" + std::to_string(size) +
                         " bytes, shorter than the 8-byte header length)");
  uint64_t headerLength = 0;
  for (size_t i = 0; i < kLengthPrefixBytes; ++i)
    headerLength |= static_cast<uint64_t>(data[i]) << (8 * i);
  if (headerLength > kMaxSafetensorsHeaderBytes)
    return Status::error(source + ": header length " + std::to_string(headerLength) +
                         " exceeds the limit of " + std::to_string(kMaxSafetensorsHeaderBytes) +
                         " bytes (not a safetensors file?)");
  if (headerLength > size - kLengthPrefixBytes)
    return Status::error(source + ": truncated: header length is " + std::to_string(headerLength) +
                         " bytes, the file has " + std::to_string(size - kLengthPrefixBytes) +
                         " after the length");
  Json header;
  Status status =
      parseJson(reinterpret_cast<const char *>(data + kLengthPrefixBytes), headerLength, &header);
  if (!status.isOk())
    return Status::error(source + ": header: " + status.message());
  if (!header.is_object())
    return Status::error(source + ": header is not a JSON object");

  entries->clear();
  for (const auto &member : header.items()) {
    if (member.key() == kMetadataKey) {
      if (!member.value().is_object())
        return Status::error(source + ": '__metadata__' is not an object");
      for (const auto &item : member.value().items()) {
        if (!item.value().is_string())
          return Status::error(source + ": '__metadata__' value of " +
                               quoteForMessage(item.key()) + " is not a string");
        if (metadata != nullptr)
          (*metadata)[item.key()] = item.value().get<std::string>();
      }
      continue;
    }
    HeaderEntry entry;
    SHARDC_RETURN_IF_ERROR(parseEntry(source, member.key(), member.value(), &entry));
    entries->push_back(std::move(entry));
  }

  *dataStart = kLengthPrefixBytes + static_cast<size_t>(headerLength);
  const uint64_t dataBytes = size - *dataStart;
  for (const HeaderEntry &entry : *entries) {
    std::string prefix = tensorPrefix(source, entry.name);
    if (entry.end < entry.begin)
      return Status::error(prefix + "data_offsets " + offsetsText(entry) +
                           " end before they begin");
    if (entry.end > dataBytes)
      return Status::error(prefix + "data_offsets " + offsetsText(entry) + " lie outside the " +
                           std::to_string(dataBytes) + "-byte data section (file truncated?)");
    uint64_t bytes = 0;
    if (!byteSizeOf(entry.code->dtype, entry.shape, &bytes))
      return Status::error(prefix + "shape " + describeTensorType(entry.code->dtype, entry.shape) +
                           " is too large");
    if (entry.end - entry.begin != bytes)
      return Status::error(prefix + describeTensorType(entry.code->dtype, entry.shape) + " needs " +
                           std::to_string(bytes) + " bytes, data_offsets " + offsetsText(entry) +
                           " span " + std::to_string(entry.end - entry.begin));
  }
  // Tensors must tile the data section: no overlaps (two names for the same bytes) and no gaps
  // (bytes no tensor accounts for), exactly as the Python library validates.
  std::sort(entries->begin(), entries->end(), [](const HeaderEntry &a, const HeaderEntry &b) {
    if (a.begin != b.begin)
      return a.begin < b.begin;
    return a.end != b.end ? a.end < b.end : a.name < b.name;
  });
  uint64_t expectedBegin = 0;
  for (size_t i = 0; i < entries->size(); ++i) {
    const HeaderEntry &entry = (*entries)[i];
    if (entry.begin < expectedBegin)
      return Status::error(tensorPrefix(source, entry.name) + "data_offsets " + offsetsText(entry) +
                           " overlap tensor " + quoteForMessage((*entries)[i - 1].name));
    if (entry.begin > expectedBegin)
      return Status::error(tensorPrefix(source, entry.name) + "data_offsets " + offsetsText(entry) +
                           " leave a gap after byte " + std::to_string(expectedBegin));
    expectedBegin = entry.end;
  }
  if (expectedBegin != dataBytes)
    return Status::error(source + ": the tensors cover " + std::to_string(expectedBegin) +
                         " bytes of the " + std::to_string(dataBytes) +
                         "-byte data section (trailing bytes)");
  return Status::ok();
}

} // namespace

Status encodeSafetensors(const std::vector<NamedTensorRef> &tensors,
                         const SafetensorsMetadata &metadata, const std::string &target,
                         std::vector<uint8_t> *out) {
  struct Item {
    const NamedTensorRef *ref;
    const DtypeCode *code;
  };
  std::vector<Item> items;
  std::set<std::string> names;
  for (const NamedTensorRef &ref : tensors) {
    std::string prefix = target + ": cannot write tensor " + quoteForMessage(ref.name) + ": ";
    if (ref.tensor == nullptr)
      return Status::error(prefix + "no tensor given");
    if (ref.name == kMetadataKey)
      return Status::error(prefix + "the name is reserved for the metadata");
    if (!names.insert(ref.name).second)
      return Status::error(prefix + "duplicate name");
    const DtypeCode *code = codeOf(ref.tensor->dtype);
    if (code == nullptr)
      return Status::error(prefix + "unsupported dtype " + std::to_string(ref.tensor->dtype));
    uint64_t bytes = 0;
    if (!byteSizeOf(ref.tensor->dtype, ref.tensor->shape, &bytes))
      return Status::error(prefix + "invalid shape " + ref.tensor->describe());
    if (bytes != ref.tensor->bytes.size())
      return Status::error(prefix + ref.tensor->describe() + " holds " +
                           std::to_string(ref.tensor->bytes.size()) + " bytes, expected " +
                           std::to_string(bytes));
    items.push_back({&ref, code});
  }
  std::sort(items.begin(), items.end(), [](const Item &a, const Item &b) {
    if (a.code->libraryOrder != b.code->libraryOrder)
      return a.code->libraryOrder > b.code->libraryOrder;
    return a.ref->name < b.ref->name;
  });

  Json header = Json::object();
  if (!metadata.empty())
    header[kMetadataKey] = metadata; // a std::map: its keys sorted
  uint64_t offset = 0;
  for (const Item &item : items) {
    const uint64_t begin = offset;
    offset += item.ref->tensor->bytes.size();
    header[item.ref->name] = {{"dtype", item.code->name},
                              {"shape", item.ref->tensor->shape},
                              {"data_offsets", {begin, offset}}};
  }
  // Compact, and strings as they are (no \uXXXX for non-ASCII), as the Python library writes.
  // A name or metadata string that is not UTF-8 cannot be written as JSON.
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception &) {
    return Status::error(target +
                         ": cannot write the header: a tensor name or metadata string is not "
                         "valid UTF-8");
  }
  // Padding keeps the data section 8-aligned, so readers can map tensors in place.
  text.append((8 - text.size() % 8) % 8, ' ');

  out->clear();
  out->reserve(kLengthPrefixBytes + text.size() + offset);
  uint64_t length = text.size();
  for (size_t i = 0; i < kLengthPrefixBytes; ++i)
    out->push_back(static_cast<uint8_t>(length >> (8 * i)));
  out->insert(out->end(), text.begin(), text.end());
  for (const Item &item : items)
    out->insert(out->end(), item.ref->tensor->bytes.begin(), item.ref->tensor->bytes.end());
  return Status::ok();
}

namespace {
// Both overloads: any container of (name, HostTensor) pairs.
template <typename NamedTensors>
Status writeNamedTensors(const std::string &path, const NamedTensors &tensors,
                         const SafetensorsMetadata &metadata) {
  std::vector<NamedTensorRef> refs;
  refs.reserve(tensors.size());
  for (const auto &named : tensors)
    refs.push_back({named.first, &named.second});
  std::vector<uint8_t> image;
  SHARDC_RETURN_IF_ERROR(encodeSafetensors(refs, metadata, path, &image));
  return writeFileAtomically(path, image.data(), image.size());
}
} // namespace

Status writeSafetensors(const std::string &path,
                        const std::vector<std::pair<std::string, HostTensor>> &tensors,
                        const SafetensorsMetadata &metadata) {
  return writeNamedTensors(path, tensors, metadata);
}

Status writeSafetensors(const std::string &path, const std::map<std::string, HostTensor> &tensors,
                        const SafetensorsMetadata &metadata) {
  return writeNamedTensors(path, tensors, metadata);
}

Status parseSafetensors(const uint8_t *data, size_t size, const std::string &source,
                        std::map<std::string, HostTensor> *tensors, SafetensorsMetadata *metadata) {
  std::vector<HeaderEntry> entries;
  SafetensorsMetadata parsedMetadata;
  size_t dataStart = 0;
  try {
    SHARDC_RETURN_IF_ERROR(parseHeader(data, size, source, &entries, &parsedMetadata, &dataStart));
  } catch (const Json::exception &e) {
    // parseHeader checks each value's type before reading it; this is a net, not a path.
    return Status::error(source + ": header: " + e.what());
  }
  tensors->clear();
  for (HeaderEntry &entry : entries) {
    HostTensor tensor;
    tensor.dtype = entry.code->dtype;
    tensor.shape = std::move(entry.shape);
    const uint8_t *begin = data + dataStart + entry.begin;
    tensor.bytes.assign(begin, begin + (entry.end - entry.begin));
    // Kernels rely on bools being exactly 0 or 1; other writers may store any non-zero byte.
    if (tensor.dtype == program::BOOL)
      for (uint8_t &b : tensor.bytes)
        b = b != 0;
    (*tensors)[entry.name] = std::move(tensor);
  }
  if (metadata != nullptr)
    *metadata = std::move(parsedMetadata);
  return Status::ok();
}

Status readSafetensors(const std::string &path, std::map<std::string, HostTensor> *tensors,
                       SafetensorsMetadata *metadata) {
  std::vector<uint8_t> file;
  SHARDC_RETURN_IF_ERROR(readFile(path, &file));
  return parseSafetensors(file.data(), file.size(), path, tensors, metadata);
}

} // namespace shardc::runtime
