//===- ParallelStrategy.cpp -------------------------------------------------------------===//
#include "shardc/Parallel/ParallelStrategy.h"

#include <cstdlib>
#include <map>
#include <sstream>

namespace shardc {

std::string ParallelStrategy::canonical() const {
  if (automatic)
    return "auto";
  std::string s = "dp=" + std::to_string(dp);
  if (tp != 1)
    s += ",tp=" + std::to_string(tp);
  if (sequenceParallel)
    s += ",sp=1";
  if (pp != 1)
    s += ",pp=" + std::to_string(pp);
  return s + ",zero=" + std::to_string(zero);
}

namespace {

bool parseCount(const std::string &text, int &out) {
  if (text.empty() || text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::atoi(text.c_str());
  return true;
}

} // namespace

std::optional<std::string> parseStrategy(const std::string &text, int gpus,
                                         ParallelStrategy &out) {
  out = ParallelStrategy();
  const std::string where = "--strategy '" + text + "': ";
  if (text == "auto") {
    out.automatic = true;
    out.dp = gpus;
    return std::nullopt;
  }
  if (text.rfind("auto,", 0) == 0) {
    // auto with some axes fixed (tp, pp, zero, sp): the cost model searches the rest.
    std::stringstream items(text.substr(5));
    std::string item;
    while (std::getline(items, item, ',')) {
      const size_t eq = item.find('=');
      int n = 0;
      if (eq == std::string::npos || eq == 0 || !parseCount(item.substr(eq + 1), n))
        return where + "'" + item + "' is not KEY=VALUE";
      const std::string key = item.substr(0, eq);
      if (key == "tp" && n >= 1)
        out.fixedTp = n;
      else if (key == "pp" && n >= 1)
        out.fixedPp = n;
      else if (key == "zero" && n <= 3)
        out.fixedZero = n;
      else if (key == "sp" && n <= 1)
        out.fixedSp = n;
      else
        return where + "auto fixes tp, pp (positive), zero (0-3) or sp (0 or 1); got '" + item +
               "'";
    }
    const int tp = out.fixedTp ? out.fixedTp : 1, pp = out.fixedPp ? out.fixedPp : 1;
    if (gpus % (tp * pp) != 0)
      return where + "tp=" + std::to_string(tp) + " x pp=" + std::to_string(pp) +
             " does not divide --gpus " + std::to_string(gpus);
    if (out.fixedSp == 1 && out.fixedTp == 1)
      return where + "sp=1 splits the sequence on the tp axis and needs tp of at least 2";
    out.automatic = true;
    out.dp = gpus;
    return std::nullopt;
  }
  static const std::map<std::string, int> shorthands = {
      {"dp", 0}, {"zero1", 1}, {"zero2", 2}, {"zero3", 3}, {"fsdp", 3}};
  if (auto it = shorthands.find(text); it != shorthands.end()) {
    out.dp = gpus;
    out.zero = it->second;
    return std::nullopt;
  }
  if (text == "tp" || text == "sp") { // every device on the tensor-parallel axis
    out.tp = gpus;
    out.sequenceParallel = text == "sp";
    return std::nullopt;
  }
  if (text.find('=') == std::string::npos)
    return where + "expected auto, dp, zero1, zero2, zero3, fsdp, tp, sp or KEY=VALUE,... "
                   "with keys dp, tp, sp, pp, zero";

  std::map<std::string, int> given;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return where + "'" + item + "' is not KEY=VALUE";
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key != "dp" && key != "tp" && key != "sp" && key != "pp" && key != "zero")
      return where + "unknown key '" + key + "' (keys: dp, tp, sp, pp, zero)";
    if (given.count(key))
      return where + "'" + key + "' given twice";
    int n = 0;
    if (key == "sp" && value != "0" && value != "1")
      return where + "sp=" + value + ": expected 1 (sequence parallelism on the tp axis) or 0";
    if (!parseCount(value, n) || (key != "zero" && key != "sp" && n < 1))
      return where + key + "=" + value + ": expected a " +
             (key == "zero" ? "stage 0-3" : "positive number of devices");
    if (key == "zero" && n > 3)
      return where + "zero=" + value + ": ZeRO stages are 0, 1, 2 and 3";
    given[key] = n;
  }
  out.tp = given.count("tp") ? given["tp"] : 1;
  out.pp = given.count("pp") ? given["pp"] : 1;
  out.zero = given.count("zero") ? given["zero"] : 0;
  out.sequenceParallel = given.count("sp") && given["sp"] == 1;
  if (given.count("dp"))
    out.dp = given["dp"];
  else if (gpus % (out.tp * out.pp) == 0)
    out.dp = gpus / (out.tp * out.pp);
  long long total = 1LL * out.dp * out.tp * out.pp;
  if (total != gpus)
    return where + "dp=" + std::to_string(out.dp) + " x tp=" + std::to_string(out.tp) +
           " x pp=" + std::to_string(out.pp) + " = " + std::to_string(total) +
           " devices, but --gpus is " + std::to_string(gpus);
  if (out.sequenceParallel && out.tp < 2)
    return where + "sp=1 splits the sequence on the tp axis and needs tp of at least 2";
  return std::nullopt;
}

} // namespace shardc
