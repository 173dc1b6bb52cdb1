//===- CommandLine.cpp ------------------------------------------------------------------===//
#include "CommandLine.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <string_view>

namespace shardc::driver {

namespace {

const char *kUsage = R"(usage: shardc MODEL.onnx [options]

Compiles an ONNX model into a shardc bundle (a directory with program.pb, weights.bin and
plan.txt) that shardrun executes.

options:
  -o, --output DIR          bundle directory to write (required unless --emit is given)
  --mode forward|train      compile the forward pass, or the training step (default: train:
                            forward, gradients and optimizer update as one step)
  --input-shape NAME=DIMS   sizes of a graph input's dimensions, e.g. input_ids=8x128;
                            needed for every symbolic dimension (repeatable)
  --emit=mlir               print the imported graph IR to stdout instead of compiling

training (--mode train; PyTorch's semantics and defaults):
  --optimizer adamw|sgd     default adamw
  --beta1 B, --beta2 B, --eps E      AdamW (0.9, 0.999, 1e-8)
  --weight-decay W          decoupled for AdamW (default 0.01), L2 for SGD (default 0)
  --momentum M, --nesterov  SGD (default 0, off)
  --grad-clip N             clip the global gradient norm to N (default: no clipping)
  --freeze REGEX            do not train parameters whose name matches
  --trainable REGEX         train only parameters whose name matches
  --precision fp32|bf16|fp16
                            bf16: matrix products read and write bf16-rounded values with
                            f32 accumulation; LayerNorm, softmax, the loss and the optimizer
                            (f32 master weights) stay f32 (default fp32). fp16: the same
                            with fp16, and dynamic loss scaling (PyTorch's GradScaler): a
                            step whose gradients overflow is skipped and halves the scale
  --reduce-dtype fp32|bf16|fp16
                            bf16/fp16: the element type in which data parallelism sums the
                            gradients (default fp32; the 16-bit type halves the bytes sent)
  --half-storage on|off     bf16/fp16: store the rounded values in 16 bits (default on); off
                            keeps them as f32 copies, bit-identical results, for checking
  --loss-scale-init S       fp16: the initial loss scale, a power of two (default 65536)
  --loss-scale-growth-interval N
                            fp16: finite steps in a row that double the scale (default 2000)

parallelism (training; docs/cli.md):
  --gpus N                  number of devices (ranks) to compile for (default 1)
  --strategy S              auto (default with --gpus > 1), dp, zero1, zero2, zero3, fsdp
                            (= zero3), tp (all devices tensor-parallel), sp (tp with
                            sequence parallelism), or KEY=VALUE,... with keys dp, tp, sp,
                            pp, zero, e.g. dp=2,tp=4,zero=1,sp=1; dp x tp x pp must equal
                            --gpus
  --shard REGEX=SPEC        tensor-parallel layout of the parameters whose name matches:
                            SPEC 'replicated' or one {} / {tp} per dimension, e.g.
                            'fc1\.weight=[{tp},{}]' (repeatable; docs/cli.md)
  --gpu-memory SIZE         memory of one device for --strategy auto and --remat auto,
                            e.g. 80GiB, 512MiB
                            (default: unlimited)
  --bucket-mb X             gradient bucket size in MiB for dp and zero1/zero2 (default 25)
  --fsdp-unit REGEX         zero3: the part of a parameter's name that names its FSDP unit
                            (default: automatic, e.g. transformer blocks "h.0", "h.1", ...)
  --remat none|full|selective|auto
                            recompute forward values in the backward pass instead of
                            keeping them: full: each unit (transformer block) keeps only its
                            input; selective: attention scores, softmax and dropout; auto:
                            the least recomputation, chosen per unit, that fits
                            --gpu-memory (default none)
  --micro-batches K         run each device's rows as K microbatches one after another,
                            gradients accumulated before the reduction and the update;
                            activations scale with a microbatch (default 1)
  --explain                 print the plan (plan.txt) to stdout after compiling

  --dump-ir-after-all DIR   write the IR after import and after every pass into DIR
  --no-weights              plan without reading the weights (external data may be absent);
                            the bundle can be inspected but not run
  -h, --help                show this help
  --version                 show the version
)";

ParseResult usageError(const std::string &message) {
  // One line, like every other error, so scripts can rely on it; the hint rides along.
  std::fprintf(stderr, "shardc: error: %s (see 'shardc --help')\n", message.c_str());
  return ParseResult::UsageError;
}

bool parseDims(std::string_view text, std::vector<int64_t> &dims) {
  dims.clear();
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t next = text.find_first_of("x,", pos);
    std::string part(text.substr(pos, next == std::string_view::npos ? std::string_view::npos
                                                                       : next - pos));
    if (part.empty() || part.size() > 12 ||
        part.find_first_not_of("0123456789") != std::string::npos)
      return false;
    dims.push_back(std::strtoll(part.c_str(), nullptr, 10));
    if (next == std::string_view::npos)
      break;
    pos = next + 1;
  }
  return !dims.empty();
}

bool parseNumber(const std::string &text, double &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end && *end == '\0' && std::isfinite(out);
}

// "80GiB", "80GB" (= GiB: device memory is quoted in binary units), "512MiB", "1048576".
bool parseByteSize(const std::string &text, uint64_t &out) {
  size_t digits = text.find_first_not_of("0123456789.");
  double number = 0;
  if (digits == 0 || !parseNumber(text.substr(0, digits), number) || number <= 0)
    return false;
  std::string unit = digits == std::string::npos ? "" : text.substr(digits);
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KiB" || unit == "KB" || unit == "K")
    scale = 1024.0;
  else if (unit == "MiB" || unit == "MB" || unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "GiB" || unit == "GB" || unit == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "TiB" || unit == "TB" || unit == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return false;
  double bytes = number * scale;
  if (bytes >= 1.8e19)
    return false;
  out = static_cast<uint64_t>(bytes);
  return true;
}

std::string formatNumber(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

// The optimizer's options as PyTorch's AdamW and SGD validate them, and none that the chosen
// optimizer does not read (it would be ignored without a word). An error message, or nullopt.
std::optional<std::string> checkOptimizerFlags(const TrainStepOptions &train,
                                               const std::set<std::string> &given) {
  const bool adamw = train.optimizer == "adamw";
  for (const char *flag : {"--beta1", "--beta2", "--eps"})
    if (!adamw && given.count(flag))
      return std::string(flag) + " applies to --optimizer adamw, not " + train.optimizer;
  for (const char *flag : {"--momentum", "--nesterov"})
    if (adamw && given.count(flag))
      return std::string(flag) + " applies to --optimizer sgd, not adamw (the default)";
  if (adamw && train.beta1 >= 1)
    return "--beta1 " + formatNumber(train.beta1) + ": AdamW's betas must be in [0, 1)";
  if (adamw && train.beta2 >= 1)
    return "--beta2 " + formatNumber(train.beta2) +
           ": AdamW's betas must be in [0, 1) (beta2 = 1 divides by zero from step 2)";
  if (train.nesterov && train.momentum <= 0)
    return "--nesterov needs --momentum above 0 (PyTorch's SGD requires it)";
  return std::nullopt;
}

} // namespace

ParseResult parseCommandLine(int argc, char **argv, Options &options) {
  std::set<std::string> optimizerFlags; // the optimizer options given, for checkOptimizerFlags
  bool lossScaleFlags = false;          // --loss-scale-init / --loss-scale-growth-interval given
  std::string reduceDtypeFlag;          // --reduce-dtype's value, when given
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool hasInlineValue = false;
    if (arg.rfind("--", 0) == 0) {
      if (size_t eq = arg.find('='); eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        hasInlineValue = true;
      }
    }
    // Takes the flag's value from "--flag=value" or the next argument.
    auto takeValue = [&](const char *flag) -> bool {
      if (hasInlineValue)
        return true;
      if (i + 1 >= argc)
        return false;
      value = argv[++i];
      (void)flag;
      return true;
    };

    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return ParseResult::ExitSuccess;
    }
    if (arg == "--version") {
      std::puts("shardc 0.1.0");
      return ParseResult::ExitSuccess;
    }
    if (arg == "-o" || arg == "--output") {
      if (!takeValue("-o") || value.empty())
        return usageError("-o needs a directory");
      options.output = value;
    } else if (arg == "--mode") {
      if (!takeValue("--mode"))
        return usageError("--mode needs a value (forward or train)");
      if (value == "forward")
        options.mode = Mode::Forward;
      else if (value == "train")
        options.mode = Mode::Train;
      else
        return usageError("--mode '" + value + "': expected forward or train");
    } else if (arg == "--precision") {
      if (!takeValue("--precision"))
        return usageError("--precision needs a value (fp32, bf16 or fp16)");
      if (value != "fp32" && value != "bf16" && value != "fp16")
        return usageError("--precision '" + value + "': expected fp32, bf16 or fp16");
      options.train.precision = value;
      options.train.dynamicLossScale = value == "fp16";
    } else if (arg == "--reduce-dtype") {
      if (!takeValue("--reduce-dtype"))
        return usageError("--reduce-dtype needs a value (fp32, bf16 or fp16)");
      if (value != "fp32" && value != "bf16" && value != "fp16")
        return usageError("--reduce-dtype '" + value + "': expected fp32, bf16 or fp16");
      options.train.reduceDtype = value == "fp32" ? "f32" : value == "bf16" ? "bf16" : "f16";
      reduceDtypeFlag = value;
    } else if (arg == "--half-storage") {
      if (!takeValue("--half-storage") || (value != "on" && value != "off"))
        return usageError("--half-storage needs on or off");
      options.train.halfStorage = value == "on";
    } else if (arg == "--loss-scale-init") {
      double scale = 0;
      // A power of two, as GradScaler's growth and backoff keep it: the scale stays exact.
      if (!takeValue("--loss-scale-init") || !parseNumber(value, scale) || !(scale > 0) ||
          std::ilogb(scale) < -126 || std::ilogb(scale) > 127 ||
          std::ldexp(1.0, std::ilogb(scale)) != scale)
        return usageError("--loss-scale-init needs a power of two from 2^-126 to 2^127, e.g. "
                          "65536");
      options.train.lossScaleInit = scale;
      lossScaleFlags = true;
    } else if (arg == "--loss-scale-growth-interval") {
      double n = 0;
      if (!takeValue("--loss-scale-growth-interval") || !parseNumber(value, n) || n < 1 ||
          n > 1e9 || n != std::floor(n))
        return usageError("--loss-scale-growth-interval needs a whole number of steps >= 1");
      options.train.lossScaleGrowthInterval = static_cast<int64_t>(n);
      lossScaleFlags = true;
    } else if (arg == "--emit") {
      if (!takeValue("--emit"))
        return usageError("--emit needs a value (mlir)");
      if (value != "mlir")
        return usageError("--emit '" + value + "': only --emit=mlir is supported");
      options.emitMlir = true;
    } else if (arg == "--dump-ir-after-all") {
      if (!takeValue("--dump-ir-after-all") || value.empty())
        return usageError("--dump-ir-after-all needs a directory");
      options.dumpIrDir = value;
    } else if (arg == "--input-shape") {
      if (!takeValue("--input-shape"))
        return usageError("--input-shape needs NAME=DIMS, e.g. input_ids=8x128");
      size_t eq = value.rfind('=');
      std::vector<int64_t> dims;
      if (eq == std::string::npos || eq == 0 || !parseDims(std::string_view(value).substr(eq + 1), dims))
        return usageError("--input-shape '" + value +
                          "': expected NAME=DIMS with sizes separated by 'x', e.g. input_ids=8x128");
      std::string name = value.substr(0, eq);
      if (options.inputShapes.count(name))
        return usageError("--input-shape given twice for '" + name + "'");
      options.inputShapes[name] = dims;
    } else if (arg == "--optimizer") {
      if (!takeValue("--optimizer") || (value != "adamw" && value != "sgd"))
        return usageError("--optimizer needs adamw or sgd");
      options.train.optimizer = value;
    } else if (arg == "--beta1" || arg == "--beta2" || arg == "--eps" ||
               arg == "--weight-decay" || arg == "--momentum" || arg == "--grad-clip") {
      double number = 0;
      if (!takeValue(arg.c_str()) || !parseNumber(value, number) || number < 0)
        return usageError(arg + " needs a non-negative number");
      optimizerFlags.insert(arg);
      if (arg == "--beta1")
        options.train.beta1 = number;
      else if (arg == "--beta2")
        options.train.beta2 = number;
      else if (arg == "--eps")
        options.train.eps = number;
      else if (arg == "--momentum")
        options.train.momentum = number;
      else if (arg == "--grad-clip")
        options.train.gradClip = number;
      else {
        options.train.weightDecay = number;
        options.weightDecayGiven = true;
      }
    } else if (arg == "--nesterov") {
      options.train.nesterov = true;
      optimizerFlags.insert(arg);
    } else if (arg == "--freeze" || arg == "--trainable") {
      if (!takeValue(arg.c_str()) || value.empty())
        return usageError(arg + " needs a regular expression over parameter names");
      (arg == "--freeze" ? options.train.freeze : options.train.trainable) = value;
    } else if (arg == "--gpus") {
      double n = 0;
      if (!takeValue("--gpus") || !parseNumber(value, n) || n < 1 || n > 65536 ||
          n != std::floor(n))
        return usageError("--gpus needs a whole number of devices from 1 to 65536");
      options.gpus = static_cast<int>(n);
    } else if (arg == "--strategy") {
      if (!takeValue("--strategy") || value.empty())
        return usageError("--strategy needs a value (auto, dp, zero1, zero2, zero3, fsdp, tp or "
                          "KEY=VALUE,...)");
      options.strategyText = value;
    } else if (arg == "--gpu-memory") {
      if (!takeValue("--gpu-memory") || !parseByteSize(value, options.gpuMemoryBytes))
        return usageError("--gpu-memory needs a size such as 80GiB, 512MiB or a byte count");
    } else if (arg == "--bucket-mb") {
      if (!takeValue("--bucket-mb") || !parseNumber(value, options.bucketMb) ||
          options.bucketMb <= 0)
        return usageError("--bucket-mb needs a positive number of MiB");
    } else if (arg == "--fsdp-unit") {
      if (!takeValue("--fsdp-unit") || value.empty())
        return usageError("--fsdp-unit needs a regular expression over parameter names");
      options.fsdpUnit = value;
    } else if (arg == "--shard") {
      if (!takeValue("--shard") || value.find('=') == std::string::npos)
        return usageError("--shard needs REGEX=SPEC, e.g. 'mlp\\..*\\.weight=[{tp},{}]' or "
                          "'.*norm.*=replicated'");
      options.shardOverrides.push_back(value);
    } else if (arg == "--remat") {
      if (!takeValue("--remat"))
        return usageError("--remat needs a value (none, full, selective or auto)");
      if (value != "none" && value != "full" && value != "selective" && value != "auto")
        return usageError("--remat '" + value + "': expected none, full, selective or auto");
      options.train.remat = value;
    } else if (arg == "--micro-batches") {
      double n = 0;
      if (!takeValue("--micro-batches") || !parseNumber(value, n) || n < 1 || n > 65536 ||
          n != std::floor(n))
        return usageError("--micro-batches needs a whole number of microbatches from 1 to 65536");
      options.microBatches = static_cast<int64_t>(n);
    } else if (arg == "--explain") {
      options.explain = true;
    } else if (arg == "--no-weights") {
      options.withoutWeights = true;
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      return usageError("unknown option '" + std::string(argv[i]) + "'");
    } else {
      if (!options.model.empty())
        return usageError("more than one model given ('" + options.model + "' and '" + arg +
                          "')");
      options.model = arg;
    }
  }
  if (options.model.empty())
    return usageError("no model given");
  if (std::optional<std::string> bad = checkOptimizerFlags(options.train, optimizerFlags))
    return usageError(*bad);
  if (!options.weightDecayGiven)
    options.train.weightDecay = options.train.optimizer == "adamw" ? 0.01 : 0.0;
  if (options.emitMlir && !options.dumpIrDir.empty())
    return usageError("--dump-ir-after-all has no effect with --emit=mlir (no pass runs); "
                      "give -o OUT.shard instead");
  if (!options.emitMlir && options.output.empty())
    return usageError("no output bundle given (-o OUT.shard)");
  if (options.strategyText.empty())
    options.strategyText = options.gpus > 1 ? "auto" : "dp";
  if (std::optional<std::string> bad =
          parseStrategy(options.strategyText, options.gpus, options.strategy))
    return usageError(*bad);
  if (options.gpus > 1 && options.mode == Mode::Forward)
    return usageError("--gpus " + std::to_string(options.gpus) +
                      ": data parallelism applies to training; --mode forward compiles one rank");
  if (options.train.remat != "none" && options.mode == Mode::Forward)
    return usageError("--remat " + options.train.remat +
                      ": recomputation applies to training (--mode train)");
  if (lossScaleFlags && options.train.precision != "fp16")
    return usageError("--loss-scale-init and --loss-scale-growth-interval apply to --precision "
                      "fp16 (dynamic loss scaling)");
  if (options.train.remat == "auto" && options.gpuMemoryBytes == 0)
    return usageError("--remat auto chooses what fits --gpu-memory; give --gpu-memory SIZE");
  if (options.train.remat == "auto" && options.strategy.automatic)
    return usageError("--remat auto with --strategy auto: choose one of them automatically "
                      "(give --strategy, or --remat none|selective|full)");
  if (options.microBatches > 1 && options.mode == Mode::Forward)
    return usageError("--micro-batches " + std::to_string(options.microBatches) +
                      ": gradient accumulation applies to training (--mode train)");
  if (options.train.precision != "fp32" && options.mode == Mode::Forward)
    return usageError("--precision " + options.train.precision +
                      ": applies to training (--mode train) so far");
  // A 16-bit reduction sums the 16-bit gradients the products wrote; fp32 is always possible.
  if (!reduceDtypeFlag.empty() && reduceDtypeFlag != "fp32" &&
      reduceDtypeFlag != options.train.precision)
    return usageError("--reduce-dtype " + reduceDtypeFlag + " needs --precision " +
                      reduceDtypeFlag + " (the gradients are " + options.train.precision + ")");
  if (options.train.reduceDtype != "f32" && !options.train.halfStorage)
    return usageError("--reduce-dtype " + reduceDtypeFlag +
                      " needs --half-storage on (the reductions run on the 16-bit values)");
  return ParseResult::Ok;
}

} // namespace shardc::driver
