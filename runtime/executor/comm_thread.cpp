#include "runtime/executor/comm_thread.h"

#include <algorithm>

namespace shardc::runtime {

CommThread::CommThread(size_t capacity, std::function<Status(int op)> run)
    : run_(std::move(run)), ring_(std::max<size_t>(capacity, 1), -1),
      thread_([this] { loop(); }) {}

CommThread::~CommThread() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

uint64_t CommThread::issue(int op) {
  uint64_t ticket;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // More outstanding ops than the capacity would overwrite a queued one: wait for room
    // (never happens when the capacity is the number of asynchronous collectives of a run).
    changed_.wait(lock, [&] { return issued_ - done_ < ring_.size(); });
    ticket = issued_++;
    ring_[ticket % ring_.size()] = op;
  }
  changed_.notify_all();
  return ticket;
}

Status CommThread::waitFor(uint64_t ticket, int *failedOp) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return done_ > ticket; });
  *failedOp = failedOp_;
  return failure_;
}

Status CommThread::drain(int *failedOp) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return done_ == issued_; });
  *failedOp = failedOp_;
  return failure_;
}

void CommThread::clearFailure() {
  std::unique_lock<std::mutex> lock(mutex_);
  failure_ = Status::ok();
  failedOp_ = -1;
}

void CommThread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || done_ < issued_; });
    if (done_ == issued_)
      return; // stopping, nothing left
    const int op = ring_[done_ % ring_.size()];
    const bool skip = !failure_.isOk();
    lock.unlock();
    Status status = skip ? Status::ok() : run_(op);
    lock.lock();
    if (!status.isOk() && failure_.isOk()) {
      failure_ = std::move(status);
      failedOp_ = op;
    }
    ++done_;
    changed_.notify_all();
  }
}

} // namespace shardc::runtime
