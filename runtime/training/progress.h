// The live progress line of a training run on stderr:
//   step 120/1000  loss 4.1234  lr 1.00e-03  2345 samples/s  ETA 12s
// On a terminal the line is rewritten in place (carriage return) after every step; otherwise
// (a log file, a pipe) one line is printed every ~10% of the steps and at the last step, so logs
// stay short. Throughput and ETA use the steps run by this process (a resumed run does not
// count the steps before the checkpoint).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace shardc::runtime {

class ProgressLine {
public:
  // Steps firstStep+1 .. totalSteps will be reported; `itemName` is "samples" or "tokens".
  ProgressLine(std::FILE *out, bool isTerminal, int64_t firstStep, int64_t totalSteps,
               int64_t itemsPerStep, std::string itemName);

  // After step `step` finished, `elapsedSeconds` after the first step started.
  void update(int64_t step, float loss, float lr, double elapsedSeconds);
  // Ends an in-place line with a newline (terminal only).
  void finish();

  // The text of one report; exposed for tests.
  std::string format(int64_t step, float loss, float lr, double elapsedSeconds) const;

private:
  bool shouldPrint(int64_t step) const;

  std::FILE *out_;
  bool isTerminal_;
  int64_t firstStep_;
  int64_t totalSteps_;
  int64_t itemsPerStep_;
  std::string itemName_;
  size_t lastWidth_ = 0;
  bool pending_ = false; // an in-place line awaits its newline
};

} // namespace shardc::runtime
