// NumPy .npy files: how graph inputs and outputs travel between shardrun and Python.
//
// Reads format versions 1.0, 2.0 and 3.0, C order only, dtypes <f4 <i8 <i4 |b1 (the runtime's
// f32, i64, i32, bool), including 0-d arrays. The header is parsed strictly and the data
// length must match the shape exactly: anything else is a one-line error naming the file,
// never a crash. Writes version 1.0 with the header padded to 64 bytes, as numpy does.
#pragma once

#include "runtime/executor/host_tensor.h"
#include "runtime/support/status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime {

Status readNpy(const std::string &path, HostTensor *out);

// What a .npy file's header says, checked as readNpy checks it (including that the file holds
// exactly the data the header announces), for readers that take only some of its rows.
struct NpyFileInfo {
  DType dtype = program::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  uint64_t dataOffset = 0; // where the array's bytes start in the file
};
Status readNpyInfo(const std::string &path, NpyFileInfo *out);
// Rows [firstRow, firstRow + rows) of dim 0 of the array in `path` (whose header readNpyInfo
// returned as `info`) into `dst`, which holds rows * (bytes of one row) bytes. Bool bytes are
// normalised to 0/1 as readNpy does.
Status readNpyRows(const std::string &path, const NpyFileInfo &info, int64_t firstRow,
                   int64_t rows, uint8_t *dst);
// Decodes an in-memory .npy image; `source` names it in error messages.
Status parseNpy(const uint8_t *data, size_t size, const std::string &source, HostTensor *out);

// Writes atomically (temp file + rename). Fails if the tensor's dtype is unknown or its bytes
// do not match its shape.
Status writeNpy(const std::string &path, const HostTensor &tensor);
Status encodeNpy(const HostTensor &tensor, const std::string &target, std::vector<uint8_t> *out);

} // namespace shardc::runtime
