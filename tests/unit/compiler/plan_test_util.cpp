#include "tests/unit/compiler/plan_test_util.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

namespace shardc::testing {

const PlanParameter *findParameter(const PlanSummary &s, const std::string &name) {
  for (const PlanParameter &p : s.parameters)
    if (p.tensor.name == name)
      return &p;
  return nullptr;
}

::testing::AssertionResult parsePlanJson(const std::string &text, runtime::Json *out) {
  runtime::Status status = runtime::parseJson(text.data(), text.size(), out);
  if (!status.isOk())
    return ::testing::AssertionFailure() << status.message();
  return ::testing::AssertionSuccess();
}

void collectPlanJsonKeys(const runtime::Json &value, std::set<std::string> &keys) {
  if (value.is_object()) {
    for (const auto &member : value.items()) {
      keys.insert(member.key());
      if (member.key() != "by_group")
        collectPlanJsonKeys(member.value(), keys);
    }
  } else if (value.is_array()) {
    for (const runtime::Json &element : value)
      collectPlanJsonKeys(element, keys);
  }
}

uint64_t u64Of(const runtime::Json &v) {
  uint64_t out = 0;
  EXPECT_TRUE(runtime::asUint64(v, &out)) << v.dump();
  return out;
}

std::set<std::string> documentedPlanJsonKeys() {
  std::ifstream docs(std::string(SHARDC_SOURCE_DIR) + "/docs/plan-format.md");
  std::stringstream buffer;
  buffer << docs.rdbuf();
  std::string doc = buffer.str();
  std::set<std::string> documented;
  size_t begin = doc.find("## plan.json");
  if (begin == std::string::npos)
    return documented;
  size_t end = doc.find("\n## ", begin + 1);
  std::string section =
      doc.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  std::regex row(R"(\n\| `([a-z0-9_]+)` \|)");
  for (std::sregex_iterator it(section.begin(), section.end(), row), last; it != last; ++it)
    documented.insert((*it)[1].str());
  return documented;
}

} // namespace shardc::testing
