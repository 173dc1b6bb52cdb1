// Training checkpoints: everything needed to resume a single-rank training run exactly.
//
// A checkpoint directory holds
//   params-SSSSSSSS.safetensors     the model parameters (SSSSSSSS = the step, 8+ digits)
//   optimizer-SSSSSSSS.safetensors  the optimizer state (moments etc.), by the optimizer's names
//   manifest.json                   format version, step, RNG seed and counter, data position,
//                                   and for each data file its name, size and FNV-1a 64 checksum
//
// Crash safety. The manifest is the commit point. saveCheckpoint writes the new data files under
// names no current manifest refers to (the step is in the name; re-saving a step that the
// current manifest already names adds ".1", ".2", ...), each atomically (temp file + rename);
// only then does it replace manifest.json atomically, and only after that does it delete what
// it owns and no longer needs: the data files of the checkpoint it replaced (the previous
// manifest named them) and temp files of interrupted writes. Nothing else is deleted, even a
// file named like a checkpoint's (a copy a user put there; the data files of a save killed
// before its manifest was written stay as well). A crash at any point therefore leaves either
// the previous manifest with the previous, complete data files, or the new manifest with the
// new ones. (Atomic here means
// against process crashes: the file helpers rename without fsync, so a power loss can still
// lose the most recent save on some file systems.) One process writes a directory at a time.
//
// loadCheckpoint checks every data file's size and checksum against the manifest before parsing
// it, so a truncated, damaged or swapped file is reported as such rather than loaded:
//   DIR/params-00000010.safetensors: checksum mismatch (file damaged or altered)
#pragma once

#include "runtime/checkpoint/safetensors.h"
#include "runtime/executor/host_tensor.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <map>
#include <string>

namespace shardc::runtime {

constexpr int kCheckpointFormatVersion = 1;
constexpr const char *kCheckpointManifestName = "manifest.json";

struct CheckpointContents {
  int64_t step = 0;         // training steps completed (>= 0)
  uint64_t rngSeed = 0;     // the run's Philox seed
  uint64_t rngCounter = 0;  // any RNG position beyond (seed, step) the trainer keeps
  int64_t dataPosition = 0; // where the data source resumes (e.g. its next batch index)
  std::map<std::string, HostTensor> params;
  std::map<std::string, HostTensor> optimizerState;
};

// Writes `contents` into `dir` (created if missing) as described above.
Status saveCheckpoint(const std::string &dir, const CheckpointContents &contents);

// Reads the checkpoint the manifest in `dir` names, verifying sizes and checksums first.
Status loadCheckpoint(const std::string &dir, CheckpointContents *contents);
// Reads only the manifest: step, seed, counter and data position (no tensors).
Status loadCheckpointManifest(const std::string &dir, CheckpointContents *contents);

} // namespace shardc::runtime
