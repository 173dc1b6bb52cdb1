#include "runtime/training/progress.h"

#include <algorithm>
#include <cmath>

namespace shardc::runtime {

ProgressLine::ProgressLine(std::FILE *out, bool isTerminal, int64_t firstStep, int64_t totalSteps,
                           int64_t itemsPerStep, std::string itemName)
    : out_(out), isTerminal_(isTerminal), firstStep_(firstStep), totalSteps_(totalSteps),
      itemsPerStep_(itemsPerStep), itemName_(std::move(itemName)) {}

std::string ProgressLine::format(int64_t step, float loss, float lr,
                                 double elapsedSeconds) const {
  int64_t done = step - firstStep_;
  double rate = elapsedSeconds > 0 ? static_cast<double>(done * itemsPerStep_) / elapsedSeconds : 0;
  double eta = done > 0 ? elapsedSeconds / static_cast<double>(done) *
                              static_cast<double>(totalSteps_ - step)
                        : 0;
  char text[256];
  std::snprintf(text, sizeof text, "step %lld/%lld  loss %.4f  lr %.2e  %.0f %s/s  ETA %.0fs",
                static_cast<long long>(step), static_cast<long long>(totalSteps_),
                static_cast<double>(loss), static_cast<double>(lr), rate, itemName_.c_str(),
                eta);
  return text;
}

bool ProgressLine::shouldPrint(int64_t step) const {
  if (isTerminal_ || step == totalSteps_)
    return true;
  int64_t every = std::max<int64_t>(1, totalSteps_ / 10);
  return step % every == 0;
}

void ProgressLine::update(int64_t step, float loss, float lr, double elapsedSeconds) {
  if (!shouldPrint(step))
    return;
  std::string line = format(step, loss, lr, elapsedSeconds);
  if (isTerminal_) {
    // Pad over the previous, possibly longer, line.
    size_t width = line.size();
    line.append(lastWidth_ > width ? lastWidth_ - width : 0, ' ');
    lastWidth_ = width;
    std::fprintf(out_, "\r%s", line.c_str());
    pending_ = true;
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

void ProgressLine::finish() {
  if (pending_)
    std::fputc('\n', out_);
  pending_ = false;
  std::fflush(out_);
}

} // namespace shardc::runtime
