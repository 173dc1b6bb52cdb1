//===- SequenceParallel.h - splitting the activations between tp blocks along the sequence -===//
//
// Tensor parallelism leaves the activations between its blocks (the residual stream, its
// norms, the bias after a row-parallel product, and their gradients) replicated on every
// device of a tp group: each device computes the same LayerNorm on the same rows. Sequence
// parallelism (Megatron-LM's) splits them along one more dimension on tp instead, so that
// each device computes and stores a block of them. The split dimension is not assumed: it is
// the class of dimensions (DimensionClasses.h) whose split saves the most activation elements
// under the rule below; in a transformer that is the sequence.
//
// An op is *sequence-local* for a class c when it computes each block of c on its own: its
// rule has exactly one factor in c, parallel (or a sum reduction), not picked by index, the
// major factor of every dimension it appears in; no operand it would cut holds integers
// (collectives move floats); and no operand or result is split on tp by the tensor-parallel
// layout. (A training dropout is one: its mask is keyed on the whole tensor's indices, each
// device's block at its offset.) Sequence-local ops linked by the values between them form
// regions. A region's inputs enter split: a pending sum over tp (a row-parallel product) by a
// reduce-scatter in place of its all-reduce, a replicated value by a local slice; a value it
// hands to any other op leaves by an all-gather. A region is kept when a pending sum enters
// it (it replaces an all-reduce, whose bytes are a reduce-scatter's and an all-gather's): per
// transformer layer Megatron's 2 all-gathers and 2 reduce-scatters of b·s·h forward, and as
// many backward, in place of 4 all-reduces. Reductions over the split dimension inside a
// region (LayerNorm's weight gradient, a bias gradient) become pending sums over tp.
//
// The decision is recorded in the IR for shardc-partition: each kept op carries
// `graph.sequence_factor` (the index of the split factor in its rule), and each value it
// yields with that factor is sharded on tp along it.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SHARDING_SEQUENCEPARALLEL_H
#define SHARDC_PASSES_SHARDING_SEQUENCEPARALLEL_H

#include "passes/sharding/DimensionClasses.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace shardc::sharding {

inline constexpr llvm::StringLiteral kSequenceFactorAttr = "graph.sequence_factor";

// Chooses the class to split and the regions, records them (see above) and appends a line per
// decision to `notes`. `classAxis` is the mesh axis of each class (tp = 1) as the
// tensor-parallel layout chose it, whose shardings are already set; `tp` the size of that axis.
// Fails, with an error naming why, when no region can be split.
mlir::LogicalResult chooseSequenceParallel(mlir::func::FuncOp func, const DimensionClasses &dc,
                                           int batch, const std::vector<int> &classAxis,
                                           int64_t tp, mlir::FlatSymbolRefAttr mesh,
                                           llvm::SmallVectorImpl<std::string> &notes);

} // namespace shardc::sharding

#endif
