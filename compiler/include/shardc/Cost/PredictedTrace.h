//===- PredictedTrace.h - the cost model's timeline of one step, as a Chrome trace ------===//
//
// The chosen plan's step as the cost model sees it, for Perfetto beside `shardrun --trace`'s
// measured one: the schedule's steps (passes/pipeline/PipelineSchedule.h, the order the stage
// programs run) timed with the prediction's per-chunk forward and backward seconds, each step
// starting when its rank is free and its input has arrived (the transfers posted, as the
// runtime's communication thread sends them), then the data-parallel reduction overlapping
// the last backward pass and the optimizer's update. One process per rank of the pp axis:
// every tp and dp rank of it runs the same timeline. The bundle's predicted_trace.json.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_COST_PREDICTEDTRACE_H
#define SHARDC_COST_PREDICTEDTRACE_H

#include "shardc/Cost/CostModel.h"

#include <string>

namespace shardc::cost {

// The trace (JSON text), or false with `why` when the schedule cannot be laid out.
// `simulatedSeconds`: the timeline's end (the closed form of predictStep is the step's
// prediction; the two differ where the stages are uneven).
bool predictedTrace(const Candidate &candidate, const Prediction &prediction,
                    const std::string &clusterName, std::string &out, double &simulatedSeconds,
                    std::string &why);

} // namespace shardc::cost

#endif
