//===- BlockedResharding.h - a resharding point computed in blocks of another dimension --===//
//
// An op that needs the batch whole (a softmax over it, a product pairing its rows, its
// gradients) is a resharding point: shardc-partition gives it its operands whole and cuts its
// results back. Gathering every split operand whole sends N-1 blocks per rank and has every
// rank compute the whole op. Often a dimension the op treats independently is free: a softmax
// over the batch of [batch, classes] works on any block of the classes. Then the op is
// computed in blocks of that dimension instead, as GSPMD and Shardy reshard:
//
//   operand split along the batch   -> all-to-all to blocks of the free dimension
//                                      ((N-1)/N of a rank's block sent, not N-1 blocks)
//   operand whole                   -> its block sliced locally (no communication)
//   operand without that dimension  -> all-gathered whole along its split (or left whole)
//   result                          -> all-to-all back to the layout the program wants,
//                                      all-gathered where it wants it whole
//
// The factor is a parallel factor of the op's rule (every device computes its block of every
// result), present in every result and in each operand either as a dimension of its own or
// not at all, not indexed by values and not over a positional kernel; it must divide by the
// devices. Of the factors that qualify, the one whose conversions send the fewest bytes is
// chosen, and it is used when it sends no more than gathering the operands whole (a tie
// still divides the op's work and memory by N). The backward pass needs nothing of its own:
// the gradient ops of a resharding point are resharding points too, and each makes this
// choice for itself. On a dp x tp mesh both forms first make the operands whole on tp, so the
// choice weighs the data-parallel axis only.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SHARDING_BLOCKEDRESHARDING_H
#define SHARDC_PASSES_SHARDING_BLOCKEDRESHARDING_H

#include "shardc/Dialect/Graph/ShardingRule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace shardc::sharding {

// An operand or result of a resharding point, as the choice sees it: its global shape, the
// bytes of its elements and its layout on the data-parallel axis (an operand's as it arrives,
// a result's as the program wants it).
struct ReshardTensor {
  llvm::SmallVector<int64_t> shape;
  int64_t elementBytes = 4;
  int splitDim = -1;   // the dimension split across the devices; -1: whole
  int64_t groups = 1;  // the equal groups that split cuts (strided rows)
};

struct BlockedReshard {
  int factor = -1;                   // of the op's rule, computed in blocks
  llvm::SmallVector<int> operandDims; // per operand: its dimension of the factor, -1: none
  llvm::SmallVector<int> resultDims;  // per result: its dimension of the factor
  int64_t exchangedBytes = 0;        // sent per rank by all-to-all
  int64_t gatheredBytes = 0;         // sent per rank by all-gathers
  int64_t bytesSent() const { return exchangedBytes + gatheredBytes; }
};

// What one rank sends when every split operand is gathered whole (N-1 blocks of each).
int64_t wholeOperandsBytesSent(llvm::ArrayRef<ReshardTensor> operands, int64_t ranks);

// The factor of `rule` whose blocked computation sends the fewest bytes per rank, when it
// sends no more than gathering the operands whole; std::nullopt when none qualifies.
std::optional<BlockedReshard> cheapestBlockedReshard(const graph::OpShardingRule &rule,
                                                     llvm::ArrayRef<ReshardTensor> operands,
                                                     llvm::ArrayRef<ReshardTensor> results,
                                                     int64_t ranks);

} // namespace shardc::sharding

#endif
