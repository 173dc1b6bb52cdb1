//===- CommandLine.cpp ------------------------------------------------------------------===//
#include "CommandLine.h"

#include <CLI/CLI.hpp>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

namespace shardc::driver {

namespace {

const char *kUsage = R"(usage: shardc MODEL.onnx [options]
       shardc calibrate [-o FILE]

Compiles an ONNX model into a shardc bundle (a directory with program.pb, weights.bin and
plan.txt) that shardrun executes. `shardc calibrate` measures this machine's CPU kernels and
local ranks for --cluster cpu.

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
  --padding-row NAME=ROW    the embedding table NAME's lookups never train row ROW (PyTorch's
                            nn.Embedding padding_idx, which ONNX does not record; the export
                            helper records it) (repeatable)
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
                            --gpus. With --cluster, auto is the cost model's search, and
                            auto,KEY=VALUE,... keeps those of tp, pp, zero, sp fixed
  --shard REGEX=SPEC        tensor-parallel layout of the parameters whose name matches:
                            SPEC 'replicated' or one {} / {tp} per dimension, e.g.
                            'fc1\.weight=[{tp},{}]' (repeatable; docs/cli.md)
  --gpu-memory SIZE         memory of one device for --strategy auto and --remat auto,
                            e.g. 80GiB, 512MiB
                            (default: unlimited)
  --cluster NAME|FILE       predict the step on these machines (the cost model; plan.txt's
                            "Predicted step", plan.json's "prediction"): a100-80g-8x,
                            h100-80g-8x, h200-141g-8x, cpu (this machine, after 'shardc
                            calibrate') or a cluster file (docs/cli.md)
  --predict-only            with --cluster: write OUT/prediction.txt and OUT/prediction.json
                            (the plan's predicted step, auto's decision) and compile no
                            programs: plans too large to compile in seconds can be costed
  --bucket-mb X             gradient bucket size in MiB for dp and zero1/zero2 (default 25)
  --comm-overlap on|off     run each collective asynchronously while the ops before its first
                            reader run (a bucket's reduction overlaps the rest of the
                            backward pass; its buffers stay reserved until then), or in
                            program order (default on)
  --fsdp-unit REGEX         zero3: the part of a parameter's name that names its FSDP unit
                            (default: automatic, e.g. transformer blocks "h.0", "h.1", ...)
  --fuse-attention on|off    replace each scaled dot-product attention (Q.K^T, scale,
                            masks, softmax, .V) with one fused op whose kernels keep no
                            S x Sk tensor; the backward pass recomputes the probabilities
                            (default off; docs/cli.md says which forms are fused)
  --lora r=N,alpha=A,rslora,targets=REGEX
                            LoRA: add adapters A [r, in] and B [out, r] beside each product
                            weight of a module matching REGEX (matched against the end of the
                            module path, as PEFT does; default q_proj|v_proj|c_attn|query|value;
                            targets= comes last), y = x.W + (x.A^T.B^T) * alpha/r (alpha/sqrt(r)
                            with rslora; PEFT's defaults r=8, alpha=8), dropout=P on the
                            adapters' input (default 0), and train the adapters only
  --lora-init FILE          the adapters' initial values from a PEFT adapter file
                            (adapter_model.safetensors); default PEFT's own initialisation
                            (A Kaiming-uniform from --lora-seed N, default 0; B zeros)
  --lora-train bias|norm|bias,norm
                            keep training the biases and/or the normalisation weights
  --base-dtype fp32|bf16|int8|nf4
                            store the frozen base's product weights (with --lora, or every
                            product weight with --mode forward) in fewer bits, dequantized
                            inside the products: bf16, int8 (absmax per output row, as
                            LLM.int8 without outliers) or nf4 (QLoRA's NormalFloat4, blocks of
                            64); default fp32
  --base-dtype-keep REGEX   module paths (matched at their end) whose weights stay f32
                            (default lm_head)
  --fuse-elementwise on|off
                            run each chain of elementwise ops (and the casts of 16-bit
                            storage) as one kernel that reads its inputs once and writes
                            only what is read elsewhere; exact (default on)
  --remat none|full|selective|auto
                            recompute forward values in the backward pass instead of
                            keeping them: full: each unit (transformer block) keeps only its
                            input; selective: attention scores, softmax and dropout; auto:
                            the least recomputation, chosen per unit, that fits
                            --gpu-memory (default none)
  --micro-batches K         run each device's rows as K microbatches one after another,
                            gradients accumulated before the reduction and the update;
                            activations scale with a microbatch (default 1)
  --schedule S              pipeline schedule with pp > 1: naive (one microbatch),
                            gpipe, 1f1b, interleaved (with --virtual-stages) or zb-h1
                            (zero bubble: weight gradients fill the cool-down; default
                            1f1b; docs/cli.md)
  --virtual-stages V        with --schedule interleaved: each pp rank holds V chunks of
                            the layers (virtual stages r, r+pp, ...; default 1)
  --pp-cuts P1,P2,...       pipeline stage k starts at the first layer whose node name
                            starts with Pk (default: cut between layers, balanced by FLOPs)
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

// --lora's value: KEY=VALUE pairs separated by commas (r, alpha, dropout, rslora as a bare key
// or rslora=true|false), targets=REGEX last, since a regex may hold commas itself.
std::optional<std::string> parseLora(const std::string &text, CompileOptions::Lora &lora) {
  const std::string usage = "--lora '" + text + "': expected KEY=VALUE,... with keys r, alpha, "
                            "dropout, rslora and targets (last), e.g. r=8,alpha=16,targets=q_proj|v_proj";
  if (text.empty())
    return usage;
  size_t begin = 0;
  while (begin <= text.size()) {
    if (text.compare(begin, 8, "targets=") == 0) {
      lora.targets = text.substr(begin + 8);
      if (lora.targets.empty())
        return "--lora targets= needs a regex over module names (e.g. q_proj|v_proj)";
      return std::nullopt;
    }
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, comma - begin);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    double number = 0;
    if (key == "rslora" && (eq == std::string::npos || value == "true" || value == "false")) {
      lora.rslora = value != "false";
    } else if (eq == std::string::npos || !parseNumber(value, number)) {
      return usage;
    } else if (key == "r") {
      if (number < 1 || number > 65536 || number != std::floor(number))
        return "--lora r=" + value + ": the rank must be a whole number from 1 to 65536";
      lora.rank = static_cast<int64_t>(number);
    } else if (key == "alpha") {
      if (number <= 0)
        return "--lora alpha=" + value + ": must be positive";
      lora.alpha = number;
    } else if (key == "dropout") {
      if (!(number >= 0 && number < 1))
        return "--lora dropout=" + value + ": the ratio must be in [0, 1)";
      lora.dropout = number;
    } else {
      return usage;
    }
    begin = comma + 1;
  }
  return std::nullopt;
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

// Thrown by a flag's callback to end the parse: with a usage error in shardc's words, or
// successfully after --help / --version printed what they print. CLI11 passes exceptions other
// than its own through parse().
struct UsageFailure {
  std::string message;
};
struct PrintedAndDone {};

[[noreturn]] void fail(std::string message) { throw UsageFailure{std::move(message)}; }

// The optimizer flags checkOptimizerFlags looks at.
const char *const kOptimizerFlags[] = {"--beta1",    "--beta2",     "--eps",     "--weight-decay",
                                       "--momentum", "--grad-clip", "--nesterov"};

// shardc's flags on a CLI11 app. Each flag that takes a value is an option whose callback runs
// as soon as CLI11 has read it (trigger_on_parse: errors come in the order of the command line,
// and --help stops the parse where it stands) and checks the value itself, so that the accepted
// syntax and the messages stay shardc's. The help text is kUsage, not CLI11's generated one.
class FlagSet {
public:
  explicit FlagSet(CompileOptions &options) : options_(options) {
    app_.set_help_flag();
    // Unknown options and a second model are left in remaining(), for the messages below.
    app_.allow_extras();
    app_.add_flag_callback("-h,--help", [] {
          std::fputs(kUsage, stdout);
          throw PrintedAndDone{};
        })
        ->trigger_on_parse();
    app_.add_flag_callback("--version", [] {
          std::puts("shardc 0.1.0");
          throw PrintedAndDone{};
        })
        ->trigger_on_parse();
    app_.add_option("model", options.model);
    app_.add_flag("--explain", options.explain);
    app_.add_flag("--no-weights", options.withoutWeights);
    app_.add_flag("--predict-only", options.predictOnly);
    app_.add_flag("--nesterov", options.train.nesterov);

    value("-o,--output", "-o needs a directory", [this](const std::string &v) {
      if (v.empty())
        fail("-o needs a directory");
      options_.output = v;
    });
    value("--mode", "--mode needs a value (forward or train)", [this](const std::string &v) {
      if (v != "forward" && v != "train")
        fail("--mode '" + v + "': expected forward or train");
      options_.mode = v == "forward" ? Mode::Forward : Mode::Train;
    });
    value("--precision", "--precision needs a value (fp32, bf16 or fp16)",
          [this](const std::string &v) {
            if (v != "fp32" && v != "bf16" && v != "fp16")
              fail("--precision '" + v + "': expected fp32, bf16 or fp16");
            options_.train.precision = v;
            options_.train.dynamicLossScale = v == "fp16";
          });
    value("--reduce-dtype", "--reduce-dtype needs a value (fp32, bf16 or fp16)",
          [this](const std::string &v) {
            if (v != "fp32" && v != "bf16" && v != "fp16")
              fail("--reduce-dtype '" + v + "': expected fp32, bf16 or fp16");
            options_.train.reduceDtype = v == "fp32" ? "f32" : v == "bf16" ? "bf16" : "f16";
            reduceDtype_ = v;
          });
    value("--half-storage", "--half-storage needs on or off", [this](const std::string &v) {
      if (v != "on" && v != "off")
        fail("--half-storage needs on or off");
      options_.train.halfStorage = v == "on";
    });
    const char *lossScaleInit =
        "--loss-scale-init needs a power of two from 2^-126 to 2^127, e.g. 65536";
    value("--loss-scale-init", lossScaleInit, [this, lossScaleInit](const std::string &v) {
      double scale = 0;
      // A power of two, as GradScaler's growth and backoff keep it: the scale stays exact.
      if (!parseNumber(v, scale) || !(scale > 0) || std::ilogb(scale) < -126 ||
          std::ilogb(scale) > 127 || std::ldexp(1.0, std::ilogb(scale)) != scale)
        fail(lossScaleInit);
      options_.train.lossScaleInit = scale;
    });
    const char *growth = "--loss-scale-growth-interval needs a whole number of steps >= 1";
    value("--loss-scale-growth-interval", growth, [this, growth](const std::string &v) {
      double n = 0;
      if (!parseNumber(v, n) || n < 1 || n > 1e9 || n != std::floor(n))
        fail(growth);
      options_.train.lossScaleGrowthInterval = static_cast<int64_t>(n);
    });
    value("--emit", "--emit needs a value (mlir)", [this](const std::string &v) {
      if (v != "mlir")
        fail("--emit '" + v + "': only --emit=mlir is supported");
      options_.emitMlir = true;
    });
    value("--dump-ir-after-all", "--dump-ir-after-all needs a directory",
          [this](const std::string &v) {
            if (v.empty())
              fail("--dump-ir-after-all needs a directory");
            options_.dumpIrDir = v;
          });
    value("--input-shape", "--input-shape needs NAME=DIMS, e.g. input_ids=8x128",
          [this](const std::string &v) {
            size_t eq = v.rfind('=');
            std::vector<int64_t> dims;
            if (eq == std::string::npos || eq == 0 ||
                !parseDims(std::string_view(v).substr(eq + 1), dims))
              fail("--input-shape '" + v +
                   "': expected NAME=DIMS with sizes separated by 'x', e.g. input_ids=8x128");
            std::string name = v.substr(0, eq);
            if (options_.inputShapes.count(name))
              fail("--input-shape given twice for '" + name + "'");
            options_.inputShapes[name] = dims;
          });
    const char *paddingRow = "--padding-row needs NAME=ROW with ROW a row number >= 0";
    value("--padding-row", paddingRow, [this, paddingRow](const std::string &v) {
      size_t eq = v.rfind('=');
      double row = 0;
      if (eq == std::string::npos || eq == 0 || !parseNumber(v.substr(eq + 1), row) ||
          row < 0 || row > 9e15 || row != std::floor(row))
        fail(paddingRow);
      std::string name = v.substr(0, eq);
      if (options_.paddingRows.count(name))
        fail("--padding-row given twice for '" + name + "'");
      options_.paddingRows[name] = static_cast<int64_t>(row);
    });
    value("--optimizer", "--optimizer needs adamw or sgd", [this](const std::string &v) {
      if (v != "adamw" && v != "sgd")
        fail("--optimizer needs adamw or sgd");
      options_.train.optimizer = v;
    });
    number("--beta1", &options.train.beta1);
    number("--beta2", &options.train.beta2);
    number("--eps", &options.train.eps);
    number("--momentum", &options.train.momentum);
    number("--grad-clip", &options.train.gradClip);
    number("--weight-decay", &options.train.weightDecay);
    regex("--freeze", &options.train.freeze);
    regex("--trainable", &options.train.trainable);
    regex("--fsdp-unit", &options.fsdpUnit);
    const char *gpus = "--gpus needs a whole number of devices from 1 to 65536";
    value("--gpus", gpus, [this, gpus](const std::string &v) {
      double n = 0;
      if (!parseNumber(v, n) || n < 1 || n > 65536 || n != std::floor(n))
        fail(gpus);
      options_.gpus = static_cast<int>(n);
    });
    const char *strategy = "--strategy needs a value (auto, dp, zero1, zero2, zero3, fsdp, tp or "
                           "KEY=VALUE,...)";
    value("--strategy", strategy, [this, strategy](const std::string &v) {
      if (v.empty())
        fail(strategy);
      options_.strategyText = v;
    });
    const char *gpuMemory = "--gpu-memory needs a size such as 80GiB, 512MiB or a byte count";
    value("--gpu-memory", gpuMemory, [this, gpuMemory](const std::string &v) {
      if (!parseByteSize(v, options_.gpuMemoryBytes))
        fail(gpuMemory);
    });
    value("--cluster", "--cluster needs a preset name or a cluster file",
          [this](const std::string &v) {
            if (v.empty())
              fail("--cluster needs a preset name or a cluster file");
            options_.cluster = v;
          });
    const char *bucketMb = "--bucket-mb needs a positive number of MiB";
    value("--bucket-mb", bucketMb, [this, bucketMb](const std::string &v) {
      if (!parseNumber(v, options_.bucketMb) || options_.bucketMb <= 0)
        fail(bucketMb);
    });
    value("--comm-overlap", "--comm-overlap needs a value (on or off)",
          [this](const std::string &v) {
            if (v != "on" && v != "off")
              fail("--comm-overlap '" + v + "': expected on or off");
            options_.commOverlap = v == "on";
          });
    const char *shard = "--shard needs REGEX=SPEC, e.g. 'mlp\\..*\\.weight=[{tp},{}]' or "
                        "'.*norm.*=replicated'";
    value("--shard", shard, [this, shard](const std::string &v) {
      if (v.find('=') == std::string::npos)
        fail(shard);
      options_.shardOverrides.push_back(v);
    });
    value("--fuse-attention", "--fuse-attention needs a value (on or off)",
          [this](const std::string &v) {
            if (v != "on" && v != "off")
              fail("--fuse-attention '" + v + "': expected on or off");
            options_.fuseAttention = v == "on";
          });
    const char *lora = "--lora needs KEY=VALUE,... (r=8,alpha=16,targets=q_proj|v_proj)";
    value("--lora", lora, [this, lora](const std::string &v) {
      if (std::optional<std::string> bad = parseLora(v, options_.lora))
        fail(*bad);
      options_.lora.enabled = true;
    });
    value("--lora-init", "--lora-init needs a PEFT adapter file (adapter_model.safetensors)",
          [this](const std::string &v) {
            if (v.empty())
              fail("--lora-init needs a PEFT adapter file (adapter_model.safetensors)");
            options_.lora.initFile = v;
          });
    value("--lora-train", "--lora-train needs bias, norm or bias,norm",
          [this](const std::string &v) {
            if (v != "bias" && v != "norm" && v != "bias,norm" && v != "norm,bias")
              fail("--lora-train '" + v + "': expected bias, norm or bias,norm");
            options_.lora.trainBias = v.find("bias") != std::string::npos;
            options_.lora.trainNorm = v.find("norm") != std::string::npos;
          });
    value("--base-dtype", "--base-dtype needs fp32, bf16, int8 or nf4",
          [this](const std::string &v) {
            if (v != "fp32" && v != "bf16" && v != "int8" && v != "nf4")
              fail("--base-dtype '" + v + "': expected fp32, bf16, int8 or nf4");
            options_.baseDtype = v;
          });
    value("--base-dtype-keep", "--base-dtype-keep needs a regex over module paths",
          [this](const std::string &v) { options_.baseDtypeKeep = v; });
    value("--lora-seed", "--lora-seed needs an integer from 0 to 2^64-1",
          [this](const std::string &v) {
            char *end = nullptr;
            errno = 0;
            unsigned long long seed = std::strtoull(v.c_str(), &end, 10);
            if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])) || *end != '\0' ||
                errno == ERANGE)
              fail("--lora-seed needs an integer from 0 to 2^64-1, got '" + v + "'");
            options_.lora.seed = seed;
          });
    value("--fuse-elementwise", "--fuse-elementwise needs a value (on or off)",
          [this](const std::string &v) {
            if (v != "on" && v != "off")
              fail("--fuse-elementwise '" + v + "': expected on or off");
            options_.fuseElementwise = v == "on";
          });
    value("--remat", "--remat needs a value (none, full, selective or auto)",
          [this](const std::string &v) {
            if (v != "none" && v != "full" && v != "selective" && v != "auto")
              fail("--remat '" + v + "': expected none, full, selective or auto");
            options_.train.remat = v;
          });
    value("--schedule", "--schedule needs a value (naive, gpipe, 1f1b, interleaved or zb-h1)",
          [this](const std::string &v) { options_.schedule = v; });
    const std::string virtualStages = "--virtual-stages needs a whole number from 1 to 64";
    value("--virtual-stages", virtualStages, [this, virtualStages](const std::string &v) {
      double n = 0;
      if (!parseNumber(v, n) || n < 1 || n > 64 || n != std::floor(n))
        fail(virtualStages);
      options_.virtualStages = static_cast<int64_t>(n);
    });
    value("--pp-cuts", "--pp-cuts needs node-name prefixes, e.g. /h.4,/h.8",
          [this](const std::string &v) {
            options_.pipelineCuts.clear();
            std::stringstream items(v);
            for (std::string item; std::getline(items, item, ',');) {
              if (item.empty())
                fail("--pp-cuts '" + v + "': an empty prefix");
              options_.pipelineCuts.push_back(item);
            }
          });
    const char *microBatches =
        "--micro-batches needs a whole number of microbatches from 1 to 65536";
    value("--micro-batches", microBatches, [this, microBatches](const std::string &v) {
      double n = 0;
      if (!parseNumber(v, n) || n < 1 || n > 65536 || n != std::floor(n))
        fail(microBatches);
      options_.microBatches = static_cast<int64_t>(n);
    });
  }

  ParseResult parse(int argc, char **argv) {
    // CLI11 reads "--flag=" as the flag alone and takes the next argument as its value; here it
    // is an empty value, as "--flag ''" is (for the flags that take a value).
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg.size() > 3 && arg.compare(0, 2, "--") == 0 && arg.find('=') == arg.size() - 1 &&
          missingValue_.count(arg.substr(0, arg.size() - 1)) != 0) {
        args.push_back(arg.substr(0, arg.size() - 1));
        args.emplace_back();
      } else {
        args.push_back(arg);
      }
    }
    // CLI11 parses a reversed list (the next argument at the back).
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      app_.parse(reversed);
    } catch (const PrintedAndDone &) {
      return ParseResult::ExitSuccess;
    } catch (const UsageFailure &failure) {
      return usageError(failure.message);
    } catch (const CLI::ArgumentMismatch &e) {
      // A flag that takes a value always takes the next argument, so only the last one can
      // lack its value.
      if (!args.empty())
        if (auto it = missingValue_.find(args.back()); it != missingValue_.end())
          return usageError(it->second);
      return usageError(e.what());
    } catch (const CLI::ParseError &e) {
      return usageError(e.what());
    }
    for (const std::string &extra : app_.remaining()) {
      if (!extra.empty() && extra[0] == '-' && extra != "-")
        return usageError("unknown option '" + extra + "'");
      return usageError("more than one model given ('" + options_.model + "' and '" + extra +
                        "')");
    }
    return ParseResult::Ok;
  }

  bool given(const char *flag) const { return app_.count(flag) > 0; }
  // --reduce-dtype's value, when given.
  const std::string &reduceDtype() const { return reduceDtype_; }

private:
  // A flag that takes one value ("-o,--output": a short and a long name); `missing` is the
  // error when it has none.
  void value(const std::string &names, const std::string &missing,
             std::function<void(const std::string &)> set) {
    for (size_t begin = 0, comma; begin <= names.size(); begin = comma + 1) {
      comma = std::min(names.find(',', begin), names.size());
      missingValue_[names.substr(begin, comma - begin)] = missing;
    }
    app_.add_option_function<std::string>(names, std::move(set))->trigger_on_parse();
  }

  void number(const char *flag, double *slot) {
    const std::string message = std::string(flag) + " needs a non-negative number";
    value(flag, message, [slot, message](const std::string &v) {
      double number = 0;
      if (!parseNumber(v, number) || number < 0)
        fail(message);
      *slot = number;
    });
  }

  void regex(const char *flag, std::string *slot) {
    const std::string message =
        std::string(flag) + " needs a regular expression over parameter names";
    value(flag, message, [slot, message](const std::string &v) {
      if (v.empty())
        fail(message);
      *slot = v;
    });
  }

  CompileOptions &options_;
  CLI::App app_{"shardc"};
  std::map<std::string, std::string> missingValue_; // flag -> the error when its value is missing
  std::string reduceDtype_;
};

} // namespace

ParseResult parseCommandLine(int argc, char **argv, CompileOptions &options) {
  FlagSet flags(options);
  if (ParseResult result = flags.parse(argc, argv); result != ParseResult::Ok)
    return result;
  std::set<std::string> optimizerFlags; // the optimizer options given, for checkOptimizerFlags
  for (const char *flag : kOptimizerFlags)
    if (flags.given(flag))
      optimizerFlags.insert(flag);
  options.weightDecayGiven = flags.given("--weight-decay");
  // --loss-scale-init / --loss-scale-growth-interval given.
  const bool lossScaleFlags =
      flags.given("--loss-scale-init") || flags.given("--loss-scale-growth-interval");
  const std::string &reduceDtypeFlag = flags.reduceDtype();
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
  if (options.strategy.pp == 1 && !options.strategy.automatic &&
      (!options.schedule.empty() || !options.pipelineCuts.empty()))
    return usageError(std::string(options.schedule.empty() ? "--pp-cuts" : "--schedule") +
                      " applies to pipeline parallelism (--strategy with pp of at least 2)");
  options.scheduleGiven = !options.schedule.empty();
  options.microBatchesGiven = flags.given("--micro-batches");
  if (options.schedule.empty())
    options.schedule = options.microBatches == 1 && options.strategy.pp > 1 ? "naive" : "1f1b";
  if (options.virtualStages > 1 && options.schedule != "interleaved")
    return usageError("--virtual-stages applies to --schedule interleaved");
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
  if (options.strategy.constrained() && options.cluster.empty())
    return usageError("--strategy " + options.strategyText +
                      ": fixing axes of auto needs the cost model (--cluster)");
  if (options.predictOnly && options.cluster.empty())
    return usageError("--predict-only predicts the step on a cluster; give --cluster");
  if (options.train.remat == "auto" && options.strategy.automatic)
    return usageError("--remat auto with --strategy auto: choose one of them automatically "
                      "(give --strategy, or --remat none|selective|full)");
  if (options.microBatches > 1 && options.mode == Mode::Forward)
    return usageError("--micro-batches " + std::to_string(options.microBatches) +
                      ": gradient accumulation applies to training (--mode train)");
  if (!options.lora.enabled &&
      (flags.given("--lora-init") || flags.given("--lora-train") || flags.given("--lora-seed")))
    return usageError(std::string(flags.given("--lora-init")    ? "--lora-init"
                                  : flags.given("--lora-train") ? "--lora-train"
                                                                : "--lora-seed") +
                      " applies to LoRA adapters; give --lora too");
  if (options.baseDtype != "fp32" && options.mode == Mode::Train && !options.lora.enabled)
    return usageError("--base-dtype " + options.baseDtype +
                      " stores a frozen base in fewer bits: training needs --lora (the "
                      "adapters are what trains), or use --mode forward");
  if (options.baseDtype != "fp32" && options.train.precision != "fp32")
    return usageError("--base-dtype " + options.baseDtype + " with --precision " +
                      options.train.precision +
                      ": the quantized products compute in f32 so far; use --precision fp32");
  if (flags.given("--base-dtype-keep") && options.baseDtype == "fp32")
    return usageError("--base-dtype-keep applies to a quantized base; give --base-dtype too");
  if (options.lora.enabled && options.mode == Mode::Forward)
    return usageError("--lora adds adapters to train (--mode train)");
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
