#include "tools/shardrun/options.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace shardrun {

const char kUsage[] =
    "usage: shardrun BUNDLE --data DIR --outputs DIR2 [--threads N]\n"
    "       shardrun TRAIN_BUNDLE --steps K (--data DIR | --tokens FILE.bin) [options]\n"
    "\n"
    "Runs a bundle compiled by shardc on inputs stored as NumPy .npy files.\n"
    "\n"
    "  BUNDLE          the bundle directory written by shardc (holds program.pb)\n"
    "  --data DIR      directory with one .npy file per graph input\n"
    "  --outputs DIR2  directory to write one .npy file per graph output (created if needed)\n"
    "  --threads N     threads for the CPU kernels' matrix products (default: OpenBLAS's own\n"
    "                  choice, usually one per core)\n"
    "\n"
    "Training bundles (shardc --mode train). Without --steps: one step, every input of the\n"
    "step (batch, parameters, optimizer state, step, lr) read from DIR. With --steps: the\n"
    "training loop, starting from the parameters compiled into the bundle:\n"
    "  --steps K          run until K steps are done\n"
    "  --data DIR         batches: DIR/<batch input>.npy holds N rows (a multiple of the batch\n"
    "                     size B); step k uses rows [(k-1)B, kB) modulo N\n"
    "  --tokens FILE.bin  batches: random windows of a uint16 token file; the model's first\n"
    "                     i64[B x T] batch input gets the tokens, the second the targets\n"
    "  --seed S           seed of the token windows and dropout masks (default 0; kept in\n"
    "                     checkpoints)\n"
    "  --lr X             peak learning rate (default 1e-3)\n"
    "  --schedule constant|cosine  lr schedule (default constant); cosine decays to --min-lr\n"
    "  --warmup-steps N   linear warmup from 0 to --lr over the first N steps (default 0)\n"
    "  --min-lr X         final lr of the cosine schedule (default 0)\n"
    "  --metrics FILE     write one JSON line per step: step, loss, lr, step_time_ms\n"
    "  --save DIR         write a checkpoint to DIR at the end (and every --save-every N steps)\n"
    "  --save-every N     checkpoint every N steps (needs --save)\n"
    "  --keep-checkpoints K  checkpoints --save keeps in DIR: the latest and K-1 before it\n"
    "                     (default 2); older ones are deleted after each save\n"
    "  --resume DIR       continue from the (latest) checkpoint in DIR up to --steps\n"
    "  --resume-step N    resume from the checkpoint of step N that DIR keeps instead\n"
    "  --on-nonfinite stop|skip-step  a step whose loss is NaN or infinite stops the run\n"
    "                     (default; naming where it began) or is skipped: its update is\n"
    "                     discarded and training goes on (counted in --metrics)\n"
    "  --overwrite        let --save replace a checkpoint in DIR that the run did not resume\n"
    "                     from (refused otherwise)\n"
    "  --outputs DIR2     optional with --steps: write the final parameters as NAME.npy\n"
    "  --export-onnx FILE write the compiled ONNX model with the trained parameters to FILE\n"
    "                     at the end (FILE.data beside it holds them if FILE would reach 2 GiB)\n"
    "\n"
    "Bundles compiled for several ranks train with --steps, one rank per thread of this process\n"
    "(backend local), or one rank per process when started by mpirun or srun (backend mpi):\n"
    "  --comm local|mpi|nccl  the communication backend (default: mpi under mpirun/srun, else\n"
    "                     local)\n"
    "  --comm-timeout S   seconds a rank waits for another inside a collective before failing\n"
    "                     (default 30)\n"
    "  --io-timeout S     seconds the ranks wait for the slowest to load the bundle and data,\n"
    "                     and for rank 0 to write a --save-every checkpoint (default 600)\n"
    "  --device cpu|cuda|auto  where each rank's memory lives and its kernels run (default\n"
    "                     cpu; auto: cuda when a GPU is visible). On cuda every rank of this\n"
    "                     process uses GPU 0; a program using a kernel that has no CUDA\n"
    "                     implementation yet is refused before it runs, naming the op\n"
    "  -h, --help      print this help and exit\n"
    "\n"
    "A tensor's file name is its name with every character outside [A-Za-z0-9._-] replaced by\n"
    "'_' plus '.npy' (graph input 'onnx::Add_5' is read from DIR/onnx__Add_5.npy).\n"
    "Supported .npy dtypes: <f4 (float32), <i8 (int64), <i4 (int32), |b1 (bool).\n";

namespace {

// Flags that only make sense for the training loop, for the "needs --steps" check.
const char *const kLoopFlags[] = {"--tokens",       "--seed",        "--metrics",  "--save",
                                  "--save-every",   "--resume",      "--lr",       "--schedule",
                                  "--warmup-steps", "--min-lr",      "--export-onnx",
                                  "--on-nonfinite", "--overwrite", "--keep-checkpoints",
                                  "--resume-step"};

// Parses a positive decimal integer no larger than `max`.
bool parsePositive(const std::string &text, long long max, long long *out) {
  if (text.empty() || text.size() > 18)
    return false;
  long long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > max)
    return false;
  *out = value;
  return true;
}

// Parses a non-negative decimal integer that fits in 64 bits unsigned.
bool parseUnsigned(const std::string &text, uint64_t *out) {
  if (text.empty() || text.size() > 20)
    return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10)
      return false;
    value = value * 10 + digit;
  }
  *out = value;
  return true;
}

// Parses a finite, non-negative decimal or exponent number ("3e-4").
bool parseRate(const std::string &text, double *out) {
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(value) || value < 0)
    return false;
  *out = value;
  return true;
}

// Combinations of the training-loop flags that cannot work, whatever the bundle.
std::optional<Failure> checkLoopArgs(const Options &options) {
  if (options.dataDir && options.tokensFile)
    return usageError("give either --data DIR or --tokens FILE.bin, not both");
  if (options.saveEvery && !options.saveDir)
    return usageError("--save-every needs --save DIR");
  if (options.overwrite && !options.saveDir)
    return usageError("--overwrite applies to --save DIR");
  if (options.keepCheckpoints && !options.saveDir)
    return usageError("--keep-checkpoints applies to --save DIR");
  if (options.resumeStep && !options.resumeDir)
    return usageError("--resume-step needs --resume DIR");
  if (options.minLr && options.schedule.value_or("constant") != "cosine")
    return usageError("--min-lr applies to --schedule cosine");
  return std::nullopt;
}

} // namespace

std::optional<Failure> parseArgs(int argc, char **argv, Options *options) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool bundleSeen = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "-h" || arg == "--help") {
      options->help = true;
      continue;
    }
    if (arg == "--overwrite") {
      options->overwrite = true;
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      // "--flag value" or "--flag=value".
      std::string flag = arg, value;
      bool hasValue = false;
      size_t eq = arg.find('=');
      if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
        flag = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        hasValue = true;
      }
      const char *expects = flag == "--data"           ? "a directory"
                            : flag == "--outputs"      ? "a directory"
                            : flag == "--threads"      ? "a thread count"
                            : flag == "--steps"        ? "a step count"
                            : flag == "--tokens"       ? "a token file"
                            : flag == "--seed"         ? "a seed"
                            : flag == "--metrics"      ? "a file"
                            : flag == "--save"         ? "a directory"
                            : flag == "--save-every"   ? "a step count"
                            : flag == "--resume"       ? "a checkpoint directory"
                            : flag == "--resume-step"  ? "a step"
                            : flag == "--keep-checkpoints" ? "a checkpoint count"
                            : flag == "--lr"           ? "a learning rate"
                            : flag == "--schedule"     ? "constant or cosine"
                            : flag == "--on-nonfinite" ? "stop or skip-step"
                            : flag == "--warmup-steps" ? "a step count"
                            : flag == "--min-lr"       ? "a learning rate"
                            : flag == "--export-onnx"  ? "a file"
                            : flag == "--comm"         ? "local, mpi or nccl"
                            : flag == "--device"       ? "cpu, cuda or auto"
                            : flag == "--comm-timeout" ? "a number of seconds"
                            : flag == "--io-timeout"   ? "a number of seconds"
                                                       : nullptr;
      if (expects == nullptr)
        return usageError("unknown flag '" + flag + "'");
      if (!hasValue) {
        if (i + 1 >= args.size())
          return usageError(flag + " needs a value (" + expects + ")");
        value = args[++i];
      }
      if (value.empty())
        return usageError(flag + " needs a value (" + expects + "), got an empty string");
      std::optional<std::string> *textSlot = flag == "--data"          ? &options->dataDir
                                             : flag == "--outputs"     ? &options->outputsDir
                                             : flag == "--tokens"      ? &options->tokensFile
                                             : flag == "--metrics"     ? &options->metricsFile
                                             : flag == "--save"        ? &options->saveDir
                                             : flag == "--resume"      ? &options->resumeDir
                                             : flag == "--schedule"    ? &options->schedule
                                             : flag == "--on-nonfinite" ? &options->onNonFinite
                                             : flag == "--export-onnx" ? &options->exportOnnx
                                             : flag == "--comm"        ? &options->comm
                                             : flag == "--device"      ? &options->device
                                                                       : nullptr;
      if (textSlot != nullptr) {
        if (*textSlot)
          return usageError(flag + " given more than once");
        if (flag == "--on-nonfinite" && value != "stop" && value != "skip-step")
          return usageError("--on-nonfinite: expected stop or skip-step, got '" + value + "'");
        if (flag == "--schedule" && value != "constant" && value != "cosine")
          return usageError("--schedule: expected constant or cosine, got '" + value + "'");
        if (flag == "--comm" && value != "local" && value != "mpi" && value != "nccl")
          return usageError("--comm: expected local, mpi or nccl, got '" + value + "'");
        if (flag == "--device" && value != "cpu" && value != "cuda" && value != "auto")
          return usageError("--device: expected cpu, cuda or auto, got '" + value + "'");
        *textSlot = value;
      } else if (flag == "--comm-timeout" || flag == "--io-timeout") {
        double seconds = 0;
        if (!parseRate(value, &seconds) || seconds <= 0)
          return usageError(flag + ": expected a positive number of seconds, got '" + value +
                            "'");
        std::optional<double> &slot =
            flag == "--comm-timeout" ? options->commTimeout : options->ioTimeout;
        if (slot)
          return usageError(flag + " given more than once");
        slot = seconds;
      } else if (flag == "--lr" || flag == "--min-lr") {
        double rate = 0;
        if (!parseRate(value, &rate))
          return usageError(flag + ": expected a non-negative number, got '" + value + "'");
        (flag == "--lr" ? options->lr : options->minLr) = rate;
      } else if (flag == "--seed") {
        uint64_t seed = 0;
        if (!parseUnsigned(value, &seed))
          return usageError("--seed: expected an integer from 0 to 2^64-1, got '" + value + "'");
        options->seed = seed;
      } else if (flag == "--resume-step") {
        uint64_t number = 0;
        if (!parseUnsigned(value, &number) || number > 1000000000000ULL)
          return usageError("--resume-step: expected a non-negative integer, got '" + value + "'");
        if (options->resumeStep)
          return usageError("--resume-step given more than once");
        options->resumeStep = static_cast<long long>(number);
      } else if (flag == "--warmup-steps") {
        uint64_t number = 0;
        if (!parseUnsigned(value, &number) || number > 1000000000000ULL)
          return usageError("--warmup-steps: expected a non-negative integer, got '" + value + "'");
        options->warmupSteps = static_cast<long long>(number);
      } else {
        long long number = 0;
        long long max = flag == "--threads"            ? 4096
                        : flag == "--keep-checkpoints" ? 1000000
                                                       : 1000000000000LL;
        if (!parsePositive(value, max, &number))
          return usageError(flag + ": expected a positive integer, got '" + value + "'");
        if (flag == "--threads")
          options->threads = static_cast<int>(number);
        else if (flag == "--save-every")
          options->saveEvery = number;
        else if (flag == "--keep-checkpoints")
          options->keepCheckpoints = number;
        else
          options->steps = number;
      }
      continue;
    }
    if (bundleSeen)
      return usageError("unexpected argument '" + arg + "' (only one BUNDLE can be run)");
    options->bundle = arg;
    bundleSeen = true;
  }
  if (options->help)
    return std::nullopt;
  if (!bundleSeen)
    return usageError("missing BUNDLE (the directory written by shardc)");
  if (options->steps)
    return checkLoopArgs(*options);
  for (const char *flag : kLoopFlags)
    for (const std::string &arg : args)
      if (arg == flag || arg.rfind(std::string(flag) + "=", 0) == 0)
        return usageError(std::string(flag) + " applies to the training loop; give --steps K");
  if (!options->outputsDir)
    return usageError("missing --outputs DIR2");
  return std::nullopt;
}

} // namespace shardrun
