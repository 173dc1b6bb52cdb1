// FNV-1a 64-bit checksum. The compiler writes it into Bundle.weights_checksum and the runtime
// recomputes it on load, so a damaged or swapped weights file is caught before it runs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shardc::runtime {

constexpr uint64_t kFnv1a64Offset = 0xcbf29ce484222325ULL;

// Checksum of `size` bytes at `data`. Pass a previous result as `state` to checksum a stream in
// pieces: fnv1a64(b, nb, fnv1a64(a, na)) == fnv1a64 of a followed by b.
uint64_t fnv1a64(const void *data, size_t size, uint64_t state = kFnv1a64Offset);

} // namespace shardc::runtime
