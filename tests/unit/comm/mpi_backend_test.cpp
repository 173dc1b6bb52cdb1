// The mpi backend under a real mpirun (4 processes, oversubscribed on small machines): results
// bit-identical with the local backend, and a job whose rank dies, goes silent or aborts ends
// well within a minute with an error naming that rank.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#ifndef SHARDC_MPIEXEC
#error "SHARDC_MPIEXEC must name mpirun"
#endif
#ifndef SHARDC_COMM_MPI_WORKER
#error "SHARDC_COMM_MPI_WORKER must name the comm_mpi_worker binary"
#endif

namespace {

struct JobResult {
  int exitCode = -1; // -1: killed by a signal or by the timeout
  bool timedOut = false;
  double seconds = 0;
  std::string output; // stdout and stderr together
};

// Runs `args` with stdout and stderr captured; kills its whole process group after `limit`.
JobResult runWithTimeout(const std::vector<std::string> &args, double limit) {
  JobResult run;
  int pipeFds[2];
  if (pipe(pipeFds) != 0) {
    run.output = "pipe failed";
    return run;
  }
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(pipeFds[1], 1);
    dup2(pipeFds[1], 2);
    close(pipeFds[0]);
    close(pipeFds[1]);
    // Tests often run as root in containers, which Open MPI refuses unless told.
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    std::vector<char *> argv;
    for (const std::string &a : args)
      argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(pipeFds[1]);
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  char buffer[4096];
  for (;;) {
    pollfd fd{pipeFds[0], POLLIN, 0};
    const int ready = poll(&fd, 1, 100);
    if (ready > 0) {
      const ssize_t n = read(pipeFds[0], buffer, sizeof(buffer));
      if (n <= 0)
        break;
      run.output.append(buffer, static_cast<size_t>(n));
    }
    if (elapsed() > limit) {
      run.timedOut = true;
      kill(-pid, SIGKILL);
      break;
    }
  }
  close(pipeFds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  run.seconds = elapsed();
  run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

JobResult mpirun(const std::vector<std::string> &workerArgs, double limit = 90) {
  std::vector<std::string> args = {SHARDC_MPIEXEC, "-np", "4", "--oversubscribe",
                                   SHARDC_COMM_MPI_WORKER};
  args.insert(args.end(), workerArgs.begin(), workerArgs.end());
  return runWithTimeout(args, limit);
}

bool contains(const std::string &text, const std::string &fragment) {
  return text.find(fragment) != std::string::npos;
}

TEST(MpiBackend, MatchesTheLocalBackendBitForBit) {
  const JobResult run = mpirun({"compare"});
  ASSERT_FALSE(run.timedOut) << run.output;
  EXPECT_EQ(run.exitCode, 0) << run.output;
  for (int r = 0; r < 4; ++r)
    EXPECT_TRUE(contains(run.output, "rank " + std::to_string(r) +
                                         ": 29 collectives and transfers bit-identical with the "
                                         "local backend"))
        << run.output;
}

// Groups of a 2 x 2 mesh split from MPI_COMM_WORLD give the local backend's groups' bits.
TEST(MpiBackend, GroupsMatchTheLocalBackendBitForBit) {
  const JobResult run = mpirun({"groups"});
  ASSERT_FALSE(run.timedOut) << run.output;
  EXPECT_EQ(run.exitCode, 0) << run.output;
  for (int r = 0; r < 4; ++r)
    EXPECT_TRUE(contains(run.output, "rank " + std::to_string(r) +
                                         ": 58 group collectives and transfers bit-identical "
                                         "with the local backend"))
        << run.output;
}

// Rank 3 never joins its tp group's all-reduce: rank 2, its partner, times out naming it (by
// its world rank) and the group.
TEST(MpiBackend, ASilentGroupMemberIsATimeoutNamingIt) {
  const JobResult run = mpirun({"groupsilent", "3"});
  EXPECT_FALSE(run.timedOut) << run.output;
  EXPECT_LT(run.seconds, 60.0) << run.output;
  EXPECT_NE(run.exitCode, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "rank 2: all_reduce #1 in group 'tp' (ranks 2, 3): timed out "
                                   "after 2 s waiting for rank 3"))
      << run.output;
}

// A chain of point-to-point transfers (pipeline stages) in which rank 2 never takes part: the
// rank receiving from it times out naming it. (The rank sending to it may finish: MPI buffers
// a small message without its receiver.)
TEST(MpiBackend, ASilentPipelinePeerIsATimeoutNamingIt) {
  const JobResult run = mpirun({"transfersilent", "2"});
  EXPECT_FALSE(run.timedOut) << run.output;
  EXPECT_LT(run.seconds, 60.0) << run.output;
  EXPECT_NE(run.exitCode, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "rank 3: send_recv #1: timed out after 2 s waiting for rank 2"))
      << run.output;
}

TEST(MpiBackend, ADeadRankEndsTheJobNamingIt) {
  const JobResult run = mpirun({"kill", "1"});
  EXPECT_FALSE(run.timedOut) << run.output;
  EXPECT_LT(run.seconds, 60.0) << run.output;
  EXPECT_NE(run.exitCode, 0) << run.output;
  // Either mpirun noticed the death ("process rank 1 ... exited on signal 9") or a peer's
  // collective timed out waiting for rank 1.
  EXPECT_TRUE(contains(run.output, "rank 1")) << run.output;
  EXPECT_FALSE(contains(run.output, "the all-reduce succeeded")) << run.output;
}

TEST(MpiBackend, ASilentRankIsATimeoutNamingIt) {
  const JobResult run = mpirun({"silent", "3"});
  EXPECT_FALSE(run.timedOut) << run.output;
  EXPECT_LT(run.seconds, 60.0) << run.output;
  EXPECT_NE(run.exitCode, 0) << run.output;
  // Rank 0 receives from rank 3 in the ring.
  EXPECT_TRUE(contains(run.output, "rank 0: all_reduce #1: timed out after 2 s waiting for rank 3"))
      << run.output;
}

TEST(MpiBackend, AbortEndsEveryRank) {
  const JobResult run = mpirun({"abort", "2"});
  EXPECT_FALSE(run.timedOut) << run.output;
  EXPECT_LT(run.seconds, 30.0) << run.output;
  EXPECT_NE(run.exitCode, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "rank 2 failed: injected failure")) << run.output;
  EXPECT_FALSE(contains(run.output, "the all-reduce succeeded")) << run.output;
}

} // namespace
