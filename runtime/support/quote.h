// Quoting names from files for one-line messages. Tensor names, op names and modes come from
// files that may be damaged; a newline or control byte in them must not break the "one error
// line" rule or garble the terminal.
#pragma once

#include <string>

namespace shardc::runtime {

// 'text' with \n, \t, \\, \' and other bytes outside printable ASCII written as escapes
// (\xNN), so the result is always one printable line.
std::string quoteForMessage(const std::string &text);

} // namespace shardc::runtime
