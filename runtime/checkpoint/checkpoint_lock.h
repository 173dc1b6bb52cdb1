// Ownership of a checkpoint directory for the length of a run: one writer at a time.
//
// A run that saves into DIR holds an exclusive advisory lock (flock) on DIR/.shardc-lock from
// its start to its end. A second run saving into DIR fails at its start, naming the process
// that holds it, instead of interleaving its saves with the first (two writers corrupt a
// checkpoint). The operating system drops the lock when the holder exits, however it exits
// (kill -9 included), so a stale lock file never blocks a later run.
#pragma once

#include "runtime/support/status.h"

#include <memory>
#include <string>

namespace shardc::runtime {

class CheckpointDirLock {
public:
  // Locks `dir` (which must exist); the error names the directory and the holder's pid.
  static Status acquire(const std::string &dir, std::unique_ptr<CheckpointDirLock> *out);
  ~CheckpointDirLock();
  CheckpointDirLock(const CheckpointDirLock &) = delete;
  CheckpointDirLock &operator=(const CheckpointDirLock &) = delete;

private:
  explicit CheckpointDirLock(int fd) : fd_(fd) {}
  int fd_;
};

constexpr const char *kCheckpointLockName = ".shardc-lock";

} // namespace shardc::runtime
