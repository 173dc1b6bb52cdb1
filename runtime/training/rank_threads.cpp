#include "runtime/training/rank_threads.h"

#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

namespace shardc::runtime {

namespace {

// The first failure of the run, kept under a mutex because ranks fail concurrently.
class FirstFailure {
public:
  // Records the failure of `rank` unless one was recorded before, then aborts the rank's
  // communicator so that the other ranks stop (after recording: see the header).
  void fail(int rank, const std::string &cause, Communicator *comm) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failed_) {
        failed_ = true;
        // Collective errors already start with the rank ("rank 1: all_gather #3: ...").
        const std::string prefix = "rank " + std::to_string(rank) + ": ";
        status_ = Status::error(cause.rfind(prefix, 0) == 0 ? cause : prefix + cause);
      }
    }
    if (comm != nullptr)
      comm->abort(cause);
  }

  Status status() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return status_;
  }

private:
  mutable std::mutex mutex_;
  bool failed_ = false;
  Status status_;
};

void runRank(int rank, Communicator *comm, const std::function<Status(int)> &body,
             FirstFailure *failure) {
  // Exceptions must not leave the thread (std::terminate); they fail the rank like any error.
  std::string cause;
  try {
    Status status = body(rank);
    if (status.isOk())
      return;
    cause = status.message();
  } catch (const std::exception &e) {
    cause = std::string("internal error: ") + e.what();
  } catch (...) {
    cause = "internal error: unknown exception";
  }
  failure->fail(rank, cause, comm);
}

} // namespace

Status runRankThreads(const std::vector<Communicator *> &comms,
                      const std::function<Status(int rank)> &body) {
  FirstFailure failure;
  std::vector<std::thread> threads;
  threads.reserve(comms.size());
  for (size_t r = 0; r < comms.size(); ++r) {
    const int rank = static_cast<int>(r);
    try {
      threads.emplace_back(runRank, rank, comms[r], std::cref(body), &failure);
    } catch (const std::system_error &e) {
      // The ranks already started would wait for this one: the abort releases them.
      failure.fail(rank, std::string("cannot start the rank's thread: ") + e.what(), comms[r]);
      break;
    }
  }
  for (std::thread &thread : threads)
    thread.join();
  return failure.status();
}

} // namespace shardc::runtime
