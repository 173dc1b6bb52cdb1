// What every fuzz target checks of an error besides not crashing: errors reach users as one
// line ("PATH: what is wrong"), so a message that a crafted value can break over several lines
// is a bug like a crash.
#pragma once

#include "runtime/support/status.h"

#include <cstdio>
#include <cstdlib>
#include <string>

inline void requireOneLine(const shardc::runtime::Status &status) {
  if (status.isOk() || status.message().find('\n') == std::string::npos)
    return;
  std::fprintf(stderr, "error message of more than one line:\n%s\n", status.message().c_str());
  std::abort();
}
