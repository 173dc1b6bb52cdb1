// safetensors files (https://github.com/huggingface/safetensors), the format checkpoints use
// so that Python (safetensors.numpy / safetensors.torch) can read and write them directly.
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON header, then the data
// section. The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets relative to the data section) plus an optional "__metadata__" object of string
// values; it is padded with spaces to a multiple of 8 bytes.
//
// Writing produces the bytes the Python library produces: tensors ordered by descending dtype
// alignment (I64, F32, I32, BOOL — the library's order), then by name; "__metadata__" first
// with its keys sorted; compact JSON. (The library itself writes several metadata keys in hash
// order, so with more than one key only the key order can differ from its output.) Writes are
// atomic (temp file + rename).
//
// Reading is strict: the header length must fit the file, the JSON must be valid (no duplicate
// keys, no unknown fields), the dtypes must be ones the runtime has (F32 I64 I32 BOOL), and the
// tensors must tile the data section exactly (sorted by offset, each starting where the previous
// ended, the last ending at the end of the file, each spanning numel * element size bytes).
// Every failure is a one-line error naming the file and, where there is one, the tensor; any
// bytes give an error or a consistent result, never a crash.
#pragma once

#include "runtime/executor/host_tensor.h"
#include "runtime/support/status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace shardc::runtime {

using SafetensorsMetadata = std::map<std::string, std::string>;

// Same limit as the Python library: larger headers are rejected before parsing.
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100000000;

// A tensor to write, by reference (writing never copies the tensors' bytes twice).
struct NamedTensorRef {
  std::string name;
  const HostTensor *tensor = nullptr;
};

// The file image. Fails on duplicate names, the reserved name "__metadata__", unknown dtypes and
// tensors whose bytes do not match their shape; `target` names the file in messages. An empty
// `metadata` writes no "__metadata__" entry (the Python library's metadata=None).
Status encodeSafetensors(const std::vector<NamedTensorRef> &tensors,
                         const SafetensorsMetadata &metadata, const std::string &target,
                         std::vector<uint8_t> *out);

Status writeSafetensors(const std::string &path,
                        const std::vector<std::pair<std::string, HostTensor>> &tensors,
                        const SafetensorsMetadata &metadata);
Status writeSafetensors(const std::string &path, const std::map<std::string, HostTensor> &tensors,
                        const SafetensorsMetadata &metadata);

// Decodes an in-memory image; `source` names it in messages. `metadata` may be null.
Status parseSafetensors(const uint8_t *data, size_t size, const std::string &source,
                        std::map<std::string, HostTensor> *tensors, SafetensorsMetadata *metadata);
Status readSafetensors(const std::string &path, std::map<std::string, HostTensor> *tensors,
                       SafetensorsMetadata *metadata);

} // namespace shardc::runtime
