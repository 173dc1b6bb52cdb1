//===- BF16Matmuls.cpp - bf16 numerics for matrix products ------------------------------===//
//
// --precision bf16, first form: every matrix product reads its operands rounded to bf16 and
// its result is rounded to bf16, each rounding an f32 -> bf16 -> f32 cast pair in the IR; the
// products themselves accumulate in f32 (what a bf16 GEMM with an f32 accumulator computes:
// products of bf16 values are exact in f32). Everything else (LayerNorm, softmax, the loss, the
// optimizer and its master weights) stays f32. Run before the training step is built, so the
// casts' gradient rule rounds the gradients flowing back through them as PyTorch's autograd
// of .to(bfloat16) does.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/precision/PrecisionPasses.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "llvm/ADT/DenseSet.h"

namespace shardc {
#define GEN_PASS_DEF_BF16MATMULS
#include "passes/precision/PrecisionPasses.h.inc"

namespace {

bool isF32Tensor(mlir::Value v) {
  auto t = llvm::dyn_cast<mlir::RankedTensorType>(v.getType());
  return t && t.getElementType().isF32();
}

struct BF16MatmulsPass : impl::BF16MatmulsBase<BF16MatmulsPass> {
  using BF16MatmulsBase::BF16MatmulsBase;

  void runOnOperation() override {
    mlir::func::FuncOp func = getOperation();
    mlir::OpBuilder b(func.getContext());
    if (dtype != "bf16" && dtype != "f16") {
      func.emitError("shardc-bf16-matmuls: dtype '") << dtype.getValue()
                                                    << "': expected bf16 or f16";
      return signalPassFailure();
    }
    // The 16-bit type the products round to (named bf16 below; f16 for --precision fp16).
    mlir::TypeAttr bf16 =
        mlir::TypeAttr::get(dtype == "f16" ? mlir::Type(b.getF16Type()) : b.getBF16Type());
    const std::string toHalf = "/to_" + dtype.getValue(), fromHalf = "/from_" + dtype.getValue();
    mlir::TypeAttr f32 = mlir::TypeAttr::get(b.getF32Type());
    llvm::DenseMap<mlir::Value, mlir::Value> roundedOf; // an f32 value -> its rounded copy
    llvm::DenseSet<mlir::Value> rounded;                 // the rounded copies themselves

    // The value rounded to bf16 (and back), one round trip per value: a weight read by several
    // products is cast once per step.
    auto round = [&](mlir::Value v, mlir::Location loc) -> mlir::Value {
      if (!isF32Tensor(v) || rounded.contains(v))
        return v;
      if (auto it = roundedOf.find(v); it != roundedOf.end())
        return it->second;
      b.setInsertionPointAfterValue(v);
      mlir::Value half = b.create<graph::CastOp>(graph::suffixedLoc(loc, toHalf), v, bf16);
      mlir::Value back = b.create<graph::CastOp>(graph::suffixedLoc(loc, fromHalf), half, f32);
      roundedOf[v] = back;
      rounded.insert(back);
      return back;
    };

    llvm::SmallVector<mlir::Operation *> products;
    func.walk([&](mlir::Operation *op) {
      if (llvm::isa<graph::MatMulOp, graph::GemmOp, graph::AttentionOp>(op))
        products.push_back(op);
    });
    for (mlir::Operation *op : products) {
      // Fused attention (shardc-fuse-attention) is two products: q, k and v are rounded, and
      // its output; not the mask, which no product reads, nor the f32 log-sum-exp.
      const unsigned rounded = llvm::isa<graph::AttentionOp>(op) ? 3 : op->getNumOperands();
      for (mlir::OpOperand &operand : op->getOpOperands().take_front(rounded))
        operand.set(round(operand.get(), operand.get().getLoc()));
      mlir::Value result = op->getResult(0);
      mlir::Value back = round(result, op->getLoc());
      if (back == result)
        continue;
      // Every reader but the rounding itself reads the rounded product.
      mlir::Operation *toBF16 = back.getDefiningOp()->getOperand(0).getDefiningOp();
      result.replaceAllUsesExcept(back, toBF16);
    }
  }
};

} // namespace
} // namespace shardc
