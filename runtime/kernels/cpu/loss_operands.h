// The operands and attributes the loss kernels and their backwards share: a [N, C, d1..]
// class-scores-like tensor, targets [N, d1..], optional class weights [C], and a loss-shaped
// tensor (scalar for mean/sum, [N, d1..] for none), read and checked in one place.
#pragma once

#include "runtime/kernels/kernel.h"

namespace shardc::runtime::cpu {

enum class LossReduction { None, Sum, Mean };

struct LossSpec {
  LossReduction reduction = LossReduction::Mean;
  bool hasIgnoreIndex = false;
  int64_t ignoreIndex = 0;
  // The [N, C, d1..] operand viewed as [n, c, d], targets as [n, d].
  int64_t n = 0, c = 0, d = 0;
  // The classes this operand holds: [classOffset, classOffset + c) of classesWhole, the targets'
  // range (an index block of the class dimension, index_block.h; 0 and c when not split).
  int64_t classOffset = 0, classesWhole = 0;
};

// Reads `reduction`, `has_ignore_index`, `ignore_index` and the optional index block of the
// class dimension (`index_offset`, `index_size`; not together with class weights), and checks
// `classes` (named `classesName` in messages: the forward's input, or the backward's gradient
// output), the targets, the optional weights and `loss` (the forward's output, or the backward's
// dloss).
Status checkLossOperands(const char *kernel, const KernelArgs &args, const Tensor &classes,
                         const char *classesName, const Tensor &target, const Tensor &weight,
                         const Tensor &loss, const char *lossName, LossSpec *spec);

// The operands of softmax_cross_entropy_loss ((scores, labels, weights?) -> (loss, log_prob?)),
// checked; absent operands point at an absent tensor.
struct CrossEntropyOperands {
  const Tensor *scores = nullptr, *labels = nullptr, *weights = nullptr, *loss = nullptr;
  const Tensor *logProbOut = nullptr;
  LossSpec spec;
};
Status checkCrossEntropyOperands(const KernelArgs &args, CrossEntropyOperands *ops);

// nll_loss: (input, target, weight?) -> loss.
Status checkNllLossOperands(const KernelArgs &args, LossSpec *spec);

// The backwards: softmax_cross_entropy_loss_grad ((dloss, log_prob, labels, weights?) ->
// dscores, `withLogProb`) and nll_loss_grad ((dloss, target, weight?) -> dinput).
Status checkLossGradOperands(const char *kernel, const KernelArgs &args, bool withLogProb,
                             LossSpec *spec);

} // namespace shardc::runtime::cpu
