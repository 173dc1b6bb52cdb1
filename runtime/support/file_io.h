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
// Same, refusing a symbolic link at `path` ("PATH: is a symbolic link; refusing to follow
// it"): for files of a directory others may plant links in (a checkpoint's manifest and data).
Status readFileNoFollow(const std::string &path, std::vector<uint8_t> *out);
// Same, into 64-aligned memory (weights are read straight into the region kernels use).
Status readFile(const std::string &path, AlignedBuffer *out);

// Whether a write may put a file at `path`: nothing is there yet, or a regular file (which the
// write replaces). Anything else (a device node, a named pipe, a socket, a directory, a
// symbolic link) is refused in one line naming it: no write replaces what is not a plain file.
// For output options, checked before any work is done; writeFileAtomically checks it too.
Status checkRegularFileDestination(const std::string &path);

// Writes `size` bytes to `path` through a temporary file in the same directory that is then
// renamed over `path`: readers see the old content or the new one, never a partial file. The
// file is synced before the rename and the directory after it, so that the new content
// survives a power loss once this returns. A `path` that holds anything but a regular file is
// refused (checkRegularFileDestination), before anything is written.
Status writeFileAtomically(const std::string &path, const void *data, size_t size);

// A piece of a file that writeFileAtomically assembles from several buffers.
struct ByteSpan {
  const void *data;
  size_t size;
};
// Same, for a file made of `pieces` in order: large files (exported weights) are written
// straight from the buffers that hold them, without first copying them into one.
Status writeFileAtomically(const std::string &path, const std::vector<ByteSpan> &pieces);

// The size of the regular file at `path`, and `size` bytes of it from byte `offset` into `dst`
// (a file that ends before offset + size is an error): for readers that size their storage
// from a header before reading the data into it (.npy tensors, allocated exactly).
Status regularFileSize(const std::string &path, uint64_t *size);
Status readFileRange(const std::string &path, uint64_t offset, uint64_t size, uint8_t *dst);

// True when `path` names an existing file or directory (errors such as EACCES count as
// existing, so the caller's later open reports the real cause).
bool pathExists(const std::string &path);

// Makes `dir` (and its parents) exist as a directory this process can create files in, by
// creating and removing a probe file: for output locations, checked before any work is done.
// The error names the directory and the cause ("is a file, not a directory", "Permission
// denied").
Status prepareOutputDirectory(const std::string &dir);

} // namespace shardc::runtime
