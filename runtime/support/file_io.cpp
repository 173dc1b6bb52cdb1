#include "runtime/support/file_io.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <functional>
#include <sys/stat.h>
#include <unistd.h>

namespace shardc::runtime {

namespace {

Status ioError(const std::string &path, const char *action, int err) {
  return Status::error(path + ": " + action + ": " + std::strerror(err));
}

// Closes the descriptor on every return path.
class FdCloser {
public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  // Closes now and reports the error, for writes where close() can surface a failed flush.
  int closeNow() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

private:
  int fd_;
};

// Opens `path` for reading and checks that it is a regular file; returns the descriptor.
// `extraFlags` may add O_NOFOLLOW: a symbolic link at `path` is then refused.
Status openRegularFile(const std::string &path, int *fd, uint64_t *size, int extraFlags = 0) {
  // O_NONBLOCK: opening a named pipe must not wait for a writer (fstat then refuses it);
  // reads of a regular file ignore the flag.
  do {
    *fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | extraFlags);
  } while (*fd < 0 && errno == EINTR);
  if (*fd < 0 && errno == ELOOP && (extraFlags & O_NOFOLLOW))
    return Status::error(path + ": is a symbolic link; refusing to follow it");
  if (*fd < 0)
    return ioError(path, "cannot open", errno);
  struct stat st;
  Status status;
  if (::fstat(*fd, &st) != 0)
    status = ioError(path, "cannot stat", errno);
  else if (S_ISDIR(st.st_mode))
    status = Status::error(path + ": is a directory, expected a file");
  else if (!S_ISREG(st.st_mode))
    status = Status::error(path + ": not a regular file (a pipe, device or socket)");
  if (!status.isOk()) {
    ::close(*fd);
    *fd = -1;
    return status;
  }
  *size = static_cast<uint64_t>(st.st_size);
  return Status::ok();
}

// Reads exactly `size` bytes at `offset` of the open file `fd` (named `path` in errors).
Status readExactly(int fd, const std::string &path, uint64_t offset, uint64_t size,
                   uint8_t *dst) {
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, dst + done, static_cast<size_t>(size - done),
                        static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return ioError(path, "cannot read", errno);
    }
    if (n == 0)
      return Status::error(path + ": file shrank while being read");
    done += static_cast<uint64_t>(n);
  }
  return Status::ok();
}

// Reads the file into memory obtained from `allocate(size)`, which returns nullptr (after
// filling `allocStatus`) when it cannot provide that memory.
Status readFileWith(const std::string &path,
                    const std::function<uint8_t *(size_t, Status *)> &allocate,
                    int extraFlags = 0) {
  int fd = -1;
  uint64_t size = 0;
  SHARDC_RETURN_IF_ERROR(openRegularFile(path, &fd, &size, extraFlags));
  FdCloser closer(fd);
  Status allocStatus;
  uint8_t *dst = allocate(static_cast<size_t>(size), &allocStatus);
  if (dst == nullptr)
    return Status::error(path + ": " + allocStatus.message());
  return readExactly(fd, path, 0, size, dst);
}

// What a file of mode `mode` is, for the message refusing to replace it.
const char *fileKindName(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISLNK(mode))
    return "a symbolic link";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a named pipe";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

// Makes what was renamed into `path`'s directory survive a power loss: the directory entry is
// only durable once the directory itself is synced. File systems that cannot sync a directory
// (EINVAL) hold their entries some other way.
Status syncParentDirectory(const std::string &path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty())
    dir = ".";
  int fd;
  do {
    fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return ioError(path, "cannot sync its directory", errno);
  FdCloser closer(fd);
  if (::fsync(fd) != 0 && errno != EINVAL)
    return ioError(path, "cannot sync its directory", errno);
  return Status::ok();
}

} // namespace

Status checkRegularFileDestination(const std::string &path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return Status::ok(); // nothing there yet (or unreachable: the write reports why)
  if (S_ISREG(st.st_mode))
    return Status::ok();
  return Status::error(path + ": exists and is " + fileKindName(st.st_mode) +
                       "; only a regular file is ever replaced by a write");
}

// Reads into `out`, resized to the file's size.
static Status readFileIntoVector(const std::string &path, std::vector<uint8_t> *out, int extraFlags) {
  return readFileWith(
      path,
      [out](size_t size, Status *) {
        out->resize(size);
        // A non-null pointer even for an empty file: nullptr means "allocation failed".
        static uint8_t emptyFile;
        return size == 0 ? &emptyFile : out->data();
      },
      extraFlags);
}

Status readFile(const std::string &path, std::vector<uint8_t> *out) {
  return readFileIntoVector(path, out, 0);
}

Status readFileNoFollow(const std::string &path, std::vector<uint8_t> *out) {
  return readFileIntoVector(path, out, O_NOFOLLOW);
}

Status readFile(const std::string &path, AlignedBuffer *out) {
  return readFileWith(path, [out](size_t size, Status *status) -> uint8_t * {
    *status = AlignedBuffer::allocate(size, "file contents", out);
    return status->isOk() ? out->data() : nullptr;
  });
}

Status writeFileAtomically(const std::string &path, const void *data, size_t size) {
  return writeFileAtomically(path, std::vector<ByteSpan>{{data, size}});
}

Status writeFileAtomically(const std::string &path, const std::vector<ByteSpan> &pieces) {
  // The rename below replaces whatever is at `path`: a device node or a pipe must never be.
  SHARDC_RETURN_IF_ERROR(checkRegularFileDestination(path));
  // Unique per process and call, so concurrent writers (ranks as threads) never share a temp.
  static std::atomic<unsigned> counter{0};
  std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  int fd;
  // O_EXCL with O_NOFOLLOW: a link planted under the temporary name is never written through.
  do {
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return ioError(path, "cannot create", errno);
  FdCloser closer(fd);

  for (const ByteSpan &piece : pieces) {
    const auto *src = static_cast<const uint8_t *>(piece.data);
    size_t done = 0;
    while (done < piece.size) {
      ssize_t n = ::write(fd, src + done, piece.size - done);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        int err = errno;
        ::unlink(tmp.c_str());
        return ioError(path, "cannot write", err);
      }
      done += static_cast<size_t>(n);
    }
  }
  // The data reaches the disk before the name does (the atomic-rename recipe): after a power
  // loss `path` holds the old content or the whole new one, and a manifest written after its
  // data files never names bytes that were not written.
  if (::fsync(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ioError(path, "cannot write (fsync)", err);
  }
  if (closer.closeNow() != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ioError(path, "cannot write", err);
  }
  // Checked again just before the rename: something may have appeared there meanwhile.
  if (Status status = checkRegularFileDestination(path); !status.isOk()) {
    ::unlink(tmp.c_str());
    return status;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ioError(path, "cannot write", err);
  }
  return syncParentDirectory(path);
}


Status regularFileSize(const std::string &path, uint64_t *size) {
  int fd = -1;
  SHARDC_RETURN_IF_ERROR(openRegularFile(path, &fd, size));
  ::close(fd);
  return Status::ok();
}

Status readFileRange(const std::string &path, uint64_t offset, uint64_t size, uint8_t *dst) {
  int fd = -1;
  uint64_t fileSize = 0;
  SHARDC_RETURN_IF_ERROR(openRegularFile(path, &fd, &fileSize));
  FdCloser closer(fd);
  return readExactly(fd, path, offset, size, dst);
}

bool pathExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 || errno != ENOENT;
}

Status prepareOutputDirectory(const std::string &dir) {
  if (dir.empty())
    return Status::error("an empty directory name");
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    return Status::error(dir + ": is a file, not a directory");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::error(dir + ": cannot create the directory: " + ec.message());
  const std::string probe = dir + "/.shardc-write-probe-" + std::to_string(::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return Status::error(dir + ": cannot write into the directory: " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::ok();
}

} // namespace shardc::runtime
