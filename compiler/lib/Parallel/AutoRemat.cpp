//===- AutoRemat.cpp --------------------------------------------------------------------===//
#include "shardc/Parallel/AutoRemat.h"

#include "shardc/Support/Diagnostics.h"

namespace shardc {

int chooseRemat(const CompileOptions &opts, RematPlanCompiler &compiler, std::string &choice) {
  std::string tried;
  // Compiles `plan`; `numUnits`, when given, receives the units shardc-remat found (and the
  // plan is named by its mode alone).
  auto compilePlan = [&](const RematPlan &plan, uint64_t &peak, int64_t *numUnits) -> int {
    int64_t units = 0;
    if (int rc = compiler.compile(plan, peak, units))
      return rc;
    std::string name = plan.mode;
    if (plan.units >= 0 && numUnits == nullptr)
      name += " for " + std::to_string(plan.units) + " units";
    tried += (tried.empty() ? "" : ", ") + name + " " + std::to_string(peak) + " bytes";
    if (numUnits != nullptr)
      *numUnits = units;
    return 0;
  };
  auto chose = [&](const std::string &plan) {
    choice = "auto (--gpu-memory " + std::to_string(opts.gpuMemoryBytes) + " bytes) chose " + plan +
             ", the least recomputation that fits; " +
             "planned peak per rank of the plans tried: " + tried;
    return 0;
  };
  uint64_t peak = 0;
  if (int rc = compilePlan({"none", -1}, peak, nullptr))
    return rc;
  compiler.keepLast();
  if (peak <= opts.gpuMemoryBytes)
    return chose("none");
  int64_t numUnits = 0;
  if (int rc = compilePlan({"full", -1}, peak, &numUnits))
    return rc;
  compiler.keepLast();
  if (peak > opts.gpuMemoryBytes) {
    printError(opts.model + ": --remat auto: no recomputation fits --gpu-memory " +
               std::to_string(opts.gpuMemoryBytes) + " bytes: the smallest plan, full, needs " +
               std::to_string(peak) + " bytes per rank (planned peak per rank: " + tried + ")");
    return 1;
  }
  // Plan c of the list (0: none, 1..N: selective for c units, N+1..2N: full for c - N).
  auto planAt = [&](int64_t c) {
    return c <= numUnits ? RematPlan{"selective", c} : RematPlan{"full", c - numUnits};
  };
  auto describe = [&](const RematPlan &plan) {
    if (plan.units >= numUnits)
      return plan.mode;
    return plan.mode + " for the first " + std::to_string(plan.units) + " of " +
           std::to_string(numUnits) + " units, " + (plan.mode == "full" ? "selective" : "none") +
           " for the rest";
  };
  int64_t lo = 0, hi = 2 * numUnits; // lo does not fit, hi does
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (int rc = compilePlan(planAt(mid), peak, nullptr))
      return rc;
    if (peak <= opts.gpuMemoryBytes) {
      hi = mid;
      compiler.keepLast();
    } else {
      lo = mid;
    }
  }
  return chose(describe(planAt(hi)));
}

} // namespace shardc
