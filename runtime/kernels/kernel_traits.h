// What the compiler and the runtime need to know about a kernel beyond its contract: its
// traits, read from the kernel list (kernels.def) instead of being derived from its name in
// each place that asks. C++17 without MLIR or protobuf, so the compiler may include it.
#pragma once

#include <string_view>

namespace shardc::runtime {

// One bit per trait; a kernel's traits are the bits of its kernels.def entry.
enum KernelTrait : unsigned {
  // Takes a communicator and the "group" and "dtype" attributes (docs/kernels.md,
  // "Collectives"): all_reduce, reduce_scatter, all_gather, all_to_all, shard_slice.
  kCollectiveKernel = 1u << 0,
  // Sends data between ranks, so may run asynchronously (Op.completes_before); shard_slice,
  // also a collective kernel, only cuts this rank's shard.
  kMovesDataBetweenRanks = 1u << 1,
  // An optimizer step: reads (param, grad, state...) and writes the new param and state, the
  // gradient being input 1.
  kOptimizerUpdateKernel = 1u << 2,
  // A matrix product (matmul, gemm): the op counted as a product in precision reports.
  kMatrixProductKernel = 1u << 3,
  // Scales gradient input 0 by the clipping factor before an optimizer update reads it.
  kGradientClipKernel = 1u << 4,
  // Its one output holds its one input's values, only rearranged (copy, transpose): what it
  // makes of a parameter is still that parameter, for the plan's accounting.
  kRearrangesValuesKernel = 1u << 5,
  // Converts its one input to the output's dtype (cast): where the precision reports count
  // roundings and widenings.
  kConvertsDtypeKernel = 1u << 6,
  // Draws one random number per element of the whole tensor, keyed on the element's index
  // (dropout): a rank holding a block of rows is told where it starts (its "split_offset",
  // placed by the loader from "split_unit" and the rank's first row).
  kKeyedOnGlobalIndexKernel = 1u << 7,
};

// The traits of kernel `name` (0 for a kernel that has none or does not exist).
unsigned kernelTraits(std::string_view name);

// Whether kernel `name` has `trait`.
inline bool kernelHasTrait(std::string_view name, KernelTrait trait) {
  return (kernelTraits(name) & trait) != 0;
}

} // namespace shardc::runtime
