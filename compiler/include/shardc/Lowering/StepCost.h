//===- StepCost.h - what one rank's step costs, read from its planned IR ----------------===//
//
// `--strategy auto` scores each candidate from its partitioned, memory-planned training step
// (after shardc-plan-memory) instead of lowering it: the planned peak memory one rank holds,
// allocation by allocation as runtime::planPeakMemory computes it from the emitted program
// (arena, weights region, workspace, step inputs, step outputs), and the bytes one rank sends
// in one step as plannedCommBytes counts them. Both come out equal to what the lowered
// program says (tests/e2e/test_strategy_auto.py compares them at the byte), without copying
// a single weight.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_STEPCOST_H
#define SHARDC_LOWERING_STEPCOST_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace shardc {

struct PlannedStepCost {
  uint64_t peakBytes = 0; // Program.planned_peak_bytes of the lowered program
  uint64_t commBytes = 0; // Program.planned_comm_bytes
};

// `planned` must have been through shardc-plan-memory; emits an error at it (or at a
// collective whose group does not resolve) and fails otherwise.
mlir::FailureOr<PlannedStepCost> plannedStepCost(mlir::func::FuncOp planned);

} // namespace shardc

#endif
