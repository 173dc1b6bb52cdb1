// Whole-file reads and atomic whole-file writes. Errors are one line: the path, then why
// ("x.npy: cannot open: No such file or directory").
#pragma once

#include "runtime/support/aligned_buffer.h"
#include "runtime/support/status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime {

// Reads the whole regular file at `path` into `out`.
Status readFile(const std::string &path, std::vector<uint8_t> *out);
// Same, into 64-aligned memory (weights are read straight into the region kernels use).
Status readFile(const std::string &path, AlignedBuffer *out);

// Writes `size` bytes to `path` through a temporary file in the same directory that is then
// renamed over `path`: readers see the old content or the new one, never a partial file.
Status writeFileAtomically(const std::string &path, const void *data, size_t size);

// True when `path` names an existing file or directory (errors such as EACCES count as
// existing, so the caller's later open reports the real cause).
bool pathExists(const std::string &path);

} // namespace shardc::runtime
