//===- HalfStorage.cpp - 16-bit storage for --precision bf16/fp16 -----------------------===//
//
// shardc-bf16-matmuls states the precision policy as f32 -> bf16 -> f32 cast pairs, which every
// pass up to here treats as ordinary f32 ops. This pass, on a rank's finished step, turns the
// pairs into 16-bit storage: the rounded copies of weights, activations and gradients that
// matrix products read and write become bf16 (or f16) buffers, and their f32 twins disappear.
// Every rewrite is exact (casts commute with data movement, a product kernel computes the f32
// product of its operands' values and rounds it like the cast), so the step computes the same
// bits as before; the lit test shows the IR, the e2e test the bit-identical losses.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/precision/PrecisionPasses.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace shardc {
#define GEN_PASS_DEF_HALFSTORAGE
#include "passes/precision/PrecisionPasses.h.inc"

namespace {

mlir::Type elementTypeOf(mlir::Value v) {
  auto t = llvm::dyn_cast<mlir::RankedTensorType>(v.getType());
  return t ? t.getElementType() : mlir::Type();
}

bool isHalf(mlir::Type e) { return e && (e.isBF16() || e.isF16()); }
bool isF32(mlir::Type e) { return e && e.isF32(); }

mlir::RankedTensorType withElementType(mlir::Type t, mlir::Type element) {
  return mlir::RankedTensorType::get(llvm::cast<mlir::RankedTensorType>(t).getShape(), element);
}

// The 16-bit type `op` rounds an f32 value to, when it is such a cast; null otherwise.
mlir::Type roundingTarget(mlir::Operation *op) {
  auto cast = llvm::dyn_cast<graph::CastOp>(op);
  if (!cast || !isF32(elementTypeOf(cast.getInput())))
    return {};
  mlir::Type to = elementTypeOf(cast.getOutput());
  return isHalf(to) ? to : mlir::Type();
}

// Whether `op` widens a 16-bit value to f32 (exactly).
bool isWidening(mlir::Operation *op) {
  auto cast = llvm::dyn_cast_or_null<graph::CastOp>(op);
  return cast && isHalf(elementTypeOf(cast.getInput())) && isF32(elementTypeOf(cast.getOutput()));
}

// Ops that only move elements (one data operand, one result, its element type the operand's):
// a cast commutes with each of them exactly.
bool isDataMovement(mlir::Operation *op) {
  return llvm::isa<graph::ReshapeOp, graph::TransposeOp, graph::FlattenOp, graph::SqueezeOp,
                   graph::UnsqueezeOp, graph::IdentityOp>(op) &&
         op->getNumOperands() == 1 && op->getNumResults() == 1;
}

// The 16-bit type every reader of `v` rounds it to, when every reader is such a rounding cast
// (and there is one); null otherwise.
mlir::Type commonRounding(mlir::Value v) {
  mlir::Type target;
  for (mlir::Operation *user : v.getUsers()) {
    mlir::Type t = roundingTarget(user);
    if (!t || (target && t != target))
      return {};
    target = t;
  }
  return target;
}

// `v`'s type becomes 16-bit `half`; its rounding casts (all its readers) are replaced by it.
void absorbRoundingReaders(mlir::Value v, mlir::Type half) {
  v.setType(withElementType(v.getType(), half));
  for (mlir::Operation *user : llvm::make_early_inc_range(v.getUsers())) {
    user->getResult(0).replaceAllUsesWith(v);
    user->erase();
  }
}

struct HalfStoragePass : impl::HalfStorageBase<HalfStoragePass> {
  using HalfStorageBase::HalfStorageBase;

  void runOnOperation() override {
    mlir::func::FuncOp func = getOperation();
    mlir::OpBuilder b(func.getContext());
    mlir::Type reduceType;
    if (reduceDtype == "bf16")
      reduceType = b.getBF16Type();
    else if (reduceDtype == "f16")
      reduceType = b.getF16Type();
    else if (reduceDtype != "f32") {
      func.emitError("shardc-half-storage: reduce-dtype '")
          << reduceDtype.getValue() << "': expected f32, bf16 or f16";
      return signalPassFailure();
    }

    hoistRoundings(func, b);
    sinkWidenings(func, b);
    foldRoundTrips(func);
    foldIntoProducts(func);
    if (reduceType)
      reduceIn(func, b, reduceType);
    eraseDeadCasts(func);
  }

  // A rounding cast moves above the data-movement op or ZeRO-3 all-gather that produces its
  // operand when every reader of that result rounds it the same way: the weight is rounded as
  // its shard, and the all-gather and transposes move 16-bit elements.
  void hoistRoundings(mlir::func::FuncOp func, mlir::OpBuilder &b) {
    for (bool changed = true; changed;) {
      changed = false;
      llvm::SmallVector<mlir::Operation *> producers;
      func.walk([&](mlir::Operation *op) {
        if (isDataMovement(op) ||
            llvm::isa<graph::AllGatherOp, graph::AllToAllOp, graph::SendRecvOp>(op))
          producers.push_back(op);
      });
      for (mlir::Operation *op : producers)
        for (mlir::OpResult result : op->getResults()) {
          mlir::Type half = commonRounding(result);
          const unsigned operandIndex = isDataMovement(op) ? 0 : result.getResultNumber();
          mlir::Value in = op->getOperand(operandIndex);
          if (!half || !isF32(elementTypeOf(in)))
            continue;
          b.setInsertionPoint(op);
          mlir::Location loc = (*result.getUsers().begin())->getLoc();
          mlir::Value rounded = b.create<graph::CastOp>(loc, in, mlir::TypeAttr::get(half));
          op->setOperand(operandIndex, rounded);
          absorbRoundingReaders(result, half);
          changed = true;
        }
    }
  }

  // A widening cast moves below the data-movement ops that read it, so that they move 16-bit
  // elements and the products behind them can read the 16-bit value.
  void sinkWidenings(mlir::func::FuncOp func, mlir::OpBuilder &b) {
    llvm::SmallVector<mlir::Operation *> worklist;
    func.walk([&](graph::CastOp op) {
      if (isWidening(op))
        worklist.push_back(op);
    });
    while (!worklist.empty()) {
      auto widen = llvm::cast<graph::CastOp>(worklist.pop_back_val());
      mlir::Value half = widen.getInput();
      for (mlir::Operation *user : llvm::make_early_inc_range(widen->getUsers())) {
        if (!isDataMovement(user))
          continue;
        b.setInsertionPoint(user);
        mlir::Operation *moved = b.clone(*user);
        moved->setOperand(0, half);
        moved->getResult(0).setType(
            withElementType(user->getResult(0).getType(), elementTypeOf(half)));
        auto widened = b.create<graph::CastOp>(widen.getLoc(), moved->getResult(0),
                                               mlir::TypeAttr::get(b.getF32Type()));
        user->getResult(0).replaceAllUsesWith(widened.getResult());
        user->erase();
        worklist.push_back(widened);
      }
    }
  }

  // Rounding a widened 16-bit value back to its type gives the value itself.
  void foldRoundTrips(mlir::func::FuncOp func) {
    llvm::SmallVector<graph::CastOp> roundings;
    func.walk([&](graph::CastOp op) {
      if (roundingTarget(op))
        roundings.push_back(op);
    });
    for (graph::CastOp round : roundings) {
      mlir::Operation *source = round.getInput().getDefiningOp();
      if (!isWidening(source))
        continue;
      mlir::Value half = source->getOperand(0);
      if (half.getType() != round.getType())
        continue;
      round.getResult().replaceAllUsesWith(half);
      round.erase();
    }
  }

  // A product reads its operands' 16-bit values and writes its result in 16 bits when every
  // reader rounds it. A Gemm's bias stays f32 (its kernel adds it before rounding).
  void foldIntoProducts(mlir::func::FuncOp func) {
    llvm::SmallVector<mlir::Operation *> products;
    func.walk([&](mlir::Operation *op) {
      if (llvm::isa<graph::MatMulOp, graph::GemmOp>(op))
        products.push_back(op);
    });
    for (mlir::Operation *op : products) {
      for (unsigned i : {0u, 1u}) {
        mlir::Operation *source = op->getOperand(i).getDefiningOp();
        if (isWidening(source))
          op->setOperand(i, source->getOperand(0));
      }
      if (mlir::Type half = commonRounding(op->getResult(0)))
        absorbRoundingReaders(op->getResult(0), half);
    }
  }

  // --reduce-dtype bf16/f16: the gradients' data-parallel reductions run in `half`. Each f32
  // operand is rounded first (or read as the 16-bit value it was widened from) and each result
  // widened after.
  void reduceIn(mlir::func::FuncOp func, mlir::OpBuilder &b, mlir::Type half) {
    llvm::SmallVector<mlir::Operation *> reductions;
    func.walk([&](mlir::Operation *op) {
      if (llvm::isa<graph::AllReduceOp, graph::ReduceScatterOp>(op))
        reductions.push_back(op);
    });
    for (mlir::Operation *op : reductions)
      for (unsigned i = 0; i < op->getNumOperands(); ++i) {
        mlir::Value in = op->getOperand(i);
        if (!isF32(elementTypeOf(in)))
          continue;
        mlir::Operation *source = in.getDefiningOp();
        b.setInsertionPoint(op);
        mlir::Value rounded =
            isWidening(source) && elementTypeOf(source->getOperand(0)) == half
                ? source->getOperand(0)
                : b.create<graph::CastOp>(graph::suffixedLoc(in.getLoc(), "/reduce_in_16_bits"),
                                          in, mlir::TypeAttr::get(half))
                      .getResult();
        op->setOperand(i, rounded);
        mlir::Value result = op->getResult(i);
        result.setType(withElementType(result.getType(), half));
        b.setInsertionPointAfter(op);
        auto widened = b.create<graph::CastOp>(result.getLoc(), result,
                                               mlir::TypeAttr::get(b.getF32Type()));
        result.replaceAllUsesExcept(widened.getResult(), widened);
      }
  }

  // The casts and moves whose readers all went away.
  void eraseDeadCasts(mlir::func::FuncOp func) {
    for (bool changed = true; changed;) {
      changed = false;
      llvm::SmallVector<mlir::Operation *> dead;
      func.walk([&](mlir::Operation *op) {
        if ((llvm::isa<graph::CastOp>(op) || isDataMovement(op)) && op->use_empty())
          dead.push_back(op);
      });
      for (mlir::Operation *op : dead)
        op->erase();
      changed = !dead.empty();
    }
  }
};

} // namespace
} // namespace shardc
