//===- QuantizeBase.cpp - the frozen base's product weights in fewer bits (--base-dtype) -===//
//
// QLoRA's frozen base (Dettmers et al. 2023) and LLM.int8-style inference as a rewrite of the
// imported forward function: a frozen weight read only by products is replaced by its
// quantized storage, and each product by a graph.quantized_matmul that dequantizes it inside
// the kernel. The weight is stored [out, in] whichever layout the model keeps it in; a product
// that reads it the other way round multiplies by W instead of Wᵀ (`untransposed`). The driver
// computes the stored values from the model's weights (runtime/support/quantized_weights.h),
// so that the pass itself reads no weight and plans without them (--no-weights) alike.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/training/TrainingPasses.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/Support/Regex.h"

namespace shardc {
#define GEN_PASS_DEF_QUANTIZEBASE
#include "passes/training/TrainingPasses.h.inc"

namespace {

using namespace mlir;

// One product reading the weight: the op, and whether it multiplies by the parameter as
// stored (x · P) or by its transpose (x · Pᵀ).
struct WeightRead {
  Operation *product;
  bool transposed;
};

// The products reading `param`, or nothing when one of its uses is not a product's weight (an
// embedding's gather, a tied output projection's other reader, a product we cannot rewrite).
std::optional<SmallVector<WeightRead>> productReads(Value param) {
  SmallVector<WeightRead> reads;
  auto matmulRead = [](Operation *user, Value weight, bool viaTranspose) -> std::optional<WeightRead> {
    auto matmul = dyn_cast<graph::MatMulOp>(user);
    if (!matmul || matmul.getRhs() != weight || matmul.getLhs() == weight ||
        matmul.getTransLhs() ||
        cast<RankedTensorType>(matmul.getLhs().getType()).getRank() < 2)
      return std::nullopt;
    return WeightRead{user, viaTranspose != matmul.getTransRhs()};
  };
  for (Operation *user : param.getUsers()) {
    if (auto transpose = dyn_cast<graph::TransposeOp>(user)) {
      if (transpose.getPerm() != ArrayRef<int64_t>{1, 0} || transpose->getResult(0).use_empty())
        return std::nullopt;
      for (Operation *reader : transpose->getResult(0).getUsers()) {
        std::optional<WeightRead> read = matmulRead(reader, transpose->getResult(0), true);
        if (!read)
          return std::nullopt;
        reads.push_back(*read);
      }
    } else if (auto gemm = dyn_cast<graph::GemmOp>(user)) {
      if (gemm.getB() != param || gemm.getA() == param || gemm.getC() == param ||
          gemm.getTransA() || gemm.getAlpha().convertToDouble() != 1.0 ||
          (gemm.getC() && gemm.getBeta().convertToDouble() != 1.0))
        return std::nullopt;
      reads.push_back({user, gemm.getTransB()});
    } else if (std::optional<WeightRead> read = matmulRead(user, param, false)) {
      reads.push_back(*read);
    } else {
      return std::nullopt;
    }
  }
  if (reads.empty())
    return std::nullopt;
  // Deduplicate: a product may read the weight through two transposes of it.
  llvm::sort(reads, [](const WeightRead &a, const WeightRead &b) { return a.product < b.product; });
  reads.erase(std::unique(reads.begin(), reads.end(),
                          [](const WeightRead &a, const WeightRead &b) {
                            return a.product == b.product;
                          }),
              reads.end());
  return reads;
}

struct QuantizeBasePass : impl::QuantizeBaseBase<QuantizeBasePass> {
  using QuantizeBaseBase::QuantizeBaseBase;
  QuantizeBasePass(const QuantizeBaseOptions &options, QuantizedWeightFn onWeight)
      : impl::QuantizeBaseBase<QuantizeBasePass>(options), onWeight(std::move(onWeight)) {}

  QuantizedWeightFn onWeight;

  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      getOperation().emitError("no @forward function to quantize the base of");
      return signalPassFailure();
    }
    const std::string flag = "--base-dtype " + format.getValue();
    if (format != "bf16" && format != "int8" && format != "nf4") {
      forward.emitError(flag + ": the format must be bf16, int8 or nf4");
      return signalPassFailure();
    }
    llvm::Regex kept("(^|\\.)(" + keep.getValue() + ")$");
    std::string regexError;
    if (!keep.empty() && !kept.isValid(regexError)) {
      forward.emitError("--base-dtype-keep " + keep.getValue() + ": not a valid regex: " +
                        regexError);
      return signalPassFailure();
    }

    Block &body = forward.getBody().front();
    Builder attrs(&getContext());
    const unsigned originalArgs = forward.getNumArguments();
    llvm::BitVector replaced(originalArgs);
    int quantized = 0, keptByRegex = 0;
    SmallVector<Attribute> records; // graph.quantized_base
    for (unsigned i = 0; i < originalArgs; ++i) {
      auto name = forward.getArgAttrOfType<StringAttr>(i, graph::kParamAttr);
      if (!name || (!allParameters && !forward.getArgAttr(i, graph::kNotTrainableAttr)))
        continue;
      BlockArgument param = body.getArgument(i);
      auto type = dyn_cast<RankedTensorType>(param.getType());
      if (!type || type.getRank() != 2 || !type.getElementType().isF32())
        continue;
      StringRef module = name.getValue();
      module.consume_back(".weight");
      std::optional<SmallVector<WeightRead>> reads = productReads(param);
      if (reads && !keep.empty() && kept.match(module)) {
        ++keptByRegex;
        continue;
      }
      if (!reads)
        continue;
      // The first reader fixes the stored layout: W is what that product multiplies x by,
      // transposed (x · Wᵀ, W [out, in]).
      QuantizedBaseWeight weight;
      weight.name = name.str();
      weight.storedInByOut = !reads->front().transposed;
      weight.rows = type.getDimSize(weight.storedInByOut ? 1 : 0);
      weight.cols = type.getDimSize(weight.storedInByOut ? 0 : 1);
      const int64_t elements = weight.rows * weight.cols;
      if (format == "nf4" && elements % 64 != 0) {
        forward.emitError(flag + ": weight '" + weight.name + "' has " +
                          std::to_string(elements) +
                          " elements, not a multiple of the block size 64");
        return signalPassFailure();
      }

      Type codesElement = format == "bf16"   ? Type(attrs.getBF16Type())
                          : format == "int8" ? Type(attrs.getIntegerType(8))
                                             : Type(attrs.getIntegerType(8, false));
      auto codesType = format == "nf4"
                           ? RankedTensorType::get({elements / 2}, codesElement)
                           : RankedTensorType::get({weight.rows, weight.cols}, codesElement);
      const std::string why = "frozen base, stored as " + format.getValue() + " (--base-dtype)";
      auto addParameter = [&](const std::string &paramName, RankedTensorType paramType) {
        unsigned index = forward.getNumArguments();
        forward.insertArgument(
            index, paramType,
            attrs.getDictionaryAttr({attrs.getNamedAttr(graph::kParamAttr,
                                                        attrs.getStringAttr(paramName)),
                                     attrs.getNamedAttr(graph::kNotTrainableAttr,
                                                        attrs.getStringAttr(why))}),
            param.getLoc());
        return Value(forward.getArgument(index));
      };
      weight.codesName = weight.name + "." + format.getValue();
      Value codes = addParameter(weight.codesName, codesType);
      Value scales;
      if (format != "bf16") {
        weight.scalesName = weight.name + ".absmax";
        const int64_t count = format == "int8" ? weight.rows : elements / 64;
        scales = addParameter(weight.scalesName, RankedTensorType::get({count}, attrs.getF32Type()));
      }

      for (const WeightRead &read : *reads) {
        Operation *product = read.product;
        OpBuilder builder(product);
        Value x = product->getOperand(0);
        // x · P is x · Wᵀ when P is W transposed ([in, out]); x · Pᵀ is then x · W.
        const bool untransposed = read.transposed == weight.storedInByOut;
        Value y = builder.create<graph::QuantizedMatMulOp>(
            product->getLoc(), x, codes, scales, builder.getStringAttr(format.getValue()),
            builder.getI64IntegerAttr(weight.rows), builder.getI64IntegerAttr(weight.cols),
            untransposed ? builder.getUnitAttr() : UnitAttr());
        if (auto gemm = dyn_cast<graph::GemmOp>(product); gemm && gemm.getC())
          y = builder.create<graph::AddOp>(product->getLoc(), product->getResult(0).getType(), y,
                                           gemm.getC());
        if (y.getType() != product->getResult(0).getType()) {
          product->emitError(flag + ": the quantized product's type ")
              << y.getType() << " is not the product's " << product->getResult(0).getType();
          return signalPassFailure();
        }
        product->getResult(0).replaceAllUsesWith(y);
        product->erase();
      }
      for (Operation *user : llvm::make_early_inc_range(param.getUsers()))
        if (isa<graph::TransposeOp>(user) && user->getResult(0).use_empty())
          user->erase();
      replaced.set(i);
      ++quantized;
      records.push_back(attrs.getDictionaryAttr(
          {attrs.getNamedAttr("weight", name),
           attrs.getNamedAttr("format", attrs.getStringAttr(format.getValue())),
           attrs.getNamedAttr("weight_in_by_out", attrs.getBoolAttr(weight.storedInByOut))}));
      if (onWeight)
        onWeight(weight);
    }
    if (quantized == 0) {
      forward.emitError(flag + ": no " + (allParameters ? "" : "frozen ") +
                        "2-D weight read only by products (MatMul, Gemm) to store in fewer bits" +
                        (keptByRegex == 0 ? std::string()
                         : keptByRegex == 1
                             ? " (the one such weight matches --base-dtype-keep " +
                                   keep.getValue() + ")"
                             : " (all " + std::to_string(keptByRegex) +
                                   " such weights match --base-dtype-keep " + keep.getValue() +
                                   ")"));
      return signalPassFailure();
    }
    replaced.resize(forward.getNumArguments());
    forward.eraseArguments(replaced);
    forward->setAttr(graph::kQuantizedBaseAttr, attrs.getArrayAttr(records));
  }
};

} // namespace

std::unique_ptr<Pass> createQuantizeBase(const QuantizeBaseOptions &options,
                                         QuantizedWeightFn onWeight) {
  return std::make_unique<QuantizeBasePass>(options, std::move(onWeight));
}

} // namespace shardc
