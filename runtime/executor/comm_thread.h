// A rank's communication thread: runs the program's collectives one after another, in the
// order the rank's own thread issues them, while that thread goes on with the ops up to each
// asynchronous one's completion point (Op.completes_before; it waits for the others at once).
// Every rank issues its collectives in program order and one thread runs all of them in that
// order, so the ranks' collectives pair up exactly as when they run inline: a communicator is
// never used from two threads at once, and a pool of threads could reorder them.
#pragma once

#include "runtime/support/status.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace shardc::runtime {

class CommThread {
public:
  // Runs `run(op)` for each issued op on the thread. At most `capacity` ops are outstanding
  // at once (the number of asynchronous collectives of one run): issuing is then never blocked
  // and never allocates.
  CommThread(size_t capacity, std::function<Status(int op)> run);
  // Waits for the issued ops (a collective waits at most its communicator's timeout), then
  // ends the thread.
  ~CommThread();
  CommThread(const CommThread &) = delete;
  CommThread &operator=(const CommThread &) = delete;

  // Queues `op`; returns its ticket, which waitFor takes.
  uint64_t issue(int op);
  // Blocks until the op of `ticket` (and every op issued before it) has run. After an op
  // failed, the later ones are not run: the first failure is returned, its op in *failedOp.
  Status waitFor(uint64_t ticket, int *failedOp);
  // Waits for every issued op, as waitFor does for the last one.
  Status drain(int *failedOp);
  // Forgets a failure (the run that saw it is over); call after drain.
  void clearFailure();

private:
  void loop();

  std::function<Status(int)> run_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int> ring_; // the queued ops, ring_[ticket % size]
  uint64_t issued_ = 0;   // tickets handed out: the next one is issued_
  uint64_t done_ = 0;     // ops finished (run, or skipped after a failure)
  bool stopping_ = false;
  Status failure_ = Status::ok();
  int failedOp_ = -1;
  std::thread thread_; // last: started once everything above exists
};

} // namespace shardc::runtime
