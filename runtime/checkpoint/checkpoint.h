// Training checkpoints: everything needed to resume a single-rank training run exactly.
//
// A checkpoint directory holds
//   params-SSSSSSSS.safetensors     the model parameters (SSSSSSSS = the step, 8+ digits)
//   optimizer-SSSSSSSS.safetensors  the optimizer state (moments etc.), by the optimizer's names
//   manifest.json                   format version, step, RNG seed and counter, data position,
//                                   and for each data file its name, size and XXH3-64 checksum;
//                                   under "older" the same for each earlier checkpoint kept
//                                   (saveCheckpoint's `keep`), most recent first
//
// Crash safety. The manifest is the commit point. saveCheckpoint writes the new data files under
// names no current manifest refers to (the step is in the name; re-saving a step that the
// current manifest already names adds ".1", ".2", ...), each atomically (temp file + rename);
// only then does it replace manifest.json atomically, and only after that does it delete what
// it owns and no longer needs: the data files of checkpoints it no longer keeps (the previous
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
#include <optional>
#include <string>
#include <vector>

namespace shardc::runtime {

// Version 2 checksums the data files with XXH3-64 ("xxh3_64"); version 1 had FNV-1a 64
// ("fnv1a64"), which this runtime no longer computes, so it refuses those manifests.
constexpr int kCheckpointFormatVersion = 2;
constexpr const char *kCheckpointManifestName = "manifest.json";
// The most steps a run takes (shardrun's --steps) and the most checkpoints a directory keeps
// (--keep-checkpoints): a manifest whose step, data position or list of kept checkpoints goes
// beyond them was not written by shardrun, and is refused.
constexpr int64_t kMaxTrainingSteps = 1000000000000;
constexpr int64_t kMaxKeptCheckpoints = 1000000;

struct CheckpointContents {
  int64_t step = 0;         // training steps completed (>= 0)
  uint64_t rngSeed = 0;     // the run's Philox seed
  uint64_t rngCounter = 0;  // any RNG position beyond (seed, step) the trainer keeps
  int64_t dataPosition = 0; // where the data source resumes (e.g. its next batch index)
  // A checksum of the frozen parameters the state was trained against (a LoRA run's base; the
  // writer defines it, shardrun over their names and bytes), when the writer recorded it
  // (manifest key "frozen_weights_xxh3_64"), so that a resume against other ones is refused.
  std::optional<uint64_t> frozenWeightsChecksum;
  std::map<std::string, HostTensor> params;
  std::map<std::string, HostTensor> optimizerState;
};

// Writes `contents` into `dir` (created if missing) as described above, keeping the `keep`
// most recent checkpoints (this one and keep - 1 earlier saves; >= 1).
Status saveCheckpoint(const std::string &dir, const CheckpointContents &contents, int keep = 1);

// Reads the latest checkpoint the manifest in `dir` names, or the kept one of `step`, verifying
// sizes and checksums first. A damaged one's error names the other steps `dir` keeps.
Status loadCheckpoint(const std::string &dir, CheckpointContents *contents,
                      std::optional<int64_t> step = std::nullopt);
// Reads only the manifest: step, seed, counter and data position (no tensors).
Status loadCheckpointManifest(const std::string &dir, CheckpointContents *contents,
                              std::optional<int64_t> step = std::nullopt);
// The steps of the checkpoints `dir` keeps, the latest first.
Status listCheckpointSteps(const std::string &dir, std::vector<int64_t> *steps);

} // namespace shardc::runtime
