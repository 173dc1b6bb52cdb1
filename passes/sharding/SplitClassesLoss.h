//===- SplitClassesLoss.h - softmax cross-entropy over classes split across devices ------===//
//
// softmax_cross_entropy_loss normalises over the classes: with the classes split (a
// vocab-parallel output projection), no device has a whole row. shardc-partition rewrites such
// a loss, in the global program and before partitioning, into ops whose splits it knows:
//
//   m        = reduce_max(scores, classes)          pending maximum: all-gathered, maximum taken
//   lse      = log(reduce_sum(exp(scores - m))) + m  pending sum: all-reduced
//   log_prob = scores - lse                          each device's block
//   loss     = nll_loss(log_prob, labels)            picks of each device's labels (index
//                                                    block): a pending sum
//
// so the logits are never gathered: per row one maximum gathered, one sum all-reduced, and the
// loss's pending sum. The gradient (softmax_cross_entropy_loss_grad) reads log_prob and the
// labels and is local with its index block.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SHARDING_SPLITCLASSESLOSS_H
#define SHARDC_PASSES_SHARDING_SPLITCLASSESLOSS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace shardc::sharding {

// Rewrites every softmax_cross_entropy_loss of `func` whose scores have their classes (dim 1)
// split, setting the shardings of the values it creates.
void decomposeSplitClassesLosses(mlir::func::FuncOp func);

} // namespace shardc::sharding

#endif
