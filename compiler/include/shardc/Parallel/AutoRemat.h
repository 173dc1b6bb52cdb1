//===- AutoRemat.h - --remat auto: the least recomputation that fits --gpu-memory -------===//
//
// The plans, from least to most recomputation: none; selective for the first k of the N units
// (k = 1..N); full for the first k units and selective for the rest. Each adds recomputation
// to the one before, so the planned peak does not grow along the list; a bisection over it
// compiles about log2(2N + 1) plans besides none and the last.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PARALLEL_AUTOREMAT_H
#define SHARDC_PARALLEL_AUTOREMAT_H

#include "shardc/Parallel/CompileOptions.h"

#include <cstdint>
#include <string>

namespace shardc {

// A plan of shardc-remat: `mode` for the first `units` units (-1: every unit), the next
// lighter mode for the rest.
struct RematPlan {
  std::string mode;
  int64_t units = -1;
};

// What --remat auto asks of the compiler driver (a fake in the unit tests).
class RematPlanCompiler {
public:
  virtual ~RematPlanCompiler() = default;
  // Compiles the training step under `plan`: 0 with `peak`, the largest planned peak per
  // rank, and `units`, the units shardc-remat found; else the exit code, error printed.
  virtual int compile(const RematPlan &plan, uint64_t &peak, int64_t &units) = 0;
  // The plan compiled last is the best so far: keep it (chooseRemat returns with the best
  // plan kept).
  virtual void keepLast() = 0;
};

// Picks the least recomputation whose largest planned peak per rank fits
// opts.gpuMemoryBytes. 0 with the best plan kept and `choice` saying what was chosen and
// the peaks of the plans tried (plan.txt's recomputation section); else the exit code, with
// one error line printed when even full recomputation does not fit.
int chooseRemat(const CompileOptions &opts, RematPlanCompiler &compiler, std::string &choice);

} // namespace shardc

#endif
