//===- LoraAdapters.cpp - LoRA adapters beside the targeted weights (--lora) -------------===//
//
// Low-rank adaptation (Hu et al. 2021) as a rewrite of the imported forward function: every
// product whose weight W is a parameter of a targeted module gets two new trained parameters,
// A = lora_A.weight [r, in] and B = lora_B.weight [out, r] (PEFT's layouts, so that adapters
// load and save without transposes), and its result y = x·W (+ bias) becomes
//
//     y + ((dropout(x)·Aᵀ)·Bᵀ)·scale,   scale = alpha / r (or alpha / sqrt(r) with rslora),
//
// in that order, as PEFT's LoRA Linear computes it (dropout: a training-mode graph.dropout of
// its own Philox stream per product, when the ratio is not 0). Every other parameter of the model is
// frozen (graph.not_trainable), except biases and normalisation weights when asked: the
// training step then differentiates and updates the adapters alone. The weight of a product
// is recognised in the forms exporters write: matmul(x, W) (GPT-2's Conv1D, W [in, out]),
// matmul(x, transpose(W)) (nn.Linear on a 3-D input, W [out, in]) and gemm(x, W, bias) with or
// without trans_b. A weight read by several products (a module called twice) has one adapter
// that every such product uses.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/training/TrainingPasses.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ModuleUnit.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Regex.h"

#include <cmath>
#include <map>

namespace shardc {
#define GEN_PASS_DEF_LORAADAPTERS
#include "passes/training/TrainingPasses.h.inc"

namespace {

using namespace mlir;

// PEFT's default target modules of the architectures it knows best, as one alternation:
// Llama, Mistral, Qwen2 and OPT (q_proj, v_proj), GPT-2 (c_attn), BERT and RoBERTa (query,
// value).
constexpr llvm::StringLiteral kDefaultTargets = "q_proj|v_proj|c_attn|query|value";

// The module a weight belongs to: its name without the trailing ".weight".
std::string modulePathOf(StringRef weightName) {
  return weightName.ends_with(".weight") ? weightName.drop_back(7).str() : weightName.str();
}

// A product reading a parameter as its weight: the product, the parameter, and the product's
// in and out sizes (the parameter is stored [out, in] by nn.Linear, [in, out] by Conv1D).
struct WeightUse {
  Operation *product;
  BlockArgument weight;
  int64_t in = 0, out = 0;
  bool weightInByOut = false; // the parameter is stored [in, out] (GPT-2's Conv1D)
};

struct LoraAdaptersPass : impl::LoraAdaptersBase<LoraAdaptersPass> {
  using LoraAdaptersBase::LoraAdaptersBase;
  LoraAdaptersPass(const LoraAdaptersOptions &options, LoraParameterFn onParameter)
      : impl::LoraAdaptersBase<LoraAdaptersPass>(options), onParameter(std::move(onParameter)) {}

  LoraParameterFn onParameter;

  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      getOperation().emitError("no @forward function to add LoRA adapters to");
      return signalPassFailure();
    }
    if (rank < 1) {
      forward.emitError("--lora r=" + std::to_string(rank) + ": the rank must be at least 1");
      return signalPassFailure();
    }
    const std::string targetText = targets.empty() ? kDefaultTargets.str() : targets.getValue();
    // PEFT matches a target against the end of a module's path (a whole name component).
    llvm::Regex target("(^|\\.)(" + targetText + ")$");
    std::string regexError;
    if (!target.isValid(regexError)) {
      forward.emitError("--lora targets=" + targetText + ": not a valid regex: " + regexError);
      return signalPassFailure();
    }

    Block &body = forward.getBody().front();
    auto paramName = [&](Value v) -> StringAttr {
      auto arg = dyn_cast<BlockArgument>(v);
      if (!arg || arg.getOwner() != &body)
        return {};
      return forward.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::kParamAttr);
    };
    // The trained parameter a product's weight operand reads, directly or transposed.
    auto weightOf = [&](Value operand, bool transposedByOp, WeightUse &use) {
      bool outByIn = transposedByOp;
      if (auto transpose = operand.getDefiningOp<graph::TransposeOp>()) {
        if (transpose.getPerm() != ArrayRef<int64_t>{1, 0})
          return false;
        operand = transpose.getInput();
        outByIn = !outByIn;
      }
      if (!paramName(operand) ||
          forward.getArgAttr(cast<BlockArgument>(operand).getArgNumber(), graph::kNotTrainableAttr))
        return false;
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (!type || type.getRank() != 2 || !type.getElementType().isF32())
        return false;
      use.weight = cast<BlockArgument>(operand);
      use.weightInByOut = !outByIn;
      use.in = type.getDimSize(outByIn ? 1 : 0);
      use.out = type.getDimSize(outByIn ? 0 : 1);
      return true;
    };

    SmallVector<WeightUse> uses;
    std::vector<std::string> products; // every product weight's module, for the error below
    forward.walk([&](Operation *op) {
      WeightUse use{op, {}};
      bool found = false;
      if (auto matmul = dyn_cast<graph::MatMulOp>(op))
        found = weightOf(matmul.getRhs(), false, use);
      else if (auto gemm = dyn_cast<graph::GemmOp>(op))
        found = !gemm.getTransA() && weightOf(gemm.getB(), gemm.getTransB(), use);
      if (!found)
        return;
      const std::string module = modulePathOf(paramName(use.weight).getValue());
      products.push_back(module);
      if (target.match(module))
        uses.push_back(use);
    });
    if (uses.empty()) {
      std::string seen;
      for (size_t i = 0; i < products.size() && i < 6; ++i)
        seen += (i ? ", " : "") + products[i];
      forward.emitError("--lora targets=" + targetText +
                        ": no MatMul or Gemm weight's module matches" +
                        (products.empty() ? std::string(" (the model has no product with a "
                                                        "trained 2-D weight)")
                                          : " (modules with product weights: " + seen +
                                                (products.size() > 6 ? ", ..." : "") + ")"));
      return signalPassFailure();
    }

    // Freeze the base: every parameter that is not a trained bias or norm weight by request.
    Builder attrs(&getContext());
    for (BlockArgument arg : body.getArguments()) {
      StringAttr name = paramName(arg);
      if (!name || forward.getArgAttr(arg.getArgNumber(), graph::kNotTrainableAttr))
        continue;
      const std::string module = modulePathOf(name.getValue());
      const bool isBias = name.getValue().ends_with(".bias");
      const bool isNorm = StringRef(module).lower().find("norm") != std::string::npos ||
                          StringRef(module).contains("ln_");
      if ((trainBias && isBias) || (trainNorm && isNorm))
        continue;
      forward.setArgAttr(arg.getArgNumber(), graph::kNotTrainableAttr,
                         attrs.getStringAttr("frozen base of the LoRA adapters (--lora)"));
    }

    const double scale = rslora ? alpha / std::sqrt(static_cast<double>(rank))
                                : alpha / static_cast<double>(rank);
    if (!(dropout >= 0.0 && dropout < 1.0)) {
      forward.emitError("--lora dropout=" + std::to_string(dropout) + ": must be in [0, 1)");
      return signalPassFailure();
    }
    // The adapters' dropouts take Philox streams after the model's own.
    int64_t nextStream = 0;
    forward.walk([&](graph::DropoutOp op) {
      nextStream = std::max<int64_t>(nextStream, op.getStream() + 1);
    });
    // One adapter per weight, its parameters appended to @forward's arguments.
    std::map<unsigned, std::pair<Value, Value>> adapters;
    SmallVector<Attribute> merges; // graph.lora_merges, one per adapted weight
    auto adapterOf = [&](const WeightUse &use) -> std::pair<Value, Value> {
      auto found = adapters.find(use.weight.getArgNumber());
      if (found != adapters.end())
        return found->second;
      const int64_t in = use.in, out = use.out;
      const std::string module = modulePathOf(paramName(use.weight).getValue());
      auto addParameter = [&](const std::string &name, RankedTensorType paramType,
                              LoraParameterKind kind) {
        unsigned index = forward.getNumArguments();
        forward.insertArgument(index, paramType,
                               attrs.getDictionaryAttr(attrs.getNamedAttr(
                                   graph::kParamAttr, attrs.getStringAttr(name))),
                               use.weight.getLoc());
        if (onParameter)
          onParameter(name, paramType, kind, in);
        return Value(forward.getArgument(index));
      };
      auto f32 = attrs.getF32Type();
      Value a = addParameter(module + ".lora_A.weight", RankedTensorType::get({rank, in}, f32),
                             LoraParameterKind::A);
      Value b = addParameter(module + ".lora_B.weight", RankedTensorType::get({out, rank}, f32),
                             LoraParameterKind::B);
      merges.push_back(attrs.getDictionaryAttr(
          {attrs.getNamedAttr("weight", paramName(use.weight)),
           attrs.getNamedAttr("lora_A", attrs.getStringAttr(module + ".lora_A.weight")),
           attrs.getNamedAttr("lora_B", attrs.getStringAttr(module + ".lora_B.weight")),
           attrs.getNamedAttr("scale", attrs.getF64FloatAttr(scale)),
           attrs.getNamedAttr("weight_in_by_out", attrs.getBoolAttr(use.weightInByOut))}));
      return adapters[use.weight.getArgNumber()] = {a, b};
    };

    for (const WeightUse &use : uses) {
      const int64_t in = use.in, out = use.out;
      if (rank > std::min(in, out)) {
        forward.emitError("--lora r=" + std::to_string(rank) + ": larger than weight '" +
                          paramName(use.weight).str() + "' [" + std::to_string(in) + " in x " +
                          std::to_string(out) + " out] allows");
        return signalPassFailure();
      }
      auto [a, b] = adapterOf(use);
      Operation *product = use.product;
      Value x = product->getOperand(0);
      Value y = product->getResult(0);
      OpBuilder builder(product->getContext());
      builder.setInsertionPointAfter(product);
      // Named under the product's own node, so that the adapter's ops belong to the product's
      // repeated unit (a transformer block's recomputation and pipeline stage); the module
      // path when the product has no name.
      const std::string node = graph::nodeNameOf(product);
      std::string prefix =
          (node.empty() ? modulePathOf(paramName(use.weight).getValue()) : node) + "/lora";
      auto loc = [&](const char *what) {
        return NameLoc::get(builder.getStringAttr(prefix + "/" + what), product->getLoc());
      };
      auto f32 = builder.getF32Type();
      auto transposed = [&](Value v, const char *what) {
        auto t = cast<RankedTensorType>(v.getType());
        return builder.create<graph::TransposeOp>(
            loc(what), RankedTensorType::get({t.getDimSize(1), t.getDimSize(0)}, f32), v,
            builder.getDenseI64ArrayAttr({1, 0}));
      };
      // (dropout(x)·Aᵀ)·Bᵀ, then the scale, then the sum with the product: PEFT's order.
      if (dropout > 0.0) {
        auto mask = RankedTensorType::get(cast<RankedTensorType>(x.getType()).getShape(),
                                          builder.getI1Type());
        x = builder
                .create<graph::DropoutOp>(loc("dropout"), TypeRange{x.getType(), mask}, x,
                                          ValueRange{},
                                          builder.getF32FloatAttr(static_cast<float>(dropout)),
                                          builder.getUnitAttr(),
                                          builder.getI64IntegerAttr(nextStream++))
                .getResult(0);
      }
      Value down = builder.create<graph::MatMulOp>(loc("A"), x, transposed(a, "A_t"));
      Value up = builder.create<graph::MatMulOp>(loc("B"), down, transposed(b, "B_t"));
      auto scalar = RankedTensorType::get({}, f32);
      Value factor = builder.create<graph::ConstantOp>(
          loc("scale"), DenseElementsAttr::get(scalar, llvm::ArrayRef(static_cast<float>(scale))));
      Value scaled = builder.create<graph::MulOp>(loc("scaled"), up.getType(), up, factor);
      Value sum = builder.create<graph::AddOp>(loc("add"), y.getType(), y, scaled);
      y.replaceAllUsesExcept(sum, sum.getDefiningOp());
    }
    forward->setAttr(graph::kLoraMergesAttr, attrs.getArrayAttr(merges));
  }
};

} // namespace

std::unique_ptr<Pass> createLoraAdapters(const LoraAdaptersOptions &options,
                                         LoraParameterFn onParameter) {
  return std::make_unique<LoraAdaptersPass>(options, std::move(onParameter));
}

} // namespace shardc
