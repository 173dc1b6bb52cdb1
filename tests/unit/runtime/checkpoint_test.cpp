// Checkpoint directories: round trips, detection of truncated or altered files, and the
// crash-safety property of the manifest-last save scheme.
#include "runtime/checkpoint/checkpoint.h"
#include "runtime/checkpoint/checkpoint_lock.h"
#include "runtime/support/file_io.h"
#include "runtime/support/strict_json.h"
#include "tests/unit/runtime/test_util.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::TempDir;

HostTensor floats(std::vector<int64_t> shape, float start) {
  HostTensor t = makeHostTensor(program::F32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.as<float>()[i] = start + static_cast<float>(i);
  return t;
}

CheckpointContents sampleContents(int64_t step, float base) {
  CheckpointContents c;
  c.step = step;
  c.rngSeed = 0xfedcba9876543210ULL;
  c.rngCounter = 77;
  c.dataPosition = step + 1;
  c.params["layer.w"] = floats({3, 4}, base);
  c.params["layer.b"] = floats({4}, base + 100);
  HostTensor count = makeHostTensor(program::I64, {});
  count.as<int64_t>()[0] = step;
  c.optimizerState["adam.step"] = count;
  c.optimizerState["adam.m.layer.w"] = floats({3, 4}, -base);
  c.optimizerState["adam.v.empty"] = floats({0}, 0);
  return c;
}

void expectSameContents(const CheckpointContents &a, const CheckpointContents &b) {
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.rngSeed, b.rngSeed);
  EXPECT_EQ(a.rngCounter, b.rngCounter);
  EXPECT_EQ(a.dataPosition, b.dataPosition);
  for (const auto *pair : {&a.params, &a.optimizerState}) {
    const auto &other = pair == &a.params ? b.params : b.optimizerState;
    ASSERT_EQ(pair->size(), other.size());
    for (const auto &named : *pair) {
      ASSERT_EQ(other.count(named.first), 1u) << named.first;
      EXPECT_EQ(other.at(named.first).dtype, named.second.dtype);
      EXPECT_EQ(other.at(named.first).shape, named.second.shape);
      EXPECT_EQ(other.at(named.first).bytes, named.second.bytes) << named.first;
    }
  }
}

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string loadError(const std::string &dir) {
  CheckpointContents c;
  Status status = loadCheckpoint(dir, &c);
  EXPECT_FALSE(status.isOk());
  return status.message();
}

// The lock of a checkpoint directory never writes through a link planted under its name (the
// pid would truncate whatever the link names), and a manifest that is a link is neither read
// nor replaced.
TEST(Checkpoint, SymbolicLinksInTheDirectoryAreRefused) {
  TempDir dir, elsewhere;
  const std::string victim = elsewhere.file("victim");
  ASSERT_TRUE(writeFileAtomically(victim, "precious", 8).isOk());
  ASSERT_EQ(::symlink(victim.c_str(), dir.file(kCheckpointLockName).c_str()), 0);
  std::unique_ptr<CheckpointDirLock> lock;
  Status status = CheckpointDirLock::acquire(dir.path(), &lock);
  EXPECT_EQ(status.message(), dir.path() + ": the lock file " + kCheckpointLockName +
                                  " is a symbolic link; refusing to write through it");
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(readFile(victim, &bytes).isOk());
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "precious");

  TempDir ck;
  ASSERT_EQ(::symlink(victim.c_str(), ck.file("manifest.json").c_str()), 0);
  EXPECT_THAT(saveCheckpoint(ck.path(), sampleContents(10, 1.0f)).message(),
              ::testing::HasSubstr("manifest.json: exists and is a symbolic link"));
  EXPECT_THAT(loadError(ck.path()), ::testing::HasSubstr("manifest.json: is a symbolic link"));
  ASSERT_TRUE(readFile(victim, &bytes).isOk());
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "precious");
}

TEST(Checkpoint, RoundTrip) {
  TempDir dir;
  CheckpointContents saved = sampleContents(10, 1.0f);
  ASSERT_TRUE(saveCheckpoint(dir.path(), saved).isOk());
  EXPECT_EQ(listDir(dir.path()),
            (std::vector<std::string>{"manifest.json", "optimizer-00000010.safetensors",
                                      "params-00000010.safetensors"}));
  CheckpointContents loaded;
  Status status = loadCheckpoint(dir.path(), &loaded);
  ASSERT_TRUE(status.isOk()) << status.message();
  expectSameContents(saved, loaded);

  // The data files are plain safetensors files any safetensors reader can open.
  std::map<std::string, HostTensor> params;
  SafetensorsMetadata metadata;
  ASSERT_TRUE(readSafetensors(dir.file("params-00000010.safetensors"), &params, &metadata).isOk());
  EXPECT_EQ(params.size(), 2u);
  EXPECT_EQ(metadata.at("step"), "10");
}

TEST(Checkpoint, ManifestRecordsSizesAndChecksums) {
  TempDir dir;
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(3, 2.0f)).isOk());
  const std::string text = testing::readBytes(dir.file("manifest.json"));
  Json manifest;
  ASSERT_TRUE(parseJson(text.data(), text.size(), &manifest).isOk());
  EXPECT_EQ(manifest.at("format_version"), kCheckpointFormatVersion);
  EXPECT_EQ(manifest.at("step"), 3);
  EXPECT_EQ(manifest.at("rng_seed").get<uint64_t>(), 0xfedcba9876543210ULL);
  const Json &params = manifest.at("files").at("params");
  EXPECT_EQ(params.at("name"), "params-00000003.safetensors");
  EXPECT_EQ(params.at("size").get<uint64_t>(),
            testing::readBytes(dir.file("params-00000003.safetensors")).size());
  EXPECT_EQ(params.at("xxh3_64").get<std::string>().size(), 16u);
}

// The frozen weights' checksum is kept when given (a LoRA run's base), absent otherwise, and a
// manifest whose value is not 16 hex digits is refused.
TEST(Checkpoint, FrozenWeightsChecksumRoundTrip) {
  TempDir with, without;
  CheckpointContents saved = sampleContents(4, 1.5f);
  saved.frozenWeightsChecksum = 0x0123456789abcdefULL;
  ASSERT_TRUE(saveCheckpoint(with.path(), saved).isOk());
  const std::string text = testing::readBytes(with.file("manifest.json"));
  EXPECT_THAT(text, ::testing::HasSubstr("\"frozen_weights_xxh3_64\": \"0123456789abcdef\""));
  CheckpointContents loaded;
  ASSERT_TRUE(loadCheckpoint(with.path(), &loaded).isOk());
  EXPECT_EQ(loaded.frozenWeightsChecksum, std::optional<uint64_t>(0x0123456789abcdefULL));
  CheckpointContents scalars;
  ASSERT_TRUE(loadCheckpointManifest(with.path(), &scalars).isOk());
  EXPECT_EQ(scalars.frozenWeightsChecksum, loaded.frozenWeightsChecksum);

  ASSERT_TRUE(saveCheckpoint(without.path(), sampleContents(4, 1.5f)).isOk());
  EXPECT_THAT(testing::readBytes(without.file("manifest.json")),
              ::testing::Not(::testing::HasSubstr("frozen_weights")));
  ASSERT_TRUE(loadCheckpoint(without.path(), &loaded).isOk());
  EXPECT_FALSE(loaded.frozenWeightsChecksum.has_value());

  std::string bad = text;
  bad.replace(bad.find("0123456789abcdef"), 16, "0123456789ABCDEF");
  ASSERT_TRUE(writeFileAtomically(with.file("manifest.json"), bad.data(), bad.size()).isOk());
  EXPECT_THAT(loadError(with.path()),
              ::testing::HasSubstr("frozen_weights_xxh3_64 is not 16 hex digits"));
}

TEST(Checkpoint, LaterSaveReplacesEarlierAndCleansUp) {
  TempDir dir;
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(10, 1.0f)).isOk());
  testing::writeBytes(dir.file("notes.txt"), "kept");
  CheckpointContents second = sampleContents(20, 5.0f);
  ASSERT_TRUE(saveCheckpoint(dir.path(), second).isOk());
  EXPECT_EQ(listDir(dir.path()), (std::vector<std::string>{"manifest.json", "notes.txt",
                                                           "optimizer-00000020.safetensors",
                                                           "params-00000020.safetensors"}));
  CheckpointContents loaded;
  ASSERT_TRUE(loadCheckpoint(dir.path(), &loaded).isOk());
  expectSameContents(second, loaded);
}

TEST(Checkpoint, ResavingTheSameStepNeverOverwritesTheCommittedFiles) {
  TempDir dir;
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(5, 1.0f)).isOk());
  CheckpointContents again = sampleContents(5, 9.0f);
  ASSERT_TRUE(saveCheckpoint(dir.path(), again).isOk());
  EXPECT_EQ(listDir(dir.path()),
            (std::vector<std::string>{"manifest.json", "optimizer-00000005.1.safetensors",
                                      "params-00000005.1.safetensors"}));
  ASSERT_TRUE(saveCheckpoint(dir.path(), again).isOk());
  EXPECT_EQ(listDir(dir.path()),
            (std::vector<std::string>{"manifest.json", "optimizer-00000005.safetensors",
                                      "params-00000005.safetensors"}));
  CheckpointContents loaded;
  ASSERT_TRUE(loadCheckpoint(dir.path(), &loaded).isOk());
  expectSameContents(again, loaded);
}

// A crash after the new data files were written but before the manifest was replaced: the
// previous manifest still names the previous, complete files.
TEST(Checkpoint, CrashBeforeManifestLeavesThePreviousCheckpoint) {
  TempDir dir;
  CheckpointContents first = sampleContents(1, 1.0f);
  ASSERT_TRUE(saveCheckpoint(dir.path(), first).isOk());
  std::string manifestBefore = testing::readBytes(dir.file("manifest.json"));

  // What an interrupted save of step 2 leaves behind: its complete data files, and a partial
  // temp file of the manifest.
  CheckpointContents second = sampleContents(2, 7.0f);
  ASSERT_TRUE(writeSafetensors(dir.file("params-00000002.safetensors"), second.params, {}).isOk());
  ASSERT_TRUE(
      writeSafetensors(dir.file("optimizer-00000002.safetensors"), second.optimizerState, {})
          .isOk());
  testing::writeBytes(dir.file("manifest.json.tmp.1234.0"), "{\"format\": \"shardc-chec");
  testing::writeBytes(dir.file("params-00000003.safetensors.tmp.1234.1"), "partial");

  EXPECT_EQ(testing::readBytes(dir.file("manifest.json")), manifestBefore);
  CheckpointContents loaded;
  ASSERT_TRUE(loadCheckpoint(dir.path(), &loaded).isOk());
  expectSameContents(first, loaded);

  // The next successful save first removes what the interrupted one left (its data files,
  // named as a save names them and named by no manifest, and the temp files), then commits and
  // removes the checkpoint it replaced.
  ASSERT_TRUE(saveCheckpoint(dir.path(), second).isOk());
  EXPECT_EQ(listDir(dir.path()),
            (std::vector<std::string>{"manifest.json", "optimizer-00000002.safetensors",
                                      "params-00000002.safetensors"}));
  ASSERT_TRUE(loadCheckpoint(dir.path(), &loaded).isOk());
  expectSameContents(second, loaded);
}

// Files named as a save names its data files that no manifest names are what a save that
// failed or was killed before its manifest left: the next save removes them (else repeated
// preemption grows the directory without bound). Anything else is not the save's to delete.
TEST(Checkpoint, RemovesWhatInterruptedSavesLeftAndNothingElse) {
  TempDir dir;
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(1, 1.0f)).isOk());
  // A save of step 2 killed after its data files were renamed into place.
  testing::writeBytes(dir.file("params-00000002.safetensors"), "orphan");
  testing::writeBytes(dir.file("optimizer-00000002.1.safetensors"), "orphan");
  testing::writeBytes(dir.file("params-00000002.safetensors.tmp.123.0"), "partial");
  testing::writeBytes(dir.file("params-final.safetensors"), "a user's copy");
  testing::writeBytes(dir.file("params-1.safetensors"), "another");
  testing::writeBytes(dir.file("notes.txt"), "keep me");
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(3, 3.0f)).isOk());
  EXPECT_EQ(listDir(dir.path()),
            (std::vector<std::string>{"manifest.json", "notes.txt",
                                      "optimizer-00000003.safetensors",
                                      "params-00000003.safetensors", "params-1.safetensors",
                                      "params-final.safetensors"}));
  EXPECT_EQ(testing::readBytes(dir.file("params-final.safetensors")), "a user's copy");

  // With a manifest that cannot be read, files named like a save's may be all that is left of
  // the checkpoints: they stay.
  TempDir damaged;
  testing::writeBytes(damaged.file("manifest.json"), "{ not json");
  testing::writeBytes(damaged.file("params-00000007.safetensors"), "old");
  ASSERT_TRUE(saveCheckpoint(damaged.path(), sampleContents(8, 8.0f)).isOk());
  EXPECT_EQ(testing::readBytes(damaged.file("params-00000007.safetensors")), "old");
}

TEST(Checkpoint, DetectsTruncatedFiles) {
  TempDir dir;
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(10, 1.0f)).isOk());
  std::string path = dir.file("params-00000010.safetensors");
  std::string bytes = testing::readBytes(path);
  testing::writeBytes(path, bytes.substr(0, bytes.size() - 3));
  EXPECT_EQ(loadError(dir.path()),
            path + ": size is " + std::to_string(bytes.size() - 3) + " bytes, manifest.json says " +
                std::to_string(bytes.size()) + " (file truncated or altered)");
}

TEST(Checkpoint, DetectsAlteredFiles) {
  TempDir dir;
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(10, 1.0f)).isOk());
  for (const char *name : {"params-00000010.safetensors", "optimizer-00000010.safetensors"}) {
    std::string path = dir.file(name);
    std::string original = testing::readBytes(path);
    for (size_t pos : {size_t{0}, size_t{9}, original.size() - 1}) {
      std::string altered = original;
      altered[pos] = static_cast<char>(altered[pos] ^ 0x01);
      testing::writeBytes(path, altered);
      EXPECT_EQ(loadError(dir.path()), path + ": checksum mismatch (file damaged or altered)");
    }
    testing::writeBytes(path, original);
  }
  CheckpointContents loaded;
  EXPECT_TRUE(loadCheckpoint(dir.path(), &loaded).isOk());
}

TEST(Checkpoint, DetectsSwappedFiles) {
  TempDir dir;
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(10, 1.0f)).isOk());
  std::string params = testing::readBytes(dir.file("params-00000010.safetensors"));
  // A same-sized file with other contents (another run's parameters) is still caught.
  TempDir other;
  ASSERT_TRUE(saveCheckpoint(other.path(), sampleContents(10, 2.0f)).isOk());
  std::string otherParams = testing::readBytes(other.file("params-00000010.safetensors"));
  ASSERT_EQ(params.size(), otherParams.size());
  testing::writeBytes(dir.file("params-00000010.safetensors"), otherParams);
  EXPECT_THAT(loadError(dir.path()), HasSubstr("checksum mismatch"));
}

TEST(Checkpoint, MissingFilesAreErrors) {
  TempDir dir;
  EXPECT_EQ(loadError(dir.path()),
            dir.file("manifest.json") + ": cannot open: No such file or directory");
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(4, 1.0f)).isOk());
  std::filesystem::remove(dir.file("optimizer-00000004.safetensors"));
  EXPECT_EQ(loadError(dir.path()), dir.file("optimizer-00000004.safetensors") +
                                       ": cannot open: No such file or directory");
}

TEST(Checkpoint, RejectsBadManifests) {
  TempDir dir;
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(4, 1.0f)).isOk());
  std::string manifestPath = dir.file("manifest.json");
  std::string good = testing::readBytes(manifestPath);
  auto withReplaced = [&](const std::string &from, const std::string &to) {
    std::string text = good;
    size_t pos = text.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    return text.replace(pos, from.size(), to);
  };
  struct Case {
    std::string manifest;
    std::string error;
  };
  std::vector<Case> cases = {
      {good.substr(0, good.size() / 2), manifestPath + ": malformed JSON at byte "},
      {"[]", manifestPath + ": not a JSON object"},
      {withReplaced("\"shardc-checkpoint\"", "\"other\""),
       manifestPath + ": not a shardc checkpoint manifest"},
      {withReplaced("\"format_version\": 2", "\"format_version\": 3"),
       manifestPath + ": unsupported checkpoint format version 3 (supported: 2)"},
      // Version 1 checksummed the data files with FNV-1a ("fnv1a64").
      {withReplaced("\"format_version\": 2", "\"format_version\": 1"),
       manifestPath + ": unsupported checkpoint format version 1 (supported: 2; an older "
                      "shardrun wrote it, with checksums this one no longer computes)"},
      {withReplaced("\"step\": 4", "\"step\": -4"),
       manifestPath + ": step is missing or not a non-negative integer"},
      {withReplaced("\"step\": 4", "\"step\": 4.5"),
       manifestPath + ": step is missing or not a non-negative integer"},
      {withReplaced("\"step\": 4", "\"step\": \"4\""),
       manifestPath + ": step is missing or not a non-negative integer"},
      {withReplaced("\"step\": 4", "\"step\": 4, \"step\": 5"),
       manifestPath + ": malformed JSON: duplicate key \"step\""},
      {withReplaced("\"step\": 4", "\"step\": 4611686018427387904"),
       manifestPath + ": step 4611686018427387904 is beyond the 1000000000000 steps a run may "
                      "take (not written by shardrun)"},
      {withReplaced("\"files\": {", "\"files\": ["), manifestPath + ": malformed JSON at byte "},
      {withReplaced("\"params-00000004.safetensors\"", "\"../params-00000004.safetensors\""),
       manifestPath + ": files.params.name is missing or not a valid data file name"},
      {withReplaced("\"optimizer-00000004.safetensors\"", "\"params-00000004.safetensors\""),
       manifestPath + ": files.optimizer.name is missing or not a valid data file name"},
      {withReplaced("\"xxh3_64\": \"", "\"xxh3_64\": \"X"),
       manifestPath + ": files.params.xxh3_64 is missing or not 16 lowercase hex digits"},
      {withReplaced("\"format_version\": 2", "\"format_version\": 2, \"older\": {}"),
       manifestPath + ": older is not an array"},
      {withReplaced("\"format_version\": 2", "\"format_version\": 2, \"older\": [7]"),
       manifestPath + ": older[0] is not an object"},
      {withReplaced("\"format_version\": 2",
                    "\"format_version\": 2, \"older\": [{\"step\": 2, \"rng_seed\": 0}]"),
       manifestPath + ": older[0]: rng_counter is missing or not a non-negative integer"},
  };
  for (const Case &c : cases) {
    testing::writeBytes(manifestPath, c.manifest);
    EXPECT_THAT(loadError(dir.path()), StartsWith(c.error)) << c.manifest;
  }
}

// A manifest listing many kept checkpoints is read in time linear in their number (nlohmann's
// callback parser took a minute for 100,000).
TEST(Checkpoint, LongListsOfKeptCheckpointsReadInLinearTime) {
  TempDir dir;
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(4, 1.0f)).isOk());
  const std::string manifest = testing::readBytes(dir.file("manifest.json"));
  const size_t stepAt = manifest.find("\"step\"");
  const size_t filesEnd = manifest.rfind('}');
  ASSERT_NE(stepAt, std::string::npos);
  // The latest entry's keys, as one object of "older".
  const std::string entry = "{" + manifest.substr(stepAt, filesEnd - stepAt) + "}";
  auto withOlder = [&](size_t count) {
    std::string older = ", \"older\": [";
    for (size_t i = 0; i < count; ++i)
      older += (i ? "," : "") + entry;
    return manifest.substr(0, filesEnd) + older + "]}";
  };
  testing::writeBytes(dir.file("manifest.json"), withOlder(100000));
  const auto start = std::chrono::steady_clock::now();
  CheckpointContents loaded;
  Status status = loadCheckpoint(dir.path(), &loaded);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_LT(seconds, 20.0) << "100,000 kept checkpoints took " << seconds << " s to read";
}

TEST(Checkpoint, RejectsNegativeStep) {
  TempDir dir;
  CheckpointContents c = sampleContents(1, 1.0f);
  c.step = -1;
  EXPECT_THAT(saveCheckpoint(dir.path(), c).message(), HasSubstr("negative step"));
}

TEST(Checkpoint, CreatesTheDirectory) {
  TempDir dir;
  std::string nested = dir.file("run/ckpt");
  ASSERT_TRUE(saveCheckpoint(nested, sampleContents(0, 1.0f)).isOk());
  CheckpointContents loaded;
  ASSERT_TRUE(loadCheckpoint(nested, &loaded).isOk());
  EXPECT_EQ(loaded.step, 0);
}

// keep = 3: the three most recent saves stay, each loadable by its step; the one before them is
// deleted (its files only), and the manifest lists the older ones most recent first.
TEST(Checkpoint, KeepsTheMostRecentCheckpoints) {
  TempDir dir;
  for (int64_t step : {1, 2, 3, 4})
    ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(step, static_cast<float>(step)), 3)
                    .isOk());
  EXPECT_EQ(listDir(dir.path()),
            (std::vector<std::string>{"manifest.json", "optimizer-00000002.safetensors",
                                      "optimizer-00000003.safetensors",
                                      "optimizer-00000004.safetensors",
                                      "params-00000002.safetensors", "params-00000003.safetensors",
                                      "params-00000004.safetensors"}));
  std::vector<int64_t> steps;
  ASSERT_TRUE(listCheckpointSteps(dir.path(), &steps).isOk());
  EXPECT_EQ(steps, (std::vector<int64_t>{4, 3, 2}));
  for (int64_t step : {2, 3, 4}) {
    CheckpointContents loaded;
    Status status = loadCheckpoint(dir.path(), &loaded, step);
    ASSERT_TRUE(status.isOk()) << status.message();
    expectSameContents(sampleContents(step, static_cast<float>(step)), loaded);
  }
  CheckpointContents latest;
  ASSERT_TRUE(loadCheckpoint(dir.path(), &latest).isOk());
  EXPECT_EQ(latest.step, 4);
  CheckpointContents missing;
  EXPECT_EQ(loadCheckpoint(dir.path(), &missing, 1).message(),
            dir.path() + ": holds no checkpoint of step 1 (it keeps steps 4, 3, 2)");

  // A smaller keep later drops the oldest; re-saving a kept step supersedes it.
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(3, 30.0f), 2).isOk());
  ASSERT_TRUE(listCheckpointSteps(dir.path(), &steps).isOk());
  EXPECT_EQ(steps, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(listDir(dir.path()),
            (std::vector<std::string>{"manifest.json", "optimizer-00000003.1.safetensors",
                                      "optimizer-00000004.safetensors",
                                      "params-00000003.1.safetensors",
                                      "params-00000004.safetensors"}));
}

// A damaged latest checkpoint is reported with the steps still there to resume from.
TEST(Checkpoint, DamagedLatestNamesTheOlderOnesKept) {
  TempDir dir;
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(5, 1.0f), 2).isOk());
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(10, 2.0f), 2).isOk());
  std::string path = dir.file("params-00000010.safetensors");
  std::string bytes = testing::readBytes(path);
  bytes[bytes.size() - 1] ^= 0x01;
  testing::writeBytes(path, bytes);
  EXPECT_EQ(loadError(dir.path()), path + ": checksum mismatch (file damaged or altered); " +
                                       dir.path() +
                                       " also keeps the checkpoint of step 5 (--resume-step N)");
  CheckpointContents older;
  ASSERT_TRUE(loadCheckpoint(dir.path(), &older, 5).isOk());
  expectSameContents(sampleContents(5, 1.0f), older);
}

// Manifests written with keep = 1 have no "older" key: the format of every earlier save.
TEST(Checkpoint, KeepOneWritesNoOlderList) {
  TempDir dir;
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(1, 1.0f)).isOk());
  ASSERT_TRUE(saveCheckpoint(dir.path(), sampleContents(2, 1.0f)).isOk());
  const std::string text = testing::readBytes(dir.file("manifest.json"));
  Json manifest;
  ASSERT_TRUE(parseJson(text.data(), text.size(), &manifest).isOk());
  EXPECT_FALSE(manifest.contains("older"));
  EXPECT_FALSE(saveCheckpoint(dir.path(), sampleContents(3, 1.0f), 0).isOk());
}

} // namespace
} // namespace shardc::runtime
