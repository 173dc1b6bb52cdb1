//===- TruncateUnits.h - a model's repeated units cut to three, for profiling ------------===//
//
// The cost model's profile of a deep model need not compile every layer: the repeated units
// (ModuleUnit.h: transformer layers) are the same ops on the same shapes, so a profile of the
// first two and the last stands for all of them, the second repeated L - 2 times. This cuts
// @forward of an imported module to those three units when the units between are a chain
// that can be removed without changing anything else: exactly one value (not a constant)
// flows into them from the second unit, exactly one flows out of them, of the same type, and
// nothing else they compute is read after them. Their parameters leave the function.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_COST_TRUNCATEUNITS_H
#define SHARDC_COST_TRUNCATEUNITS_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardc::cost {

struct Truncation {
  std::vector<std::string> kept;  // the units left, in forward order
  std::vector<int64_t> repeats;   // how many units each stands for
};

// Cuts `module`'s @forward in place; nullopt (the module untouched) when it has fewer than 5
// units or they do not form such a chain.
std::optional<Truncation> truncateRepeatedUnits(mlir::ModuleOp module);

} // namespace shardc::cost

#endif
