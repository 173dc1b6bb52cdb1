#include "tools/shardrun/stop_signals.h"

#include <atomic>
#include <csignal>
#include <cstdio>

namespace shardrun {

namespace {

// Lock-free, so the handler may set it (C++17 [support.signal]).
std::atomic<int> requested{0};
static_assert(std::atomic<int>::is_always_lock_free);

constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGUSR1};

void onStopSignal(int signal) {
  int none = 0;
  if (requested.compare_exchange_strong(none, signal))
    return; // the first: the loop stops after its step and saves
  // The second: what the signal does without a handler (ends the process), at once.
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

} // namespace

void installStopSignalHandlers() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true))
    return;
  struct sigaction action = {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: a blocking read or wait the signal interrupts resumes (the loop looks at the
  // request between steps, not in the middle of one).
  action.sa_flags = SA_RESTART;
  for (int signal : kStopSignals)
    sigaction(signal, &action, nullptr);
}

int requestedStopSignal() { return requested.load(std::memory_order_relaxed); }

const char *stopSignalName(int signal) {
  switch (signal) {
  case SIGTERM:
    return "SIGTERM";
  case SIGINT:
    return "SIGINT";
  case SIGUSR1:
    return "SIGUSR1";
  }
  static thread_local char text[32];
  std::snprintf(text, sizeof text, "signal %d", signal);
  return text;
}

} // namespace shardrun
