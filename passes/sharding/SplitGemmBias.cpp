//===- SplitGemmBias.cpp - a Gemm's bias as an add after it -----------------------------===//
//
// A row-parallel Gemm leaves each tensor-parallel device a partial product; a bias added
// inside the Gemm would be added once per device. As an add of its own, it comes after the
// all-reduce the partitioner inserts before any op that is not linear in a pending sum.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/sharding/ShardingPasses.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace shardc {
#define GEN_PASS_DEF_SPLITGEMMBIAS
#include "passes/sharding/ShardingPasses.h.inc"

namespace {

using namespace mlir;

void splitBias(graph::GemmOp gemm) {
  Value bias = gemm.getC();
  if (!bias)
    return;
  OpBuilder b(gemm);
  Location loc = gemm.getLoc();
  if (auto name = dyn_cast<NameLoc>(loc))
    loc = NameLoc::get(b.getStringAttr(name.getName().str() + "/bias"), name.getChildLoc());
  auto product = b.create<graph::GemmOp>(gemm.getLoc(), gemm.getType(), gemm.getA(), gemm.getB(),
                                         Value(), gemm.getAlphaAttr(), b.getF32FloatAttr(1.0f),
                                         gemm.getTransAAttr(), gemm.getTransBAttr());
  float beta = gemm.getBeta().convertToFloat();
  if (beta != 1.0f) {
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    Value factor =
        b.create<graph::ConstantOp>(loc, DenseElementsAttr::get(scalar, llvm::ArrayRef(beta)));
    bias = b.create<graph::MulOp>(loc, bias.getType(), bias, factor);
  }
  Value sum = b.create<graph::AddOp>(loc, gemm.getType(), product, bias);
  gemm.replaceAllUsesWith(sum);
  gemm.erase();
}

struct SplitGemmBiasPass : impl::SplitGemmBiasBase<SplitGemmBiasPass> {
  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      getOperation().emitError("no @forward function whose Gemm biases to split");
      return signalPassFailure();
    }
    SmallVector<graph::GemmOp> gemms;
    forward.walk([&](graph::GemmOp op) { gemms.push_back(op); });
    for (graph::GemmOp op : gemms)
      splitBias(op);
  }
};

} // namespace
} // namespace shardc
