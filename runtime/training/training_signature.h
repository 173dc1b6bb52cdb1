// The roles of a training-step program's inputs and outputs, derived from the program alone.
//
// A training step (shardc --mode train) takes
//   * trained parameters: the input bindings named by Program.state_init,
//   * optimizer state: inputs named <param>.exp_avg, <param>.exp_avg_sq (AdamW) or
//     <param>.momentum_buffer (SGD) for a trained <param>,
//   * "step" (i64 scalar, steps done so far) and "lr" (f32 scalar),
//   * "seed" (i64 scalar, the run's seed), only when the model has training-mode dropout,
//   * batch inputs: every other input binding, in program order,
// and returns "loss" (f32 scalar) plus the updated parameters, optimizer state and step under
// the same names as the inputs. The loop feeds those outputs back as the next step's inputs.
//
// In a program of one of several data-parallel ranks, parameters and optimizer state may be
// sharded (Binding.sharding; the output carries the same sharding as the input), and the batch
// inputs hold the rank's rows of the global batch (Program.batch_begin, batch_rows,
// global_batch_rows; every batch input's dim 0 is batch_rows).
#pragma once

#include "runtime/data/npy_batches.h"
#include "runtime/program/program.pb.h"
#include "runtime/support/status.h"

#include <string>
#include <vector>

namespace shardc::runtime {

constexpr const char *kStepInputName = "step";
constexpr const char *kLrInputName = "lr";
constexpr const char *kSeedInputName = "seed";
constexpr const char *kLossOutputName = "loss";
// Dynamic loss scaling's outputs (--precision fp16): the step's scale and 1 when its gradients
// overflowed (the update skipped), f32 scalars; metrics report them.
constexpr const char *kLossScaleOutputName = "loss_scale";
constexpr const char *kLossScaleOverflowOutputName = "loss_scale_overflow";

struct TrainingSignature {
  std::vector<std::string> params;          // state_init order
  // Optimizer state, and dynamic loss scaling's loss_scale.* scalars; program input order.
  std::vector<std::string> optimizerState;
  std::vector<GraphInputSpec> batchInputs;  // program input order
  bool hasSeed = false;                     // the step takes the run's seed
  BatchSlice batchSlice;                    // the rank's rows of each global batch
};

// Classifies `program`'s inputs as above and checks the loop can drive it: state_init is not
// empty, "step" is an i64 scalar input and "lr" an f32 scalar input, "loss" an f32 scalar output,
// and every parameter, optimizer state and "step" is also an output of the same dtype and shape.
// Messages describe the program ("training program: no output 'loss'"); the caller prepends
// the bundle.
Status deriveTrainingSignature(const program::Program &program, TrainingSignature *out);

} // namespace shardc::runtime
