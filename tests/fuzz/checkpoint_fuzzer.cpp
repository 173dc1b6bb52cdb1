//===- checkpoint_fuzzer.cpp - libFuzzer entry point for the checkpoint readers -----------===//
//
// Feeds arbitrary bytes to what `shardrun --resume` reads from a checkpoint directory that
// anyone may have written into: the first byte picks the reader, the rest is the file.
//   even: a safetensors file, parsed from memory (parseSafetensors);
//   odd:  the directory's manifest.json (`ck/manifest.json` under the current directory), then
//         listing its steps, reading its latest entry and loading that checkpoint, whose data
//         files are those of the checkpoint LLVMFuzzerInitialize saves there (two saves, so the
//         manifest keeps an older one), so that a manifest naming them reaches their size,
//         checksum and safetensors checks.
// LLVMFuzzerInitialize also writes the seeds into `seeds/`: that checkpoint's manifest and
// data files, each behind its selector byte. The test runs the fuzzer in a scratch directory.
// Rejections are the expected outcome for most inputs; crashes, leaks, timeouts, runaway
// memory and error messages of more than one line are bugs.
//
//===-------------------------------------------------------------------------------------===//
#include "runtime/checkpoint/checkpoint.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/support/file_io.h"
#include "tests/fuzz/one_line_errors.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace shardc::runtime;

namespace {

// `bytes` into `path`, plainly (a fuzzing iteration need not survive a power loss).
bool writeBytes(const std::string &path, const void *bytes, size_t size) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (f == nullptr)
    return false;
  const bool written = std::fwrite(bytes, 1, size, f) == size;
  return std::fclose(f) == 0 && written;
}

// A seed: `selector` then the bytes of `path`.
void writeSeed(const std::string &name, uint8_t selector, const std::string &path) {
  std::vector<uint8_t> bytes;
  if (!readFile(path, &bytes).isOk())
    return;
  bytes.insert(bytes.begin(), selector);
  writeBytes("seeds/" + name, bytes.data(), bytes.size());
}

CheckpointContents sampleCheckpoint(int64_t step) {
  CheckpointContents c;
  c.step = step;
  c.rngSeed = 7;
  c.dataPosition = step;
  c.params["layer.weight"] = makeHostTensor(shardc::program::F32, {2, 3});
  c.optimizerState["layer.weight.m"] = makeHostTensor(shardc::program::F32, {3});
  return c;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  std::filesystem::create_directories("ck");
  std::filesystem::create_directories("seeds");
  for (int64_t step : {1, 2})
    if (!saveCheckpoint("ck", sampleCheckpoint(step), /*keep=*/2).isOk())
      return 0;
  writeSeed("manifest", 1, "ck/manifest.json");
  for (const auto &entry : std::filesystem::directory_iterator("ck"))
    if (entry.path().extension() == ".safetensors")
      writeSeed(entry.path().filename().string(), 0, entry.path().string());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const uint8_t *file = data + 1;
  const size_t fileSize = size - 1;
  if ((data[0] & 1) == 0) {
    std::map<std::string, HostTensor> tensors;
    SafetensorsMetadata metadata;
    requireOneLine(parseSafetensors(file, fileSize, "fuzz.safetensors", &tensors, &metadata));
    return 0;
  }
  const std::string dir = "ck";
  if (!writeBytes(dir + "/" + kCheckpointManifestName, file, fileSize))
    return 0;
  std::vector<int64_t> steps;
  requireOneLine(listCheckpointSteps(dir, &steps));
  CheckpointContents contents;
  requireOneLine(loadCheckpointManifest(dir, &contents));
  requireOneLine(loadCheckpoint(dir, &contents));
  return 0;
}
