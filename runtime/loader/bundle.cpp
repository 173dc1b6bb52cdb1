#include "runtime/loader/bundle.h"

#include "runtime/common/sharded_tensor.h"
#include "runtime/loader/program_validation.h"
#include "runtime/loader/rank_program.h"
#include "runtime/program/bindings.h"
#include "runtime/support/file_io.h"
#include "runtime/support/quote.h"

#include <fmt/format.h>
#include <google/protobuf/stubs/common.h>
#if GOOGLE_PROTOBUF_VERSION < 4022000
#include <google/protobuf/stubs/logging.h>
#endif

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <sys/stat.h>
#include <map>
#include <utility>
#include <vector>
#include <xxhash.h>

namespace shardc::runtime {

namespace {

constexpr const char *kProgramFile = "program.pb";

Status checkIsBundleDirectory(const std::string &dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return Status::error(dir + ": no such bundle directory");
    return Status::error(dir + ": cannot open: " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode))
    return Status::error(dir + ": not a directory (a shardc bundle is a directory)");
  return Status::ok();
}

} // namespace

bool isPlainFileName(const std::string &name) {
  // No control character either: shardc writes none, and the name goes into error messages
  // (of one line) as part of the file's path.
  const bool control = std::any_of(name.begin(), name.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         !control;
}

std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  if (dir.back() == '/')
    return dir + name;
  return dir + "/" + name;
}

Status readBundleProgram(const std::string &dir, LoadedBundle *out) {
  out->dir = dir;
  out->bundle.Clear();
  out->weights.reset();
  out->weightsPath.clear();
  SHARDC_RETURN_IF_ERROR(checkIsBundleDirectory(dir));

  std::string path = joinPath(dir, kProgramFile);
  if (!pathExists(path))
    return Status::error(dir + ": missing " + kProgramFile + " (not a shardc bundle)");
  std::vector<uint8_t> bytes;
  SHARDC_RETURN_IF_ERROR(readFile(path, &bytes));
  const std::string checksumPath = joinPath(dir, kProgramChecksumFile);
  const std::string formerChecksumPath = joinPath(dir, kFormerProgramChecksumFile);
  if (!pathExists(checksumPath) && pathExists(formerChecksumPath))
    return Status::error(fmt::format(
        "{}: a bundle of an older shardc (format version 2 or earlier, FNV-1a checksums); this "
        "runtime reads format version {}: recompile the model",
        formerChecksumPath, kBundleFormatVersion));
  if (!pathExists(checksumPath))
    return Status::error(dir + ": missing " + kProgramChecksumFile +
                         " (written by every shardc that checksums program.pb): recompile the "
                         "bundle");
  std::vector<uint8_t> recorded;
  SHARDC_RETURN_IF_ERROR(readFile(checksumPath, &recorded));
  if (std::string(recorded.begin(), recorded.end()) !=
      programChecksumText(bytes.data(), bytes.size()))
    return Status::error(path + ": checksum mismatch with " + kProgramChecksumFile +
                         " (file damaged or altered)");
  return parseBundleProgram(bytes.data(), bytes.size(), path, &out->bundle);
}

std::string programChecksumText(const void *data, size_t size) {
  return fmt::format("{:016x}\n", XXH3_64bits(data, size));
}

Status parseBundleProgram(const void *data, size_t size, const std::string &path,
                          program::Bundle *out) {
  out->Clear();
  if (size > static_cast<size_t>(INT_MAX))
    return Status::error(path + ": too large for a program (" + std::to_string(size) + " bytes)");
  bool parsed;
  {
#if GOOGLE_PROTOBUF_VERSION < 4022000
    // A corrupt file must give one error line, not protobuf's own log lines (e.g. about
    // invalid UTF-8 in a string field) in front of it.
    google::protobuf::LogSilencer silenceProtobufLogs;
#endif
    parsed = out->ParseFromArray(data, static_cast<int>(size));
  }
  // An empty or foreign protobuf can parse "successfully" into defaults; format_version == 0
  // catches those.
  if (!parsed || out->format_version() == 0)
    return Status::error(path + ": truncated or not a shardc program");
  if (out->format_version() < kOldestBundleFormatVersion ||
      out->format_version() > kBundleFormatVersion) {
    const std::string readable =
        kOldestBundleFormatVersion == kBundleFormatVersion
            ? fmt::format("version {}", kBundleFormatVersion)
            : fmt::format("versions {} to {}", kOldestBundleFormatVersion, kBundleFormatVersion);
    return Status::error(fmt::format(
        "{}: format version {} is not supported (this runtime reads {}); recompile the model",
        path, out->format_version(), readable));
  }
  const std::string &mode = out->mode();
  if (mode != "forward" && mode != "train")
    return Status::error(path + ": unknown mode " + quoteForMessage(mode) +
                         " (expected 'forward' or 'train')");
  return Status::ok();
}

namespace {

// The ranks' rows of the global batch, which the placements give (batch_begin; batch_rows is
// their program's), partition it exactly: the distinct row ranges tile the batch, each row in
// one range, and every range is held by as many ranks as every other (the ranks that share
// rows: a data-parallel coordinate's tensor-parallel ranks). An edited placement that put two
// ranks on the same rows would train some rows twice and others never. Programs are valid
// (validatePlacedPrograms) when it runs.
template <typename Fail> Status checkBatchPlacements(const program::Bundle &bundle, Fail fail) {
  const int64_t global = bundle.programs(programIndexOfRank(bundle, 0)).global_batch_rows();
  // [begin, end) -> the ranks that hold those rows.
  std::map<std::pair<int64_t, int64_t>, std::vector<int>> holders;
  for (int r = 0; r < bundle.ranks_size(); ++r) {
    const program::Program &p = bundle.programs(programIndexOfRank(bundle, r));
    if (p.global_batch_rows() != global)
      return fail("rank " + std::to_string(r) + "'s program has a global batch of " +
                  std::to_string(p.global_batch_rows()) + " rows, rank 0's of " +
                  std::to_string(global));
    const int64_t begin = bundle.ranks(r).batch_begin();
    holders[{begin, begin + p.batch_rows()}].push_back(r);
  }
  if (global == 0)
    return Status::ok(); // no batch is split: every rank takes all of it
  auto rowsOf = [](const std::pair<const std::pair<int64_t, int64_t>, std::vector<int>> &entry) {
    return "rank " + std::to_string(entry.second.front()) + "'s rows [" +
           std::to_string(entry.first.first) + ", " + std::to_string(entry.first.second) + ")";
  };
  const std::string must =
      ": the ranks' rows must cover the " + std::to_string(global) + " rows of the global batch "
      "once each";
  int64_t covered = 0;
  const auto *previous = &*holders.begin();
  for (const auto &entry : holders) {
    if (entry.first.first < covered)
      return fail(rowsOf(entry) + " overlap " + rowsOf(*previous) + must);
    if (entry.first.first > covered)
      return fail(rowsOf(entry) + " leave rows [" + std::to_string(covered) + ", " +
                  std::to_string(entry.first.first) + ") to no rank" + must);
    if (entry.second.size() != holders.begin()->second.size())
      return fail("rows [" + std::to_string(entry.first.first) + ", " +
                  std::to_string(entry.first.second) + ") are held by " +
                  std::to_string(entry.second.size()) + " ranks, rows [" +
                  std::to_string(holders.begin()->first.first) + ", " +
                  std::to_string(holders.begin()->first.second) + ") by " +
                  std::to_string(holders.begin()->second.size()) + must);
    covered = entry.first.second;
    previous = &entry;
  }
  if (covered != global)
    return fail("the ranks' rows end at " + std::to_string(covered) + ", not at the " +
                std::to_string(global) + " rows of the global batch");
  return Status::ok();
}

// A placed bundle: one placement per rank, each naming a program, and every program valid as
// the program of the first rank that runs it (each other rank's is checked when it is built:
// programOfRank). A program no rank runs is an error, as is one that does not belong to it.
template <typename Fail> Status validatePlacedPrograms(const program::Bundle &bundle, Fail fail) {
  if (bundle.ranks_size() != bundle.world_size())
    return fail("world_size is " + std::to_string(bundle.world_size()) + " but the bundle places " +
                std::to_string(bundle.ranks_size()) + " ranks");
  std::vector<int> firstRank(static_cast<size_t>(bundle.programs_size()), -1);
  for (int r = 0; r < bundle.ranks_size(); ++r) {
    const int index = programIndexOfRank(bundle, r);
    if (index < 0)
      return fail("the placement of rank " + std::to_string(r) + " names program " +
                  std::to_string(bundle.ranks(r).program()) + " (the bundle has " +
                  std::to_string(bundle.programs_size()) + ")");
    if (firstRank[index] < 0)
      firstRank[index] = r;
  }
  program::Program program;
  for (int index = 0; index < bundle.programs_size(); ++index) {
    if (firstRank[index] < 0)
      return fail("program " + std::to_string(index) + " is not run by any rank");
    Status status = programOfRank(bundle, firstRank[index], &program);
    if (!status.isOk())
      return fail("rank " + std::to_string(firstRank[index]) + ": " + status.message());
  }
  return checkBatchPlacements(bundle, fail);
}

// The byte ranges of the weights file a program reads as initial values: each init's, and in a
// shared program each of its blocks' copies (the sharding was checked by
// validatePlacedPrograms).
struct InitialValueRange {
  std::string name;
  uint64_t offset = 0, size = 0;
};

std::vector<InitialValueRange> initialValueRanges(const program::Program &program) {
  std::vector<InitialValueRange> ranges;
  for (const program::StateInit &init : program.state_init()) {
    ranges.push_back({init.name(), init.offset(), init.size_bytes()});
    if (init.block_offsets_size() == 0)
      continue;
    const program::Binding *binding = findBinding(program.inputs(), init.name());
    uint64_t blockBytes = 4;
    for (int64_t d : blockShapeOf(binding->sharding()))
      blockBytes *= static_cast<uint64_t>(d);
    for (uint64_t offset : init.block_offsets())
      ranges.push_back({init.name(), offset, blockBytes});
  }
  return ranges;
}

} // namespace

Status validateBundlePrograms(const program::Bundle &bundle, const std::string &path) {
  auto fail = [&](const std::string &message) { return Status::error(path + ": " + message); };
  if (bundle.world_size() < 1)
    return fail("world_size is " + std::to_string(bundle.world_size()) + " (must be at least 1)");
  if (isPlacedBundle(bundle))
    return validatePlacedPrograms(bundle, fail);
  if (bundle.programs_size() != bundle.world_size())
    return fail("world_size is " + std::to_string(bundle.world_size()) + " but the bundle has " +
                std::to_string(bundle.programs_size()) + " programs");
  for (int r = 0; r < bundle.programs_size(); ++r) {
    const program::Program &program = bundle.programs(r);
    if (program.rank() != r)
      return fail("program " + std::to_string(r) + " has rank " + std::to_string(program.rank()) +
                  " (expected " + std::to_string(r) + ")");
    if (program.world_size() != bundle.world_size())
      return fail("program " + std::to_string(r) + " has world_size " +
                  std::to_string(program.world_size()) + " but the bundle has " +
                  std::to_string(bundle.world_size()));
    Status status = validateProgram(program);
    if (!status.isOk())
      return fail((bundle.world_size() > 1 ? "rank " + std::to_string(r) + ": " : "") +
                  status.message());
  }
  return Status::ok();
}

Status validateBundleAndLoadWeights(LoadedBundle *loaded) {
  const program::Bundle &bundle = loaded->bundle;
  const std::string programPath = joinPath(loaded->dir, kProgramFile);
  auto fail = [&](const std::string &message) {
    return Status::error(programPath + ": " + message);
  };
  SHARDC_RETURN_IF_ERROR(validateBundlePrograms(bundle, programPath));

  if (bundle.weights_file().empty())
    return Status::error(loaded->dir +
                         ": compiled without weights (planning only); recompile with the "
                         "model's weights to run it");
  if (!isPlainFileName(bundle.weights_file()))
    return fail("weights_file " + quoteForMessage(bundle.weights_file()) +
                " is not a file name inside the bundle");

  const std::string weightsPath = joinPath(loaded->dir, bundle.weights_file());
  uint64_t fileBytes = 0;
  SHARDC_RETURN_IF_ERROR(regularFileSize(weightsPath, &fileBytes));
  uint64_t regionBytes = 0;
  for (int r = 0; r < bundle.programs_size(); ++r) {
    const program::Program &program = bundle.programs(r);
    const std::string who =
        isPlacedBundle(bundle)    ? "program " + std::to_string(r) + ": "
        : bundle.world_size() > 1 ? "rank " + std::to_string(r) + ": "
                                  : "";
    if (program.weights_bytes() > fileBytes)
      return fail(who + "weights_bytes is " + std::to_string(program.weights_bytes()) + " but " +
                  weightsPath + " has " + std::to_string(fileBytes) + " bytes");
    regionBytes = std::max<uint64_t>(regionBytes, program.weights_bytes());
    for (const InitialValueRange &range : initialValueRanges(program))
      if (range.offset > fileBytes || range.size > fileBytes - range.offset)
        return fail(who + "the initial value of " + quoteForMessage(range.name) + ", bytes [" +
                    std::to_string(range.offset) + ", " +
                    std::to_string(range.offset + range.size) + "), lies past the end of " +
                    weightsPath + " (" + std::to_string(fileBytes) + " bytes)");
  }

  // The region is read into the memory the kernels use; the rest of the file (the initial
  // values) only passes through a buffer of at most 4 MiB for the checksum, freed before
  // anything the memory plan counts besides the region is allocated.
  auto weights = std::make_shared<AlignedBuffer>();
  SHARDC_RETURN_IF_ERROR(AlignedBuffer::allocate(regionBytes, "weights", weights.get()));
  SHARDC_RETURN_IF_ERROR(readFileRange(weightsPath, 0, regionBytes, weights->data()));
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> hash(XXH3_createState(),
                                                                 &XXH3_freeState);
  if (hash == nullptr || XXH3_64bits_reset(hash.get()) != XXH_OK ||
      XXH3_64bits_update(hash.get(), weights->data(), weights->size()) != XXH_OK)
    return Status::error(weightsPath + ": cannot allocate the checksum state");
  constexpr uint64_t kChunkBytes = uint64_t{4} << 20;
  std::vector<uint8_t> chunk;
  for (uint64_t offset = regionBytes; offset < fileBytes; offset += kChunkBytes) {
    chunk.resize(std::min(kChunkBytes, fileBytes - offset));
    SHARDC_RETURN_IF_ERROR(readFileRange(weightsPath, offset, chunk.size(), chunk.data()));
    XXH3_64bits_update(hash.get(), chunk.data(), chunk.size());
  }
  if (XXH3_64bits_digest(hash.get()) != bundle.weights_checksum())
    return Status::error(weightsPath + ": checksum mismatch (file damaged)");
  loaded->weights = std::move(weights);
  loaded->weightsPath = weightsPath;
  return Status::ok();
}

Status readInitialValue(const LoadedBundle &bundle, const program::StateInit &init, uint8_t *dst) {
  return readFileRange(bundle.weightsPath, init.offset(), init.size_bytes(), dst);
}

Status loadBundle(const std::string &dir, LoadedBundle *out) {
  SHARDC_RETURN_IF_ERROR(readBundleProgram(dir, out));
  return validateBundleAndLoadWeights(out);
}

} // namespace shardc::runtime
