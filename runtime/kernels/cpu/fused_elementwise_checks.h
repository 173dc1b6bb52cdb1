// The contract of `fused_elementwise` (docs/kernels.md), checked once for both devices: the
// operands' dtypes and shapes, and the steps ('steps', 'args') and output slots ('results') decoded
// and range-checked, so that the kernels index nothing they have not validated. Reads only
// shapes, dtypes and attributes, never the data.
#pragma once

#include "runtime/kernels/fused_elementwise_code.h"
#include "runtime/kernels/kernel.h"

#include <cstdint>
#include <vector>

namespace shardc::runtime::cpu {

// One step: slot N + i = op(slot a, slot b); b is -1 for a unary op.
struct FusedStep {
  FusedOp op = FusedOp::Neg;
  int64_t a = 0, b = -1;
};

struct FusedProgram {
  int64_t numInputs = 0;        // N: slots 0 .. N-1 are the inputs, widened to f32
  std::vector<FusedStep> steps; // step i writes slot N + i
  std::vector<int64_t> results; // the slot each output stores
};

// Checks a fused_elementwise call: N >= 1 inputs and M >= 1 outputs, each f32, bf16 or f16;
// every output of one shape, every input broadcast unidirectionally to it; 'steps' the names of
// at most kMaxFusedInstructions steps, 'args' 2 slots per step, each an earlier one; 'results' one
// existing slot per output. Decodes them into *program.
Status checkFusedElementwise(const KernelArgs &args, FusedProgram *program);

// A row-major walk of the output reading some of the inputs broadcast: dims (never empty) and,
// per input, an element stride per dim (0 where it is broadcast). Dims of size 1 are dropped
// and adjacent dims that every input walks contiguously are merged. The shapes must already
// broadcast to `outShape` (checkFusedElementwise).
struct FusedWalk {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides; // [input][dim]
};
FusedWalk planFusedWalk(const std::vector<const std::vector<int64_t> *> &inputs,
                        const std::vector<int64_t> &outShape);

} // namespace shardc::runtime::cpu
