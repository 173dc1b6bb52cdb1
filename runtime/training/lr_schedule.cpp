#include "runtime/training/lr_schedule.h"

#include <cmath>

namespace shardc::runtime {

double LrSchedule::at(int64_t step) const {
  if (warmupSteps > 0 && step < warmupSteps)
    return lr * static_cast<double>(step) / static_cast<double>(warmupSteps);
  if (kind == LrScheduleKind::Constant || totalSteps <= warmupSteps)
    return lr;
  if (step >= totalSteps)
    return minLr;
  const double pi = std::acos(-1.0);
  double ratio =
      static_cast<double>(step - warmupSteps) / static_cast<double>(totalSteps - warmupSteps);
  double coeff = 0.5 * (1.0 + std::cos(pi * ratio));
  return minLr + coeff * (lr - minLr);
}

Status parseLrScheduleKind(const std::string &text, LrScheduleKind *out) {
  if (text == "constant") {
    *out = LrScheduleKind::Constant;
    return Status::ok();
  }
  if (text == "cosine") {
    *out = LrScheduleKind::Cosine;
    return Status::ok();
  }
  return Status::error("unknown schedule '" + text + "' (expected constant or cosine)");
}

} // namespace shardc::runtime
