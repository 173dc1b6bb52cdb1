// Pipeline stages each hold their own layers' parameters and optimizer state. A checkpoint (or
// --outputs, or --export-onnx) needs all of them on the rank that writes: after each stage has
// gathered its shards (over dp and tp), the first replica of every stage sends its tensors to
// the first stage along the pp axis, one message per stage, which adds them to its own.
#pragma once

#include "runtime/checkpoint/checkpoint.h"
#include "runtime/comm/communicator.h"
#include "runtime/support/status.h"

#include "runtime/program/program.pb.h"

namespace shardc::runtime {

// The program's coordinate on its "pp" mesh axis and that axis's size ({0, 1} without one).
struct PipelinePlace {
  int axis = -1;
  int stage = 0;
  int stages = 1;
};
PipelinePlace pipelinePlaceOf(const program::Program &program);

// A collective over `pp` (the communicator of this rank's ranks along the pp axis), joined by
// the ranks whose coordinate on every other axis is 0 (`first`); others return at once. On the
// first stage, `contents` gains every other stage's tensors (a name two stages hold, a tied
// weight, keeps the first stage's value).
Status gatherStages(Communicator *pp, const program::Program &program, CheckpointContents *contents);

} // namespace shardc::runtime
