#include "runtime/checkpoint/checkpoint.h"

#include "runtime/support/file_io.h"
#include "runtime/support/quote.h"
#include "runtime/support/strict_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <system_error>
#include <vector>
#include <xxhash.h>

namespace shardc::runtime {

namespace {

constexpr const char *kFormatName = "shardc-checkpoint";

// The two data files, in manifest order.
struct DataFileKind {
  const char *key;    // manifest "files" key
  const char *prefix; // file name prefix
};
constexpr DataFileKind kParamsFile = {"params", "params-"};
constexpr DataFileKind kOptimizerFile = {"optimizer", "optimizer-"};
constexpr const char *kDataFileSuffix = ".safetensors";

struct ManifestFile {
  std::string name;
  uint64_t size = 0;
  uint64_t checksum = 0;
};

// One saved checkpoint: its scalars and its two data files.
struct ManifestEntry {
  int64_t step = 0;
  uint64_t rngSeed = 0;
  uint64_t rngCounter = 0;
  int64_t dataPosition = 0;
  std::optional<uint64_t> frozenWeightsChecksum;
  ManifestFile params;
  ManifestFile optimizer;
};

// The latest checkpoint (the manifest's top-level keys, as format 1 always had them) and the
// older ones kept beside it ("older", most recent save first; absent in a manifest that keeps
// none, as every manifest written before there were older ones).
struct Manifest {
  ManifestEntry latest;
  std::vector<ManifestEntry> older;

  // Every data file the manifest names.
  std::set<std::string> fileNames() const {
    std::set<std::string> names = {latest.params.name, latest.optimizer.name};
    for (const ManifestEntry &entry : older) {
      names.insert(entry.params.name);
      names.insert(entry.optimizer.name);
    }
    return names;
  }
};

std::string joinPath(const std::string &dir, const std::string &name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::string hex64(uint64_t value) { return fmt::format("{:016x}", value); }

bool parseHex64(const std::string &text, uint64_t *out) {
  if (text.size() != 16)
    return false;
  uint64_t value = 0;
  for (char c : text) {
    int digit;
    if (c >= '0' && c <= '9')
      digit = c - '0';
    else if (c >= 'a' && c <= 'f')
      digit = c - 'a' + 10;
    else
      return false;
    value = value << 4 | static_cast<uint64_t>(digit);
  }
  *out = value;
  return true;
}

// A data file name must stay inside the checkpoint directory and look like one we write.
bool isDataFileName(const std::string &name, const DataFileKind &kind) {
  const std::string prefix = kind.prefix, suffix = kDataFileSuffix;
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  for (char c : name)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '.'))
      return false;
  return true;
}

Json manifestFileJson(const ManifestFile &file) {
  return {{"name", file.name}, {"size", file.size}, {"xxh3_64", hex64(file.checksum)}};
}

// The entry's keys, into `object` (the manifest's root for the latest one).
void addEntryJson(const ManifestEntry &entry, Json *object) {
  (*object)["step"] = entry.step;
  (*object)["rng_seed"] = entry.rngSeed;
  (*object)["rng_counter"] = entry.rngCounter;
  (*object)["data_position"] = entry.dataPosition;
  if (entry.frozenWeightsChecksum)
    (*object)["frozen_weights_xxh3_64"] = hex64(*entry.frozenWeightsChecksum);
  (*object)["files"] = {{kParamsFile.key, manifestFileJson(entry.params)},
                        {kOptimizerFile.key, manifestFileJson(entry.optimizer)}};
}

// Every string in it is ASCII (file names checked by isDataFileName, hex digits), so dump()
// has nothing to reject.
std::string encodeManifest(const Manifest &m) {
  Json root = {{"format", kFormatName}, {"format_version", kCheckpointFormatVersion}};
  addEntryJson(m.latest, &root);
  if (!m.older.empty()) {
    Json &older = root["older"] = Json::array();
    for (const ManifestEntry &entry : m.older) {
      Json object = Json::object();
      addEntryJson(entry, &object);
      older.push_back(std::move(object));
    }
  }
  return root.dump(2) + "\n";
}

// The member `key` of `object`, or null (also when `object` is not an object).
const Json *member(const Json &object, const char *key) {
  if (!object.is_object())
    return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

Status parseManifestFile(const std::string &source, const Json &files, const DataFileKind &kind,
                         ManifestFile *out) {
  std::string what = source + ": files." + kind.key;
  const Json *entry = member(files, kind.key);
  if (entry == nullptr || !entry->is_object())
    return Status::error(what + " is missing or not an object");
  const Json *name = member(*entry, "name");
  const Json *size = member(*entry, "size");
  const Json *checksum = member(*entry, "xxh3_64");
  if (name == nullptr || !name->is_string() ||
      !isDataFileName(name->get_ref<const std::string &>(), kind))
    return Status::error(what + ".name is missing or not a valid data file name (" + kind.prefix +
                         "....safetensors)");
  if (size == nullptr || !asUint64(*size, &out->size))
    return Status::error(what + ".size is missing or not a non-negative integer");
  if (checksum == nullptr || !checksum->is_string() ||
      !parseHex64(checksum->get_ref<const std::string &>(), &out->checksum))
    return Status::error(what + ".xxh3_64 is missing or not 16 lowercase hex digits");
  out->name = name->get<std::string>();
  return Status::ok();
}

// `object`'s step, seed, counter, data position and files; `source` names it in messages.
Status parseManifestEntry(const std::string &source, const Json &object, ManifestEntry *out) {
  auto getInt = [&](const char *key, int64_t *value) -> Status {
    const Json *v = member(object, key);
    if (v == nullptr || !asInt64(*v, value) || *value < 0)
      return Status::error(source + ": " + key + " is missing or not a non-negative integer");
    if (*value > kMaxTrainingSteps)
      return Status::error(source + ": " + key + " " + std::to_string(*value) +
                           " is beyond the " + std::to_string(kMaxTrainingSteps) +
                           " steps a run may take (not written by shardrun)");
    return Status::ok();
  };
  auto getUint = [&](const char *key, uint64_t *value) -> Status {
    const Json *v = member(object, key);
    if (v == nullptr || !asUint64(*v, value))
      return Status::error(source + ": " + key + " is missing or not a non-negative integer");
    return Status::ok();
  };
  SHARDC_RETURN_IF_ERROR(getInt("step", &out->step));
  SHARDC_RETURN_IF_ERROR(getUint("rng_seed", &out->rngSeed));
  SHARDC_RETURN_IF_ERROR(getUint("rng_counter", &out->rngCounter));
  SHARDC_RETURN_IF_ERROR(getInt("data_position", &out->dataPosition));
  // Optional: manifests written before it existed, or without a bundle, have none.
  if (const Json *frozen = member(object, "frozen_weights_xxh3_64")) {
    uint64_t checksum = 0;
    if (!frozen->is_string() || !parseHex64(frozen->get_ref<const std::string &>(), &checksum))
      return Status::error(source + ": frozen_weights_xxh3_64 is not 16 hex digits");
    out->frozenWeightsChecksum = checksum;
  }
  const Json *files = member(object, "files");
  if (files == nullptr || !files->is_object())
    return Status::error(source + ": files is missing or not an object");
  SHARDC_RETURN_IF_ERROR(parseManifestFile(source, *files, kParamsFile, &out->params));
  return parseManifestFile(source, *files, kOptimizerFile, &out->optimizer);
}

Status parseManifestJson(const std::string &source, const Json &root, Manifest *out) {
  if (!root.is_object())
    return Status::error(source + ": not a JSON object");
  const Json *format = member(root, "format");
  if (format == nullptr || !format->is_string() ||
      format->get_ref<const std::string &>() != kFormatName)
    return Status::error(source + ": not a shardc checkpoint manifest (\"format\" is not \"" +
                         kFormatName + "\")");
  int64_t version = 0;
  const Json *versionValue = member(root, "format_version");
  if (versionValue == nullptr || !asInt64(*versionValue, &version))
    return Status::error(source + ": format_version is missing or not an integer");
  if (version != kCheckpointFormatVersion)
    return Status::error(source + ": unsupported checkpoint format version " +
                         std::to_string(version) +
                         " (supported: " + std::to_string(kCheckpointFormatVersion) +
                         (version >= 1 && version < kCheckpointFormatVersion
                              ? "; an older shardrun wrote it, with checksums this one no longer "
                                "computes"
                              : "") +
                         ")");
  SHARDC_RETURN_IF_ERROR(parseManifestEntry(source, root, &out->latest));
  out->older.clear();
  if (const Json *older = member(root, "older")) {
    if (!older->is_array())
      return Status::error(source + ": older is not an array");
    if (older->size() >= static_cast<size_t>(kMaxKeptCheckpoints))
      return Status::error(source + ": older lists " + std::to_string(older->size()) +
                           " checkpoints; a directory keeps at most " +
                           std::to_string(kMaxKeptCheckpoints) + " (--keep-checkpoints)");
    for (size_t i = 0; i < older->size(); ++i) {
      const Json &item = (*older)[i];
      const std::string where = source + ": older[" + std::to_string(i) + "]";
      if (!item.is_object())
        return Status::error(where + " is not an object");
      ManifestEntry entry;
      SHARDC_RETURN_IF_ERROR(parseManifestEntry(where, item, &entry));
      out->older.push_back(std::move(entry));
    }
  }
  return Status::ok();
}

Status parseManifest(const std::string &source, const std::vector<uint8_t> &bytes, Manifest *out) {
  Json root;
  Status status = parseJson(reinterpret_cast<const char *>(bytes.data()), bytes.size(), &root);
  if (!status.isOk())
    return Status::error(source + ": " + status.message());
  try {
    return parseManifestJson(source, root, out);
  } catch (const Json::exception &e) {
    // Every value's type is checked before it is read; this is a net, not a path.
    return Status::error(source + ": " + e.what());
  }
}

// "params-00000010.safetensors", or with ".N" before the suffix when the current manifest
// already names that file (re-saving a step must not overwrite the committed checkpoint).
// A name no file in `dir` has (the manifest's, a user's copy, what a killed save left): a save
// never overwrites a file.
std::string freshDataFileName(const std::string &dir, const DataFileKind &kind, int64_t step,
                              const std::set<std::string> &committed) {
  char stepText[32];
  std::snprintf(stepText, sizeof stepText, "%08lld", static_cast<long long>(step));
  std::string base = std::string(kind.prefix) + stepText;
  std::string name = base + kDataFileSuffix;
  for (int n = 1; committed.count(name) != 0 || pathExists(joinPath(dir, name)); ++n)
    name = base + "." + std::to_string(n) + kDataFileSuffix;
  return name;
}

Status writeDataFile(const std::string &dir, const DataFileKind &kind, int64_t step,
                     const std::map<std::string, HostTensor> &tensors,
                     const std::set<std::string> &committed, ManifestFile *out) {
  out->name = freshDataFileName(dir, kind, step, committed);
  std::string path = joinPath(dir, out->name);
  std::vector<NamedTensorRef> refs;
  for (const auto &named : tensors)
    refs.push_back({named.first, &named.second});
  std::vector<uint8_t> image;
  SHARDC_RETURN_IF_ERROR(encodeSafetensors(
      refs, {{"format", kFormatName}, {"step", std::to_string(step)}}, path, &image));
  out->size = image.size();
  out->checksum = XXH3_64bits(image.data(), image.size());
  return writeFileAtomically(path, image.data(), image.size());
}

// Whether `name` is exactly what freshDataFileName makes: "params-" or "optimizer-", eight or
// more digits, optionally "." and a number, ".safetensors".
bool isSavedDataFileName(const std::string &name) {
  for (const DataFileKind *kind : {&kParamsFile, &kOptimizerFile}) {
    if (!isDataFileName(name, *kind))
      continue;
    const size_t prefix = std::string(kind->prefix).size();
    const std::string middle =
        name.substr(prefix, name.size() - prefix - std::string(kDataFileSuffix).size());
    const size_t dot = middle.find('.');
    const std::string step = middle.substr(0, dot);
    const std::string copy = dot == std::string::npos ? "1" : middle.substr(dot + 1);
    auto digits = [](const std::string &text) {
      return !text.empty() &&
             std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (step.size() >= 8 && digits(step) && digits(copy))
      return true;
  }
  return false;
}

// What a save may delete: the data files the previous manifest named (a save wrote them) that
// the new manifest does not name (a checkpoint it no longer keeps), the temp files of
// interrupted writes and, when the previous manifest could be read (`previousKnown`), the data
// files no manifest names that are named as a save names them: what a save that failed or was
// killed before its manifest left (the caller holds the directory's lock, so no other run is
// saving). Any other file is not its to delete.
bool isStaleFile(const std::string &name, const std::set<std::string> &kept,
                 const std::set<std::string> &previouslyNamed, bool previousKnown) {
  if (kept.count(name) != 0)
    return false;
  if (previouslyNamed.count(name) != 0)
    return true;
  if (previousKnown && isSavedDataFileName(name))
    return true;
  bool dataFileName =
      name.rfind(kParamsFile.prefix, 0) == 0 || name.rfind(kOptimizerFile.prefix, 0) == 0;
  if (dataFileName && name.find(std::string(kDataFileSuffix) + ".tmp.") != std::string::npos)
    return true;
  return name.rfind(std::string(kCheckpointManifestName) + ".tmp.", 0) == 0;
}

// Removes the files of `dir` isStaleFile names; best effort (a leftover file is only disk
// space, and the next save retries it).
void removeStaleFiles(const std::string &dir, const std::set<std::string> &kept,
                      const std::set<std::string> &previouslyNamed, bool previousKnown) {
  std::error_code ec;
  // Explicit increment(ec): the range-for form would throw on a directory read error.
  std::filesystem::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (isStaleFile(it->path().filename().string(), kept, previouslyNamed, previousKnown)) {
      std::error_code removeError;
      std::filesystem::remove(it->path(), removeError);
    }
  }
}

Status loadDataFile(const std::string &dir, const ManifestFile &file,
                    std::map<std::string, HostTensor> *tensors) {
  std::string path = joinPath(dir, file.name);
  std::vector<uint8_t> bytes;
  SHARDC_RETURN_IF_ERROR(readFileNoFollow(path, &bytes));
  if (bytes.size() != file.size)
    return Status::error(path + ": size is " + std::to_string(bytes.size()) + " bytes, " +
                         kCheckpointManifestName + " says " + std::to_string(file.size) +
                         " (file truncated or altered)");
  if (XXH3_64bits(bytes.data(), bytes.size()) != file.checksum)
    return Status::error(path + ": checksum mismatch (file damaged or altered)");
  return parseSafetensors(bytes.data(), bytes.size(), path, tensors, nullptr);
}

} // namespace

Status saveCheckpoint(const std::string &dir, const CheckpointContents &contents, int keep) {
  if (contents.step < 0 || contents.dataPosition < 0)
    return Status::error(dir + ": cannot save a checkpoint with a negative step or data position");
  if (keep < 1)
    return Status::error(dir + ": cannot keep fewer than 1 checkpoint");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::error(dir + ": cannot create the checkpoint directory: " + ec.message());

  // Names the current manifest commits to must survive until the new manifest replaces it.
  std::vector<uint8_t> previousBytes;
  Manifest previous;
  bool hasPrevious = false;
  std::string manifestPath = joinPath(dir, kCheckpointManifestName);
  // A manifest that is a symbolic link is refused by the write below, before any data file.
  SHARDC_RETURN_IF_ERROR(checkRegularFileDestination(manifestPath));
  const bool manifestExists = pathExists(manifestPath);
  if (manifestExists && readFileNoFollow(manifestPath, &previousBytes).isOk() &&
      parseManifest(manifestPath, previousBytes, &previous).isOk())
    hasPrevious = true;
  const std::set<std::string> committed = hasPrevious ? previous.fileNames() : std::set<std::string>{};
  // What an earlier save left without committing it goes first, so that the directory holds at
  // most the kept checkpoints and the one being written. Not when a manifest is there but
  // unreadable: its files may be all that is left of the checkpoints.
  const bool previousKnown = hasPrevious || !manifestExists;
  removeStaleFiles(dir, committed, committed, previousKnown);

  Manifest manifest;
  ManifestEntry &entry = manifest.latest;
  entry.step = contents.step;
  entry.rngSeed = contents.rngSeed;
  entry.rngCounter = contents.rngCounter;
  entry.dataPosition = contents.dataPosition;
  entry.frozenWeightsChecksum = contents.frozenWeightsChecksum;
  SHARDC_RETURN_IF_ERROR(
      writeDataFile(dir, kParamsFile, contents.step, contents.params, committed, &entry.params));
  SHARDC_RETURN_IF_ERROR(writeDataFile(dir, kOptimizerFile, contents.step,
                                       contents.optimizerState, committed, &entry.optimizer));
  // The keep - 1 most recent earlier saves stay, most recent first; one of the step just saved
  // is superseded by it.
  if (hasPrevious) {
    std::vector<ManifestEntry> earlier = {previous.latest};
    earlier.insert(earlier.end(), previous.older.begin(), previous.older.end());
    for (const ManifestEntry &old : earlier)
      if (static_cast<int>(manifest.older.size()) + 1 < keep && old.step != entry.step)
        manifest.older.push_back(old);
  }
  std::string text = encodeManifest(manifest);
  SHARDC_RETURN_IF_ERROR(writeFileAtomically(manifestPath, text.data(), text.size()));

  // The save is committed; cleanup is best effort (a leftover file is only disk space, and the
  // next save retries it).
  removeStaleFiles(dir, manifest.fileNames(), committed, previousKnown);
  return Status::ok();
}

namespace {

CheckpointContents scalarsOf(const ManifestEntry &entry) {
  CheckpointContents scalars;
  scalars.step = entry.step;
  scalars.rngSeed = entry.rngSeed;
  scalars.rngCounter = entry.rngCounter;
  scalars.dataPosition = entry.dataPosition;
  scalars.frozenWeightsChecksum = entry.frozenWeightsChecksum;
  return scalars;
}

Status readManifest(const std::string &dir, Manifest *manifest) {
  std::string manifestPath = joinPath(dir, kCheckpointManifestName);
  std::vector<uint8_t> bytes;
  SHARDC_RETURN_IF_ERROR(readFileNoFollow(manifestPath, &bytes));
  return parseManifest(manifestPath, bytes, manifest);
}

// "10, 8": the steps of `entries`.
std::string stepList(const std::vector<const ManifestEntry *> &entries) {
  std::string text;
  for (const ManifestEntry *entry : entries)
    text += (text.empty() ? "" : ", ") + std::to_string(entry->step);
  return text;
}

// The latest checkpoint, then the older ones kept.
std::vector<const ManifestEntry *> entriesOf(const Manifest &manifest) {
  std::vector<const ManifestEntry *> entries = {&manifest.latest};
  for (const ManifestEntry &entry : manifest.older)
    entries.push_back(&entry);
  return entries;
}

// The entry of `step` (the latest without one), or an error that lists the steps kept.
Status selectEntry(const std::string &dir, const Manifest &manifest, std::optional<int64_t> step,
                   const ManifestEntry **out) {
  const std::vector<const ManifestEntry *> entries = entriesOf(manifest);
  for (const ManifestEntry *entry : entries)
    if (!step || entry->step == *step) {
      *out = entry;
      return Status::ok();
    }
  return Status::error(dir + ": holds no checkpoint of step " + std::to_string(*step) +
                       " (it keeps step" + (entries.size() == 1 ? " " : "s ") +
                       stepList(entries) + ")");
}

// The manifest of `dir` and its entry of `step` (the latest without one).
Status readEntry(const std::string &dir, std::optional<int64_t> step, Manifest *manifest,
                 const ManifestEntry **entry) {
  SHARDC_RETURN_IF_ERROR(readManifest(dir, manifest));
  return selectEntry(dir, *manifest, step, entry);
}

} // namespace

Status loadCheckpointManifest(const std::string &dir, CheckpointContents *contents,
                              std::optional<int64_t> step) {
  Manifest manifest;
  const ManifestEntry *entry = nullptr;
  SHARDC_RETURN_IF_ERROR(readEntry(dir, step, &manifest, &entry));
  *contents = scalarsOf(*entry);
  return Status::ok();
}

Status listCheckpointSteps(const std::string &dir, std::vector<int64_t> *steps) {
  Manifest manifest;
  SHARDC_RETURN_IF_ERROR(readManifest(dir, &manifest));
  steps->clear();
  for (const ManifestEntry *entry : entriesOf(manifest))
    steps->push_back(entry->step);
  return Status::ok();
}

Status loadCheckpoint(const std::string &dir, CheckpointContents *contents,
                      std::optional<int64_t> step) {
  Manifest manifest;
  const ManifestEntry *entry = nullptr;
  SHARDC_RETURN_IF_ERROR(readEntry(dir, step, &manifest, &entry));
  CheckpointContents loaded = scalarsOf(*entry);
  Status status = loadDataFile(dir, entry->params, &loaded.params);
  if (status.isOk())
    status = loadDataFile(dir, entry->optimizer, &loaded.optimizerState);
  if (!status.isOk()) {
    // A damaged checkpoint need not be the end: say which others the directory still keeps.
    std::vector<const ManifestEntry *> others = entriesOf(manifest);
    others.erase(std::find(others.begin(), others.end(), entry));
    if (!others.empty())
      return Status::error(status.message() + "; " + dir + " also keeps the checkpoint" +
                           (others.size() == 1 ? " of step " : "s of steps ") + stepList(others) +
                           " (--resume-step N)");
    return status;
  }
  *contents = std::move(loaded);
  return Status::ok();
}

} // namespace shardc::runtime
