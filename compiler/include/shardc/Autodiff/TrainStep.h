//===- TrainStep.h - @forward -> @train_step --------------------------------------------===//
#ifndef SHARDC_AUTODIFF_TRAINSTEP_H
#define SHARDC_AUTODIFF_TRAINSTEP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace shardc {

struct TrainStepOptions {
  std::string optimizer = "adamw"; // "adamw" or "sgd"
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weightDecay = 0.01; // PyTorch's defaults: AdamW 0.01, SGD 0
  double momentum = 0.0, dampening = 0.0;
  bool nesterov = false;
  double gradClip = 0.0; // max global gradient norm; 0 disables clipping
  std::string freeze;     // regex: matching parameters are not trained
  std::string trainable;  // regex: when set, only matching parameters are trained
  // "fp32", or "bf16": matrix products on bf16-rounded values (shardc-bf16-matmuls).
  std::string precision = "fp32";
  // With bf16/fp16: the element type of the gradients' data-parallel reductions, "f32" or the
  // 16-bit type (shardc-half-storage reduce-dtype; --reduce-dtype).
  std::string reduceDtype = "f32";
  // With bf16/fp16: whether the rounded values are stored in 16 bits (shardc-half-storage) or
  // kept as f32 copies of 16-bit values (bit-identical; --half-storage off, for checking).
  bool halfStorage = true;
  // Dynamic loss scaling (torch.cuda.amp.GradScaler's rule, with its growth factor 2 and
  // backoff 0.5): the backward pass starts from the loss scale instead of 1, the gradients are
  // unscaled in f32, a step whose gradients are not all finite is skipped (parameters and
  // optimizer state unchanged) and halves the scale; `lossScaleGrowthInterval` finite steps in
  // a row double it. --precision fp16 turns it on.
  bool dynamicLossScale = false;
  double lossScaleInit = 65536.0;
  int64_t lossScaleGrowthInterval = 2000;
  // Recomputation in the backward pass (shardc-remat): "none", "full" or "selective".
  std::string remat = "none";
  // With remat full or selective: only the first N units take it, the rest the next lighter
  // mode (-1: every unit); --remat auto's per-unit plans.
  int64_t rematUnits = -1;
};

// Attribute names of @train_step's extra arguments and results.
inline constexpr llvm::StringLiteral kStateAttr = "graph.state"; // "NAME.exp_avg", ...
inline constexpr llvm::StringLiteral kStepAttr = "graph.step";
// The name of @train_step's loss result, whatever the model called its loss output: the
// runtime's training loop reads the loss by this name.
inline constexpr llvm::StringLiteral kLossName = "loss";
inline constexpr llvm::StringLiteral kLrAttr = "graph.lr";
// Dynamic loss scaling's state (graph.state names, f32 scalars starting at 0): the scale is
// init x 2^log2; the finite steps since the scale last changed; the steps skipped so far (the
// optimizer's own step count is the step's number minus these).
inline constexpr llvm::StringLiteral kLossScaleLog2State = "loss_scale.log2";
inline constexpr llvm::StringLiteral kLossScaleGrowthState = "loss_scale.growth_tracker";
inline constexpr llvm::StringLiteral kLossScaleSkippedState = "loss_scale.skipped_steps";
inline bool isLossScaleState(llvm::StringRef name) {
  return name == kLossScaleLog2State || name == kLossScaleGrowthState ||
         name == kLossScaleSkippedState;
}
// ... and its outputs (graph.output names): the step's scale, 1 when it was skipped.
inline constexpr llvm::StringLiteral kLossScaleOutput = "loss_scale";
inline constexpr llvm::StringLiteral kLossScaleOverflowOutput = "loss_scale_overflow";
// The run's random seed (i64 scalar), an argument only when a training dropout needs it.
inline constexpr llvm::StringLiteral kSeedAttr = "graph.seed";

// Replaces @forward in its module by
//   @train_step(graph inputs, parameters, optimizer state, step: i64, lr: f32[, seed: i64])
//       -> (loss, updated trainable parameters, updated state, step + 1)
// Training dropouts draw their masks from (seed, step + 1): the seed argument exists only
// when the model has one.
// Parameters are trained when they are f32, pass the name filters and the loss depends on
// them; the others stay plain inputs. Errors are emitted at the function or op.
mlir::LogicalResult buildTrainStep(mlir::func::FuncOp forward, const TrainStepOptions &options);

} // namespace shardc

#endif
