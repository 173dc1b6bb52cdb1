#include "runtime/checkpoint/checkpoint_lock.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace shardc::runtime {

Status CheckpointDirLock::acquire(const std::string &dir, std::unique_ptr<CheckpointDirLock> *out) {
  const std::string path = dir + "/" + kCheckpointLockName;
  // O_NOFOLLOW: a link planted under the lock's name would have the pid written through it
  // into whatever it names; O_NONBLOCK: a named pipe there must not block the open.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ELOOP)
    return Status::error(dir + ": the lock file " + kCheckpointLockName +
                         " is a symbolic link; refusing to write through it");
  if (fd < 0)
    return Status::error(dir + ": cannot create the lock file " + kCheckpointLockName + ": " +
                         std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(dir + ": the lock file " + kCheckpointLockName +
                         " is not a regular file; refusing to use it");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int cause = errno;
    char holder[32] = {};
    ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    std::string pid = n > 0 ? std::string(holder, static_cast<size_t>(n)) : "";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' '))
      pid.pop_back();
    if (cause == EWOULDBLOCK)
      return Status::error(dir + ": another run is saving into this directory" +
                           (pid.empty() ? std::string() : " (pid " + pid + ")") +
                           "; one run writes a checkpoint directory at a time");
    return Status::error(dir + ": cannot lock " + kCheckpointLockName + ": " +
                         std::strerror(cause));
  }
  // The holder's pid, for the message of a run that finds the directory taken.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // Only the message of a second run loses the pid; the lock itself holds.
  }
  out->reset(new CheckpointDirLock(fd));
  return Status::ok();
}

CheckpointDirLock::~CheckpointDirLock() {
  // Closing releases the flock; the file stays (removing it would race with a run that opened
  // it and is about to lock it).
  ::close(fd_);
}

} // namespace shardc::runtime
