//===- PlanReport.h - plan.txt and plan.json --------------------------------------------===//
//
// The plan of a compiled bundle, as text (plan.txt) and as JSON (plan.json); both render
// PlanSummary (PlanSummary.h). docs/plan-format.md describes them.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PLAN_PLANREPORT_H
#define SHARDC_PLAN_PLANREPORT_H

#include "shardc/Plan/PlanNotes.h"

#include "runtime/program/program.pb.h"

#include <string>

namespace shardc {

// Readable description of the program(s) (plan.txt, and what `shardc --explain` prints): for
// several ranks the mesh and strategy, the parameters and their sharding, memory per rank, the
// ZeRO accounting and the communication of one step; then, per distinct program, its memory,
// inputs, outputs and the op list with the buffers each op reads and writes. A pure function
// of its arguments.
std::string formatPlan(const program::Bundle &bundle, const PlanNotes &notes = PlanNotes());

// The same plan as JSON (plan.json, "format_version": 1; schema in docs/plan-format.md),
// indented, ending with a newline.
std::string formatPlanJson(const program::Bundle &bundle, const PlanNotes &notes = PlanNotes());
// plan.json's "prediction" object (PlanNotes::Prediction) as JSON text.
std::string formatPredictionJson(const PlanNotes::Prediction &prediction);

} // namespace shardc

#endif
