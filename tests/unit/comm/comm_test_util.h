// Helpers for tests that run the ranks of a local world as threads: one body per rank, every
// rank's Status collected, and the time the slowest took.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/comm/local/local_comm.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace shardc::runtime::testing {

// A local world of `size` ranks (fails the test when it cannot be made).
inline std::vector<std::unique_ptr<Communicator>> makeLocalWorld(int size,
                                                                 double timeoutSeconds = 30.0) {
  std::vector<std::unique_ptr<Communicator>> comms;
  CommOptions options;
  options.timeoutSeconds = timeoutSeconds;
  Status status = createLocalWorld(size, options, &comms);
  EXPECT_TRUE(status.isOk()) << status.message();
  return comms;
}

// Runs body(rank, comm) on one thread per rank and returns every rank's Status, in rank order.
inline std::vector<Status>
runRanks(const std::vector<std::unique_ptr<Communicator>> &comms,
         const std::function<Status(int rank, Communicator &comm)> &body) {
  std::vector<Status> results(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r)
    threads.emplace_back([&, r] { results[r] = body(static_cast<int>(r), *comms[r]); });
  for (std::thread &t : threads)
    t.join();
  return results;
}

inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Deterministic test data for rank `rank`: floats in [-1, 1] with varied exponents, so that
// the summation order shows in the last bits.
inline std::vector<float> rankData(int rank, size_t count, unsigned salt = 0) {
  std::mt19937 gen(1000003u * static_cast<unsigned>(rank) + 7919u * salt + 17u);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-6, 0);
  std::vector<float> v(count);
  for (float &x : v)
    x = std::ldexp(mantissa(gen), exponent(gen));
  return v;
}

inline bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

} // namespace shardc::runtime::testing
