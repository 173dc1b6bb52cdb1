// What the plan report tests share: lookups in a plan's summary and plan.json, and the keys
// docs/plan-format.md documents for plan.json.
#pragma once

#include "shardc/Plan/PlanSummary.h"

#include "runtime/support/strict_json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>

namespace shardc::testing {

// The parameter named `name` in the summary, or null.
const PlanParameter *findParameter(const PlanSummary &s, const std::string &name);

// plan.json's text, parsed as the runtime parses JSON, into `out`; the parse error on failure.
::testing::AssertionResult parsePlanJson(const std::string &text, runtime::Json *out);

// Every object key anywhere in `value`, except those of communication.by_group, whose keys are
// the names of groups.
void collectPlanJsonKeys(const runtime::Json &value, std::set<std::string> &keys);

// The value as an unsigned integer; a test failure (and 0) when it is not one.
uint64_t u64Of(const runtime::Json &v);

// The keys docs/plan-format.md lists for plan.json: the backquoted first cell of each row of
// the key tables in its "## plan.json" section (empty when the file or section is missing).
std::set<std::string> documentedPlanJsonKeys();

} // namespace shardc::testing
