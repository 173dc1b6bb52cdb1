//===- ShardingRule.h - how an op's dimensions may be split -----------------------------===//
//
// An op's sharding rule is an einsum-like factor mapping, in the manner of Shardy's
// OpShardingRule: the op iterates over a set of factors (the loops of its computation), each
// with a size and a kind, and every dimension of every operand and result is a list of those
// factors, major first (a merged dimension of a Reshape holds several). Splitting a factor
// across devices splits every dimension whose *major* factor it is; a split of a minor factor
// is *strided*: the dimension is `g` equal groups (g: the product of the factors before it),
// each cut into blocks, and a device holds its block of every group. A fused projection
// cut by Split is the case that matters: [b, s, 3h] -> 3 x [b, s, h] has the factors
// {3, h} on its input; a split of h (the heads) holds, on each device, its heads of Q, K
// and V, so the weight that computes [b, s, 3h] is split as 3 groups of h.
//
//   matmul  [b, m, k] x [b, k, n] -> [b, m, n]     b, m, n parallel; k a reduction
//   reshape [b, s, 768] -> [b, s, 12, 64]          768 = {h, d}: a split of h is a split of
//                                                  both the 768-dimension and the heads
//   softmax over its last axis                     that factor is whole
//
// Kinds: a split *parallel* factor splits the op: every device computes its block of the
// results that have the factor. A result that lacks a split factor of its operands (the op
// reduces over it: matmul's k, a ReduceSum's axes, the rows of a LayerNorm's dscale) is left
// with a partial result on every device, a pending reduction over the devices
// (`#mesh.shard<..., partial = sum[...]>`), whose kind the factor says: a sum, a mean (the
// local mean is scaled by local/global extent, then summed) or a maximum. A *whole* factor
// must not be split (softmax and normalisation axes, concat and split axes, scatter targets,
// positions a kernel reads): `why` says why, for plan.txt and error messages.
//
// Pending sums: `linear` says for which operands the op is linear when the other operands
// carry no pending sum (mul, matmul, reshape, ...): a pending sum on such an operand passes
// to the results instead of being all-reduced first. `sumsOperands` marks ops that are linear
// in all operands together (add, sub, concat): they pass a pending sum only when every
// operand has the same one. `separateOperands` marks ops that reduce each operand on its own
// and only then combine the per-operand results (the gradient norm: the squares of each
// gradient summed, then added): factors of different operands never meet, so they may be split
// on the same mesh axis, and two operands whose dimensions are in one class do not pair blocks.
//
// Index blocks: `indexedFactors` are the factors an op addresses by index *values* read at
// run time (gather's axis, a loss's classes picked by label). Split, each device holds a block
// of global indices [offset, offset + local size): the partitioner records the block on the op
// (graph.index_block) and the kernel takes its device's offset (index_offset, set by the
// runtime from the device's mesh coordinate), skipping indices outside the block; a gather's
// result is then a pending sum, as for any reduction.
//
// An op without a rule (no interface, or getShardingRule() returning std::nullopt) is
// computed replicated: every dimension of its operands and results stays whole.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_SHARDINGRULE_H
#define SHARDC_DIALECT_GRAPH_SHARDINGRULE_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace shardc::graph {

enum class FactorKind : uint8_t { Parallel, Whole };

// How a split reduction factor combines the devices' partial results.
enum class PartialKind : uint8_t {
  Sum,  // the local results sum to the global one
  Mean, // the local result is a mean over the local extent: scale by local/global, then sum
  Max,  // a pending maximum: shardc-partition all-gathers the devices' maxima, then takes theirs
  Norm, // the local result is the 2-norm of the local blocks: the global one is the root of
        // the sum over the devices of their squares (shardc-partition sums them at once)
};

struct ShardingFactor {
  int64_t size = 1;
  FactorKind kind = FactorKind::Parallel;
  PartialKind partial = PartialKind::Sum; // for results that lack it
  std::string why;                        // for whole factors: what needs it whole
};

// The factors of one dimension, major first. Empty for a dimension of size 1 that the op
// broadcasts (it has no factor: it is never split).
using DimFactors = llvm::SmallVector<int, 2>;
using TensorFactors = llvm::SmallVector<DimFactors, 4>;

struct OpShardingRule {
  llvm::SmallVector<ShardingFactor, 6> factors;
  llvm::SmallVector<TensorFactors, 4> operands; // one per operand
  llvm::SmallVector<TensorFactors, 2> results;  // one per result
  llvm::SmallVector<bool, 4> linear;            // per operand (see above)
  // Per operand: passes on a pending sum over the batch (mesh axis 0) though it is linear only
  // up to rounding: a cast of f32 to a 16-bit float. Each device then rounds its partial sum
  // (a weight gradient over its rows) and the data-parallel reduction adds the rounded parts,
  // as data-parallel mixed precision does everywhere (PyTorch DDP and FSDP round each rank's
  // gradient before reducing it). Any other pending sum is all-reduced before the rounding.
  llvm::SmallVector<bool, 4> linearOverBatch;
  bool sumsOperands = false;
  bool separateOperands = false;
  llvm::SmallVector<int, 1> indexedFactors;
  // The kernel derives values from each element's position in the whole tensor (a training
  // dropout's mask): a device's block must be one contiguous range of every dimension, so a
  // strided split of its dimensions (below) is refused.
  bool positional = false;
  // Its minor factors may be split as strided parts (a concat or split into equal parts);
  // those of any other op stay whole.
  bool stridedParts = false;
  // Its minor factors may be split as strided parts by the batch only (a reshape merging the
  // batch into the minor part of a dimension, as nn.MultiheadAttention's [seq * batch, embed]:
  // each device holds its rows of every group, the local reshape's order). Tensor parallelism
  // splits such a part only behind the batch with one data-parallel device (the heads of
  // [batch * heads]; shardc-propagate-sharding decides) and keeps the others whole: a head
  // size split behind its heads would leave partial sums where the heads are whole.
  bool stridedBatchParts = false;
  // Padding (passes/sharding/TensorParallelPadding.h: a dimension tensor parallelism does not
  // divide is padded to a multiple of its devices, its padded entries kept zero): the results
  // are zero at the padded entries of a factor where the operands that hold the factor are
  // zero there and the others are finite (a product, a move, f(0) = 0 elementwise; for an op
  // that sumsOperands, only when every operand holds it). It takes an operand that holds the
  // factor (an expand along it writes its operand's values there) or an indexed factor that no
  // index names (a gather's gradient). Any other op's results are zeroed there after it.
  bool keepsZeroPadding = false;
  // Per operand (empty: none): the op reads every entry of an indexed factor of it in a way
  // a zero would change (a softmax's sum of exponentials): padded entries must be -inf.
  llvm::SmallVector<bool, 4> negInfPadding;

  // --- building ---
  int addFactor(int64_t size, FactorKind kind = FactorKind::Parallel);
  // A parallel factor the op reduces over in the results that lack it.
  int addReduction(int64_t size, PartialKind partial = PartialKind::Sum);
  int addWhole(int64_t size, std::string why);
  // Makes an existing factor whole (the first reason given is kept).
  void makeWhole(int factor, std::string why);
  // A tensor whose dimension d has the single factor factors[d] (-1: no factor).
  static TensorFactors tensor(llvm::ArrayRef<int> factors);
  // A tensor of `shape` whose dimensions each get a fresh factor of the given kind.
  TensorFactors freshTensor(llvm::ArrayRef<int64_t> shape, FactorKind kind = FactorKind::Parallel);
};

// Rule helpers shared by the ops' getShardingRule() implementations (ShardingRules*.cpp).
namespace sharding {

// Elementwise with NumPy broadcasting: result dimension i (aligned from the right) is one
// factor shared by every operand dimension of the same size; size-1 broadcast dimensions get
// none. Operands that are not ranked tensors (none in this dialect) are not allowed.
OpShardingRule elementwise(mlir::Operation *op);
// A reshape-like op: the input and result shapes are cut into the smallest groups of
// dimensions with equal products, and each group into the factors that both sides' dimension
// boundaries imply (768 -> 12x64 gives factors 12 and 64; 12x64 -> 768 the same).
OpShardingRule reshape(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out);
// Operand 0 reduced over `axes` (result keeps them as size 1 when keepdims).
OpShardingRule reduction(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> axes,
                         bool keepdims, PartialKind partial);
// Every dimension of the op is whole; for ops whose rule is "no split at all" but which are
// still fine to compute on replicated operands (`why` names what prevents it).
OpShardingRule allWhole(mlir::Operation *op, llvm::StringRef why);

} // namespace sharding

} // namespace shardc::graph

#endif
