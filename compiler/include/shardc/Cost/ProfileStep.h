//===- ProfileStep.h - a StepProfile read from a planned step's IR ----------------------===//
#ifndef SHARDC_COST_PROFILESTEP_H
#define SHARDC_COST_PROFILESTEP_H

#include "shardc/Cost/StepProfile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <string>

namespace shardc::cost {

// Reads one rank's train step, partitioned on a mesh whose axis `dpAxis` splits the batch and
// whose axis `tpAxis` (-1: none) is tensor parallel, after shardc-plan-memory. The ops' FLOPs
// and bytes are CostOpInterface's on their local types; a product's dimensions that the dp
// axis splits (its result's sharding, or a pending dp sum for its contraction) are the ones
// that grow with the rows. Collectives over dp are left out (the cost model derives the
// gradient reduction from the parameters, for any dp and ZeRO stage). Fills everything but
// the fields of the candidate (tp, sp, remat, precision, rows), which the caller sets.
mlir::FailureOr<StepProfile> profileStep(mlir::func::FuncOp planned, int dpAxis, int tpAxis);

// The FLOPs of the products (matrix products, convolutions, attention) of a global
// (unpartitioned) train step's forward and backward passes, recomputation left out; an op of
// a unit in `repeats` counts that many times.
double modelProductFlops(mlir::func::FuncOp global,
                         const std::map<std::string, int64_t> &repeats = {});

} // namespace shardc::cost

#endif
