// Error reporting inside the runtime: no exceptions cross runtime APIs, every fallible call
// returns a Status whose message says what went wrong (callers prepend rank and op).
#pragma once

#include <string>
#include <utility>

namespace shardc::runtime {

class [[nodiscard]] Status {
public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.message_ = std::move(message);
    s.failed_ = true;
    return s;
  }
  bool isOk() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  const std::string &message() const { return message_; }

private:
  std::string message_;
  bool failed_ = false;
};

// Propagates a failed Status to the caller.
#define SHARDC_RETURN_IF_ERROR(expr)                                                               \
  do {                                                                                             \
    ::shardc::runtime::Status _shardc_status = (expr);                                             \
    if (!_shardc_status.isOk())                                                                    \
      return _shardc_status;                                                                       \
  } while (0)

} // namespace shardc::runtime
