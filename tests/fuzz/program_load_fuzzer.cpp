//===- program_load_fuzzer.cpp - libFuzzer entry point for the bundle loader -------------===//
//
// Feeds arbitrary bytes to the runtime as the program.pb of a bundle and runs what shardrun
// runs on a program before it allocates the memory the program plans (arena, workspace, step
// tensors): parse and identify (readBundleProgram's checks), validate every rank's program and
// check the weights file's ranges (validateBundleAndLoadWeights), build a few ranks' programs
// and derive each one's training signature; also each one's planned peak memory, with every
// op's workspace need, which shardrun reports from the program alone. Rejections are the
// expected outcome for most inputs; crashes, leaks, timeouts, runaway memory and error
// messages of more than one line are bugs.
//
// program.pb.xxh3_64 is not involved: readBundleProgram checks it before parsing, but a
// checksum guards against damage, not against a crafted file whose checksum was recomputed,
// so the parser and validators must hold up on their own.
//
// The weights file is `weights.bin` in the current directory (the test runs in a scratch
// directory holding one, of about 250 KiB). validateBundleAndLoadWeights allocates the
// WEIGHTS region only after checking that the file holds it, so the allocation is bounded by
// that file, never by a size read from the input; a run from another directory merely stops
// at the missing file.
//
//===-------------------------------------------------------------------------------------===//
#include "runtime/common/planned_memory.h"
#include "runtime/loader/bundle.h"
#include "runtime/loader/op_workspace.h"
#include "runtime/loader/rank_program.h"
#include "runtime/training/training_signature.h"
#include "tests/fuzz/one_line_errors.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace shardc::runtime;

namespace {

// The ranks whose programs are built: the first few and the last, the far corner of the mesh
// and the last rows of the batch. Not all of them: world_size may be 65536, and each rank's
// program is a copy of its shared program.
std::vector<int> ranksToBuild(int worldSize) {
  std::vector<int> ranks;
  for (int r = 0; r < worldSize && r < 3; ++r)
    ranks.push_back(r);
  if (worldSize > 3)
    ranks.push_back(worldSize - 1);
  return ranks;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  LoadedBundle loaded;
  loaded.dir = ".";
  const std::string path = "./program.pb";
  Status status = parseBundleProgram(data, size, path, &loaded.bundle);
  requireOneLine(status);
  if (!status.isOk())
    return 0;
  const shardc::program::Bundle &bundle = loaded.bundle;
  status = validateBundlePrograms(bundle, path);
  requireOneLine(status);
  if (!status.isOk())
    return 0;

  // Validates again, then the weights file. Its checksum matches at most one seed, so the
  // outcome gates nothing below: the checks after it depend on the programs alone.
  requireOneLine(validateBundleAndLoadWeights(&loaded));

  for (int rank : ranksToBuild(bundle.world_size())) {
    shardc::program::Program program;
    status = programOfRank(bundle, rank, &program);
    requireOneLine(status);
    if (!status.isOk())
      continue;
    if (bundle.mode() == "train") {
      TrainingSignature signature;
      requireOneLine(deriveTrainingSignature(program, &signature));
    }
    (void)planPeakMemory(program, &opWorkspaceBytes);
  }
  return 0;
}
