//===- Bundle.h - write a compiled bundle directory -------------------------------------===//
//
// A bundle is a directory: program.pb (the Bundle message), weights.bin (the WEIGHTS region
// of every rank, absent for planning-only bundles), plan.txt (the human-readable plan),
// plan.json (the same plan, machine-readable; docs/plan-format.md) and, for training
// bundles, source.onnx (the input model without its trained parameters' values,
// the template of `shardrun --export-onnx`).
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_BUNDLE_H
#define SHARDC_LOWERING_BUNDLE_H

#include "runtime/program/program.pb.h"

#include <string>
#include <vector>

namespace shardc {

inline constexpr const char *kProgramFileName = "program.pb";
inline constexpr const char *kWeightsFileName = "weights.bin";
inline constexpr const char *kPlanFileName = "plan.txt";
inline constexpr const char *kPlanJsonFileName = "plan.json";
inline constexpr const char *kSourceOnnxFileName = "source.onnx";

// What the plan reports beyond the bundle itself: the driver's reasoning.
struct PlanNotes {
  // `--strategy auto`: which candidate was chosen and why the others were rejected, one line
  // each (printed as given, in order, under "Strategy decision").
  std::vector<std::string> strategyDecision;
  // With tensor parallelism: the layout's decisions, one line each (shardc-propagate-sharding's
  // graph.tp_layout): each parameter dimension class split on tp or kept whole and why, and
  // the sequence-parallel regions (printed under "Tensor-parallel layout").
  std::vector<std::string> layoutDecisions;
  // Training: the initializers kept frozen because they cannot be trained parameters,
  // "NAME: why" each (graph.not_trainable; printed under "Not trained").
  std::vector<std::string> notTrained;
  // Training: where the trained set comes from (the model's record, --trainable/--freeze, or
  // a guess), one line (printed under "Trained set").
  std::string trainedSetSource;
  bool trainedSetGuessed = false; // shardc warns on stderr
  // Training with --precision other than fp32: what it rounds, one line (printed after the
  // mode line as "precision: ...").
  std::string precision;
  // --precision bf16/fp16 with 16-bit storage: the ZeRO accounting is the mixed-precision one
  // (16-bit working copies, f32 master weights with the optimizer state), with gradients
  // reduced in `reducedGradientBytes` per element (4: f32, 2: --reduce-dtype bf16/fp16).
  bool mixedPrecision = false;
  uint64_t reducedGradientBytes = 4;
  // Training with --micro-batches K > 1: K, and what the loop does, one line (printed after
  // the mode line as "micro-batches: ...").
  int64_t microBatches = 1;
  std::string microBatchLoop;
  // Training with --remat: shardc-remat's report (graph.remat), a summary line then one per
  // unit (printed under "Recomputation").
  std::vector<std::string> remat;
  int64_t rematUnits = 0; // the units shardc-remat found (graph.remat_units)
};

// Readable description of the program(s) (plan.txt, and what `shardc --explain` prints): for
// several ranks the mesh and strategy, the parameters and their sharding, memory per rank, the
// ZeRO accounting and the communication of one step; then, per distinct program, its memory,
// inputs, outputs and the op list with the buffers each op reads and writes. A pure function
// of its arguments.
std::string formatPlan(const program::Bundle &bundle, const PlanNotes &notes = PlanNotes());

// The same plan as JSON (plan.json, "format_version": 1; schema in docs/plan-format.md),
// indented, ending with a newline.
std::string formatPlanJson(const program::Bundle &bundle, const PlanNotes &notes = PlanNotes());

// Writes the bundle into `dir` (created if needed); `weights` may be null for a planning-only
// bundle, `sourceOnnx` (the serialized source.onnx) null for a bundle without one; `notes`
// go into plan.txt and plan.json. Each file is written to a temporary name and renamed, so an
// interrupted run never leaves a half-written file behind. On failure returns false with a
// one-line `error`.
bool writeBundle(const std::string &dir, program::Bundle bundle, const std::vector<char> *weights,
                 const std::string *sourceOnnx, std::string &error,
                 const PlanNotes &notes = PlanNotes());

} // namespace shardc

#endif
