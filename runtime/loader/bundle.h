// Loading a compiled bundle: a directory holding program.pb (a binary shardc.program.Bundle),
// its checksum program.pb.xxh3_64 (16 hex digits of XXH3-64 and a newline: one flipped byte
// of program.pb could otherwise turn a weight decay of 0.01 into -655.36 and still parse) and,
// unless it was compiled for planning only, the weights file it names.
//
// The weights file starts with the WEIGHTS region the programs read while they run (frozen
// parameters, constants): it is loaded and stays resident. The initial values of the trained
// parameters (StateInit) follow it; they are read from the file once, when training starts,
// each rank only its own part, straight into the rank's parameter tensors.
#pragma once

#include "runtime/program/program.pb.h"
#include "runtime/support/aligned_buffer.h"
#include "runtime/support/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace shardc::runtime {

// Version 2 added placed bundles (Bundle.ranks, StateInit.block_offsets); version 3 checksums
// program.pb, weights.bin and source.onnx with XXH3-64 instead of FNV-1a 64. Older bundles
// cannot be verified and are refused (recompile).
constexpr uint32_t kBundleFormatVersion = 3;
constexpr uint32_t kOldestBundleFormatVersion = 3;

struct LoadedBundle {
  std::string dir; // as the user spelled it, for messages
  program::Bundle bundle;
  // The WEIGHTS region (the weights file's first bytes, as many as the largest weights_bytes
  // of the programs), shared read-only by the executors of every rank. Null until
  // validateBundleAndLoadWeights succeeds.
  std::shared_ptr<const AlignedBuffer> weights;
  std::string weightsPath; // the weights file, for readInitialValue
};

constexpr const char *kProgramChecksumFile = "program.pb.xxh3_64";
// What bundles before format version 3 had instead (FNV-1a 64): named in the error for one.
constexpr const char *kFormerProgramChecksumFile = "program.pb.fnv1a64";
// The content of program.pb.xxh3_64 for a program.pb of these bytes.
std::string programChecksumText(const void *data, size_t size);

// Reads DIR/program.pb, verifies it against program.pb.xxh3_64 (a missing or different
// checksum is an error naming the file), parses it and checks only what identifies it: a
// shardc bundle of a
// supported format version and a known mode. Lets a caller decide by mode (training bundles
// are not executable yet) before the full validation, whose errors would be less helpful.
Status readBundleProgram(const std::string &dir, LoadedBundle *out);

// Validates every rank's program (see validateProgram), then reads the weights file: checks
// its checksum (streaming past the region, which alone is kept) and that it covers each
// program's weights region and initial values. A bundle compiled without weights is an error:
// it cannot be executed.
Status validateBundleAndLoadWeights(LoadedBundle *bundle);

// Reads the initial value `init` of one of the bundle's programs from its weights file into
// `dst` (init.size_bytes() bytes). The bundle must have been loaded (validateBundleAndLoadWeights
// checked the range against the file).
Status readInitialValue(const LoadedBundle &bundle, const program::StateInit &init, uint8_t *dst);

// readBundleProgram followed by validateBundleAndLoadWeights: a bundle ready to execute.
Status loadBundle(const std::string &dir, LoadedBundle *out);

// The in-memory steps of the functions above, for callers (and fuzzers) that hold the bytes
// themselves; `path` names program.pb in messages.
//
// Parses a program.pb image and checks format version and mode (readBundleProgram's checks).
Status parseBundleProgram(const void *data, size_t size, const std::string &path,
                          program::Bundle *out);
// Checks world size, ranks and every rank's program (validateProgram), not the weights; in a
// placed bundle the placements and each shared program, as the program of its first rank
// (runtime/loader/rank_program.h builds and checks each rank's).
Status validateBundlePrograms(const program::Bundle &bundle, const std::string &path);

// True when `name` (a file name read from program.pb: weights_file, source_onnx_file) names a
// file directly inside the bundle directory: no '/', no control character (NUL, newline...),
// not "." or "..", not empty.
bool isPlainFileName(const std::string &name);

// DIR/NAME, without doubling a trailing slash of DIR.
std::string joinPath(const std::string &dir, const std::string &name);

} // namespace shardc::runtime
