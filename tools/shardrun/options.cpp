#include "tools/shardrun/options.h"

#include "runtime/checkpoint/checkpoint.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
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
    "  --threads N     threads for the CPU kernels (default: one per core)\n"
    "  --bf16-products auto|native|exact  how the CPU kernels multiply two bf16 operands\n"
    "                  (--precision bf16 bundles): native on oneDNN's bf16 kernels (AVX512-BF16\n"
    "                  or AMX; the same products summed in another order), exact (widened into\n"
    "                  f32 for OpenBLAS: the bits of casting the operands, on every CPU), or auto\n"
    "                  (default): native where the CPU has it, else exact\n"
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
    "  --save-on-signal on|off  with --save (default on): SIGTERM, SIGINT or SIGUSR1 stop\n"
    "                     the run after its current step, save a checkpoint and exit with\n"
    "                     128 + the signal (143 for SIGTERM); a second signal ends it at once\n"
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
    "  --save-adapters DIR  a bundle compiled with shardc --lora: write its trained adapters\n"
    "                     at the end as a PEFT adapter directory (adapter_model.safetensors,\n"
    "                     adapter_config.json) for peft.PeftModel.from_pretrained\n"
    "  --merge-lora       with --export-onnx on a bundle compiled with shardc --lora: write\n"
    "                     the model with each adapter merged into its weight, W + scale*B.A\n"
    "                     (PEFT's merge_and_unload; onto the dequantized weight of a\n"
    "                     --base-dtype bundle: the merged weights are f32)\n"
    "\n"
    "Bundles compiled for several ranks train with --steps, one rank per thread of this process\n"
    "(backend local), or one rank per process when started by mpirun or srun (backend mpi):\n"
    "  --comm local|mpi|nccl  the communication backend (default: mpi under mpirun/srun, else\n"
    "                     local)\n"
    "  --comm-timeout S   seconds a rank waits for another inside a collective before failing\n"
    "                     (default 30)\n"
    "  --io-timeout S     seconds the ranks wait for the slowest to load the bundle and data,\n"
    "                     and for rank 0 to write a --save-every checkpoint (default 600)\n"
    "  --comm-overlap on|off  run the collectives the compiler made asynchronous on each\n"
    "                     rank's communication thread, overlapping the ops before their first\n"
    "                     reader (default on), or in program order; the results are the same\n"
    "  --trace FILE       write every rank's timeline (kernels, collectives on the\n"
    "                     communication thread, waits for them) as a Chrome trace (JSON, for\n"
    "                     Perfetto or chrome://tracing); CPU ranks only\n"
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
                                  "--resume-step", "--trace", "--save-on-signal",
                                  "--save-adapters", "--merge-lora"};

// Thrown by an option's callback to end the parse with shardrun's own usage message (CLI11
// passes exceptions other than its own through parse()).
struct UsageFailure {
  std::string message;
};

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
  if (options.mergeLora && !options.exportOnnx)
    return usageError("--merge-lora applies to --export-onnx FILE");
  if (options.keepCheckpoints && !options.saveDir)
    return usageError("--keep-checkpoints applies to --save DIR");
  if (options.saveOnSignal && !options.saveDir)
    return usageError("--save-on-signal applies to --save DIR");
  if (options.resumeStep && !options.resumeDir)
    return usageError("--resume-step needs --resume DIR");
  if (options.minLr && options.schedule.value_or("constant") != "cosine")
    return usageError("--min-lr applies to --schedule cosine");
  return std::nullopt;
}

// shardrun's flags on a CLI11 app. Every flag that takes a value is an option whose callback
// runs as soon as CLI11 has read it (trigger_on_parse, so errors come in the order of the
// command line) and checks the value itself: the accepted syntax (no "0x10", no "+5") and the
// messages stay shardrun's. The help text is kUsage, not CLI11's generated one.
class FlagSet {
public:
  explicit FlagSet(Options *options) : options_(options) {
    app_.set_help_flag();
    // Unknown flags and a second BUNDLE are left in remaining(), for the messages below.
    app_.allow_extras();
    app_.add_flag("-h,--help", options->help);
    app_.add_flag("--overwrite", options->overwrite);
    app_.add_flag("--merge-lora", options->mergeLora);
    bundle_ = app_.add_option("bundle", options->bundle);

    text("--data", "a directory", &options->dataDir);
    text("--outputs", "a directory", &options->outputsDir);
    text("--tokens", "a token file", &options->tokensFile);
    text("--metrics", "a file", &options->metricsFile);
    text("--save", "a directory", &options->saveDir);
    text("--resume", "a checkpoint directory", &options->resumeDir);
    text("--export-onnx", "a file", &options->exportOnnx);
    text("--save-adapters", "a directory", &options->saveAdaptersDir);
    text("--trace", "a file", &options->traceFile);
    choice("--comm-overlap", "on or off", {"on", "off"}, &options->commOverlap);
    choice("--schedule", "constant or cosine", {"constant", "cosine"}, &options->schedule);
    choice("--on-nonfinite", "stop or skip-step", {"stop", "skip-step"}, &options->onNonFinite);
    choice("--comm", "local, mpi or nccl", {"local", "mpi", "nccl"}, &options->comm);
    choice("--save-on-signal", "on or off", {"on", "off"}, &options->saveOnSignal);
    choice("--device", "cpu, cuda or auto", {"cpu", "cuda", "auto"}, &options->device);
    choice("--bf16-products", "auto, native or exact", {"auto", "native", "exact"},
           &options->bf16Products);

    positive("--threads", "a thread count", 4096, [this](long long n) {
      options_->threads = static_cast<int>(n);
    });
    positive("--steps", "a step count", shardc::runtime::kMaxTrainingSteps,
             [this](long long n) { options_->steps = n; });
    positive("--save-every", "a step count", shardc::runtime::kMaxTrainingSteps,
             [this](long long n) { options_->saveEvery = n; });
    positive("--keep-checkpoints", "a checkpoint count", shardc::runtime::kMaxKeptCheckpoints,
             [this](long long n) { options_->keepCheckpoints = n; });
    value("--seed", "a seed", [this](const std::string &flag, const std::string &v) {
      uint64_t seed = 0;
      if (!parseUnsigned(v, &seed))
        fail(flag + ": expected an integer from 0 to 2^64-1, got '" + v + "'");
      options_->seed = seed;
    });
    stepNumber("--resume-step", "a step", &options->resumeStep, /*once=*/true);
    stepNumber("--warmup-steps", "a step count", &options->warmupSteps, /*once=*/false);
    rate("--lr", "a learning rate", &options->lr);
    rate("--min-lr", "a learning rate", &options->minLr);
    seconds("--comm-timeout", &options->commTimeout);
    seconds("--io-timeout", &options->ioTimeout);
  }

  std::optional<Failure> parse(int argc, char **argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    // CLI11 reads "--flag=" as the flag alone and takes the next argument as its value; here it
    // is an empty value, as "--flag ''" is (for the flags that take a value).
    std::vector<std::string> split;
    for (const std::string &arg : args) {
      if (arg.size() > 3 && arg.compare(0, 2, "--") == 0 && arg.find('=') == arg.size() - 1 &&
          expects_.count(arg.substr(0, arg.size() - 1)) != 0) {
        split.push_back(arg.substr(0, arg.size() - 1));
        split.emplace_back();
      } else {
        split.push_back(arg);
      }
    }
    // CLI11 parses a reversed list (the next argument at the back).
    std::vector<std::string> reversed(split.rbegin(), split.rend());
    try {
      app_.parse(reversed);
    } catch (const UsageFailure &failure) {
      return usageError(failure.message);
    } catch (const CLI::ArgumentMismatch &e) {
      // A flag that takes a value always takes the next argument, so only the last one can
      // lack its value.
      if (!split.empty())
        if (auto it = expects_.find(split.back()); it != expects_.end())
          return usageError(split.back() + " needs a value (" + it->second + ")");
      return usageError(e.what());
    } catch (const CLI::ParseError &e) {
      return usageError(e.what());
    }
    for (const std::string &extra : app_.remaining()) {
      if (extra.size() > 1 && extra[0] == '-')
        return usageError("unknown flag '" +
                          (extra.compare(0, 2, "--") == 0 ? extra.substr(0, extra.find('='))
                                                           : extra) +
                          "'");
      return usageError("unexpected argument '" + extra + "' (only one BUNDLE can be run)");
    }
    return std::nullopt;
  }

  bool bundleGiven() const { return bundle_->count() > 0; }
  bool given(const char *flag) const { return app_.count(flag) > 0; }

private:
  [[noreturn]] static void fail(std::string message) { throw UsageFailure{std::move(message)}; }

  // A flag taking one value: `check` gets it after the common check that it is not empty.
  void value(const char *flag, const char *expects,
             std::function<void(const std::string &, const std::string &)> check) {
    expects_[flag] = expects;
    const std::string name = flag, what = expects;
    app_.add_option_function<std::string>(
            flag,
            [name, what, check](const std::string &v) {
              if (v.empty())
                fail(name + " needs a value (" + what + "), got an empty string");
              check(name, v);
            })
        ->trigger_on_parse();
  }

  void text(const char *flag, const char *expects, std::optional<std::string> *slot) {
    value(flag, expects, [slot](const std::string &name, const std::string &v) {
      if (*slot)
        fail(name + " given more than once");
      *slot = v;
    });
  }

  void choice(const char *flag, const char *expects, std::vector<std::string> allowed,
              std::optional<std::string> *slot) {
    const std::string what = expects;
    value(flag, expects, [slot, allowed, what](const std::string &name, const std::string &v) {
      if (*slot)
        fail(name + " given more than once");
      if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
        fail(name + ": expected " + what + ", got '" + v + "'");
      *slot = v;
    });
  }

  void positive(const char *flag, const char *expects, long long max,
                std::function<void(long long)> store) {
    value(flag, expects, [max, store](const std::string &name, const std::string &v) {
      long long number = 0;
      if (!parsePositive(v, max, &number))
        fail(name + ": expected a positive integer, got '" + v + "'");
      store(number);
    });
  }

  void stepNumber(const char *flag, const char *expects, std::optional<long long> *slot,
                  bool once) {
    value(flag, expects, [slot, once](const std::string &name, const std::string &v) {
      uint64_t number = 0;
      if (!parseUnsigned(v, &number) || number > 1000000000000ULL)
        fail(name + ": expected a non-negative integer, got '" + v + "'");
      if (once && *slot)
        fail(name + " given more than once");
      *slot = static_cast<long long>(number);
    });
  }

  void rate(const char *flag, const char *expects, std::optional<double> *slot) {
    value(flag, expects, [slot](const std::string &name, const std::string &v) {
      double number = 0;
      if (!parseRate(v, &number))
        fail(name + ": expected a non-negative number, got '" + v + "'");
      *slot = number;
    });
  }

  void seconds(const char *flag, std::optional<double> *slot) {
    value(flag, "a number of seconds", [slot](const std::string &name, const std::string &v) {
      double number = 0;
      if (!parseRate(v, &number) || number <= 0)
        fail(name + ": expected a positive number of seconds, got '" + v + "'");
      if (*slot)
        fail(name + " given more than once");
      *slot = number;
    });
  }

  Options *options_;
  CLI::App app_{"shardrun"};
  CLI::Option *bundle_ = nullptr;
  std::map<std::string, std::string> expects_; // flag -> what its value is, for messages
};

} // namespace

std::optional<Failure> parseArgs(int argc, char **argv, Options *options) {
  FlagSet flags(options);
  if (auto failure = flags.parse(argc, argv))
    return failure;
  if (options->help)
    return std::nullopt;
  if (!flags.bundleGiven())
    return usageError("missing BUNDLE (the directory written by shardc)");
  if (options->steps)
    return checkLoopArgs(*options);
  for (const char *flag : kLoopFlags)
    if (flags.given(flag))
      return usageError(std::string(flag) + " applies to the training loop; give --steps K");
  if (!options->outputsDir)
    return usageError("missing --outputs DIR2");
  return std::nullopt;
}

} // namespace shardrun
