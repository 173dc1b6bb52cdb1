#include "tools/shardrun/training_setup.h"

#include "runtime/training/stage_gather.h"

#include "runtime/common/sharded_tensor.h"
#include "runtime/loader/rank_program.h"
#include "runtime/program/bindings.h"
#include "runtime/support/file_io.h"
#include "runtime/support/quote.h"
#include "runtime/training/training_loop.h"
#include "runtime/training/training_signature.h"

#include <fmt/core.h>
#include <xxhash.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace shardrun {

using namespace shardc::runtime;
namespace program = shardc::program;

namespace {

// The full shape of each carried tensor, or "" for one that is not sharded: what has to agree
// between ranks for their shards to be gathered together.
std::string shardingText(const program::Program &program, const std::string &name) {
  const program::Binding *binding = findBinding(program.inputs(), name);
  return binding->has_sharding()
             ? describeTensorType(program::F32, binding->sharding().global_shape())
             : "";
}

std::optional<Failure> checkTrainingPrograms(const LoadedBundle &bundle) {
  const std::string &dir = bundle.dir;
  const int world = bundle.bundle.world_size();
  // One rank per distinct program (a placed bundle shares each among many ranks).
  std::vector<int> ranks;
  std::set<int> seen;
  for (int r = 0; r < world; ++r)
    if (seen.insert(programIndexOfRank(bundle.bundle, r)).second)
      ranks.push_back(r);
  std::vector<program::Program> programs(ranks.size());
  std::vector<TrainingSignature> signatures(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const std::string who = world > 1 ? "rank " + std::to_string(ranks[i]) + ": " : "";
    Status status = programOfRank(bundle.bundle, ranks[i], &programs[i]);
    if (status.isOk())
      status = deriveTrainingSignature(programs[i], &signatures[i]);
    if (!status.isOk())
      return error(dir + ": " + who + status.message());
  }
  // Programs of one pipeline stage train the same tensors; stages train their own layers.
  std::map<int, size_t> firstOfStage;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    const program::Program &program = programs[i];
    const size_t f = firstOfStage.emplace(pipelinePlaceOf(program).stage, i).first->second;
    if (f == i)
      continue;
    const program::Program &first = programs[f];
    const TrainingSignature &a = signatures[f], &b = signatures[i];
    std::string differs = a.params != b.params                   ? "trained parameters"
                          : a.optimizerState != b.optimizerState ? "optimizer state"
                                                                 : "";
    for (const auto *names : {&a.params, &a.optimizerState})
      for (const std::string &name : *names)
        if (differs.empty() && shardingText(first, name) != shardingText(program, name))
          differs = "the sharding of " + quoteForMessage(name);
    if (!differs.empty())
      return error(dir + ": the programs of ranks " + std::to_string(ranks[f]) + " and " +
                   std::to_string(r) + " differ in " +
                   differs + " (the bundle's programs do not belong together)");
  }
  return std::nullopt;
}

// The exporter checks each trained parameter against its buffer in the rank-0 program, whose
// shape is a shard's for a sharded parameter: this copy of the bundle gives those buffers the
// full shape, which is what the exporter is handed (gathered values).
LoadedBundle withFullParameterShapes(const LoadedBundle &bundle) {
  LoadedBundle copy;
  copy.dir = bundle.dir;
  copy.weights = bundle.weights;
  copy.weightsPath = bundle.weightsPath;
  copy.bundle = bundle.bundle;
  copy.bundle.clear_programs();
  copy.bundle.clear_ranks();
  program::Program *program = copy.bundle.add_programs();
  (void)programOfRank(bundle.bundle, 0, program); // checked by checkTrainingPrograms
  for (const program::Binding &binding : program->inputs()) {
    if (!binding.has_sharding())
      continue;
    program::Buffer *buffer = program->mutable_buffers(binding.buffer());
    buffer->mutable_shape()->CopyFrom(binding.sharding().global_shape());
    buffer->set_size_bytes(static_cast<uint64_t>(globalNumelOf(binding.sharding())) *
                           sizeof(float));
  }
  return copy;
}

// XXH3-64 over the frozen parameters, by name: each one's name and bytes, in name order. A
// frozen parameter is whole on every rank that reads it, whatever the strategy (none shards
// it), so a checkpoint resumes under another strategy of the same model; constants, which
// differ between strategies, are left out.
uint64_t frozenParametersChecksum(const LoadedBundle &bundle) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> frozen; // name -> offset, size
  for (const program::Program &program : bundle.bundle.programs())
    for (const program::Buffer &buffer : program.buffers())
      if (buffer.region() == program::WEIGHTS && buffer.role() == program::ROLE_PARAMETER &&
          !buffer.name().empty())
        frozen.emplace(buffer.name(), std::make_pair(buffer.offset(), buffer.size_bytes()));
  XXH3_state_t *state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const auto &[name, place] : frozen) {
    XXH3_64bits_update(state, name.c_str(), name.size() + 1); // with its NUL: names stay apart
    XXH3_64bits_update(state, bundle.weights->data() + place.first, place.second);
  }
  const uint64_t checksum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return checksum;
}

std::optional<Failure> loadResumeCheckpoint(const Options &options, TrainingRun *run) {
  const std::string &dir = *options.resumeDir;
  CheckpointContents checkpoint;
  Status status = loadCheckpoint(dir, &checkpoint,
                                 options.resumeStep ? std::optional<int64_t>(*options.resumeStep)
                                                    : std::nullopt);
  if (!status.isOk())
    return error(status.message());
  if (checkpoint.frozenWeightsChecksum && run->frozenWeightsChecksum &&
      *checkpoint.frozenWeightsChecksum != *run->frozenWeightsChecksum)
    return error(dir + ": the checkpoint was trained against other frozen weights (XXH3-64 " +
                 fmt::format("{:016x}", *checkpoint.frozenWeightsChecksum) + "; " + options.bundle +
                 "'s are " + fmt::format("{:016x}", *run->frozenWeightsChecksum) +
                 "): resume it with the bundle, and base model, it was saved from");
  if (options.seed && *options.seed != checkpoint.rngSeed)
    return error(dir + ": the checkpoint was written with --seed " +
                 std::to_string(checkpoint.rngSeed) + ", not " + std::to_string(*options.seed) +
                 " (a resumed run must draw the same batches)");
  // Checked here as well as by the loop's restore: before the executor allocates anything.
  if (Status position = checkResumePosition(checkpoint); !position.isOk())
    return error(dir + ": " + position.message());
  if (checkpoint.dataPosition > *options.steps)
    return error(dir + ": the checkpoint is at step " + std::to_string(checkpoint.dataPosition) +
                 ", beyond --steps " + std::to_string(*options.steps));
  run->seed = checkpoint.rngSeed;
  run->checkpoint = std::move(checkpoint);
  return std::nullopt;
}

// --save DIR: created, locked for the run (one writer at a time), and not holding a checkpoint
// this run would replace without being asked: only the one it resumes from, or any with
// --overwrite.
std::optional<Failure> claimSaveDirectory(const Options &options, TrainingRun *run) {
  const std::string &dir = *options.saveDir;
  if (Status status = prepareOutputDirectory(dir); !status.isOk())
    return error("--save " + status.message());
  if (Status status = CheckpointDirLock::acquire(dir, &run->saveLock); !status.isOk())
    return error("--save " + status.message());
  if (options.overwrite || !pathExists(dir + "/" + kCheckpointManifestName))
    return std::nullopt;
  std::error_code ec;
  if (options.resumeDir && std::filesystem::equivalent(*options.resumeDir, dir, ec))
    return std::nullopt;
  CheckpointContents existing;
  std::string what = "a checkpoint";
  if (loadCheckpointManifest(dir, &existing).isOk())
    what = "the checkpoint of step " + std::to_string(existing.step);
  return error("--save " + dir + ": holds " + what + " that this run would replace; resume " +
               "from it (--resume " + dir + "), save elsewhere, or give --overwrite");
}

} // namespace

std::optional<Failure> prepareTraining(const Options &options, const LoadedBundle &bundle,
                                       bool hostsRank0, TrainingRun *run) {
  run->options = &options;
  run->bundle = &bundle;
  if (auto failure = checkTrainingPrograms(bundle))
    return failure;

  // Output locations are checked before any step runs: a run must not train to the end and
  // then fail to write what it trained.
  if (hostsRank0) {
    if (options.saveDir)
      if (auto failure = claimSaveDirectory(options, run))
        return failure;
    if (options.outputsDir)
      if (Status status = prepareOutputDirectory(*options.outputsDir); !status.isOk())
        return error("--outputs " + status.message());
    if (options.traceFile)
      if (Status status = checkRegularFileDestination(*options.traceFile); !status.isOk())
        return error("--trace: " + status.message());
  }
  if (options.saveAdaptersDir && hostsRank0) {
    run->adapters.emplace();
    if (Status status = readPeftAdapterLayout(options.bundle, &*run->adapters); !status.isOk())
      return usageError("--save-adapters: " + status.message());
  }
  if (options.exportOnnx && hostsRank0) {
    PeftAdapterLayout lora;
    if (options.mergeLora)
      if (Status status = readPeftAdapterLayout(options.bundle, &lora, "--merge-lora");
          !status.isOk())
        return usageError(status.message());
    Status status = OnnxExporter::checkDestination(*options.exportOnnx);
    if (status.isOk())
      status = OnnxExporter::open(withFullParameterShapes(bundle), &run->exporter, lora.merges);
    if (!status.isOk())
      return error("--export-onnx: " + status.message());
  }

  run->seed = options.seed.value_or(0);
  if ((options.saveDir || options.resumeDir) && bundle.weights)
    run->frozenWeightsChecksum = frozenParametersChecksum(bundle);
  if (options.resumeDir)
    if (auto failure = loadResumeCheckpoint(options, run))
      return failure;

  TrainingSignature signature;
  {
    program::Program rank0;
    (void)programOfRank(bundle.bundle, 0, &rank0);       // checked above
    (void)deriveTrainingSignature(rank0, &signature); // checked above
  }
  if (!options.tokensFile && !options.dataDir && !signature.batchInputs.empty())
    return usageError("missing --data DIR or --tokens FILE.bin (the training step has " +
                      std::to_string(signature.batchInputs.size()) + " batch input" +
                      (signature.batchInputs.size() == 1 ? "" : "s") + ")");

  LrSchedule &schedule = run->schedule;
  if (options.schedule) {
    Status status = parseLrScheduleKind(*options.schedule, &schedule.kind);
    if (!status.isOk())
      return usageError("--schedule: " + status.message());
  }
  schedule.lr = options.lr.value_or(1e-3);
  schedule.minLr = options.minLr.value_or(0.0);
  schedule.warmupSteps = options.warmupSteps.value_or(0);
  schedule.totalSteps = *options.steps;

  if (options.metricsFile && hostsRank0) {
    Status status = run->metrics.open(*options.metricsFile);
    if (!status.isOk())
      return error(status.message());
  }
  return std::nullopt;
}

} // namespace shardrun
