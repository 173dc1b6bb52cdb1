// The program comm_mpi_tests runs under mpirun (one process per rank):
//   comm_mpi_worker compare       every collective on the mpi backend (f32, and bf16, f16 and raw
//                                 bytes) and point-to-point transfers (rendezvous and posted),
//                                 compared bit for bit
//                                 (results and counters) with a local world run in-process
//   comm_mpi_worker kill R        rank R dies (SIGKILL) before the first collective
//   comm_mpi_worker silent R      rank R never calls the collective (the others time out)
//   comm_mpi_worker abort R       rank R fails and calls abort() while the others wait
//   comm_mpi_worker groups        4 ranks as a 2 x 2 mesh: every collective within the tp groups
//                                 ({0, 1}, {2, 3}) and the dp groups ({0, 2}, {1, 3}), compared
//                                 bit for bit with the same groups of a local world
//   comm_mpi_worker groupsilent R rank R never calls its tp group's collective
//   comm_mpi_worker transfersilent R  rank R never takes part in a chain of transfers
// Like a real launcher, a rank whose collective fails prints the error and then aborts the job.
#include "runtime/comm/local/local_comm.h"
#include "runtime/comm/mpi/mpi_comm.h"
#include "runtime/common/comm_cost.h"
#include "runtime/common/mesh.h"
#include "runtime/support/half_float.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace shardc::runtime;

namespace {

std::vector<float> rankData(int rank, size_t count, unsigned salt) {
  std::mt19937 gen(1000003u * static_cast<unsigned>(rank) + 7919u * salt + 17u);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-6, 0);
  std::vector<float> v(count);
  for (float &x : v)
    x = std::ldexp(mantissa(gen), exponent(gen));
  return v;
}

// Every collective on odd sizes (and counts that do not divide evenly), as rank `rank` of
// `comm` runs them; each result goes to *results in order.
Status runCases(Communicator &comm, std::vector<std::vector<float>> *results) {
  const int n = comm.size(), rank = comm.rank();
  unsigned salt = 0;
  for (size_t count : {size_t(n), size_t(n) * 7, size_t(n) * 1001, size_t(13), size_t(0)}) {
    std::vector<float> data = rankData(rank, count, ++salt);
    SHARDC_RETURN_IF_ERROR(comm.allReduceSum(data.data(), count));
    results->push_back(data);
  }
  for (size_t chunk : {size_t(1), size_t(5), size_t(333)}) {
    const std::vector<float> in = rankData(rank, chunk * static_cast<size_t>(n), ++salt);
    std::vector<float> out(chunk, -1.0f);
    SHARDC_RETURN_IF_ERROR(comm.reduceScatterSum(in.data(), out.data(), chunk));
    results->push_back(out);
  }
  for (size_t chunk : {size_t(1), size_t(6), size_t(129)}) {
    const std::vector<float> in = rankData(rank, chunk, ++salt);
    std::vector<float> out(chunk * static_cast<size_t>(n), -1.0f);
    SHARDC_RETURN_IF_ERROR(comm.allGather(in.data(), out.data(), chunk));
    results->push_back(out);
  }
  // Pairwise exchanges with every peer, not only the ring's neighbours.
  for (size_t chunk : {size_t(1), size_t(4), size_t(257)}) {
    const std::vector<float> in = rankData(rank, chunk * static_cast<size_t>(n), ++salt);
    std::vector<float> out(chunk * static_cast<size_t>(n), -1.0f);
    SHARDC_RETURN_IF_ERROR(comm.allToAll(in.data(), out.data(), chunk));
    results->push_back(out);
  }
  // The other element types; 16-bit results are kept widened to f32, which is exact, so their
  // bits still compare.
  for (size_t count : {size_t(n) * 7, size_t(13)}) {
    std::vector<uint16_t> data;
    for (float x : rankData(rank, count, ++salt))
      data.push_back(toBFloat16(x).bits);
    SHARDC_RETURN_IF_ERROR(comm.allReduceSum(data.data(), count, CommDType::BF16));
    std::vector<float> widened;
    for (uint16_t bits : data)
      widened.push_back(toFloat(BFloat16{bits}));
    results->push_back(widened);
  }
  {
    const size_t chunk = 5;
    std::vector<uint16_t> in, out(chunk);
    for (float x : rankData(rank, chunk * static_cast<size_t>(n), ++salt))
      in.push_back(toFloat16(x).bits);
    SHARDC_RETURN_IF_ERROR(comm.reduceScatterSum(in.data(), out.data(), chunk, CommDType::F16));
    std::vector<float> widened;
    for (uint16_t bits : out)
      widened.push_back(toFloat(Float16{bits}));
    results->push_back(widened);
  }
  {
    const size_t chunk = 7;
    std::vector<uint8_t> in(chunk), out(chunk * static_cast<size_t>(n));
    for (size_t i = 0; i < chunk; ++i)
      in[i] = static_cast<uint8_t>(31 * rank + 7 * static_cast<int>(i));
    SHARDC_RETURN_IF_ERROR(comm.allGather(in.data(), out.data(), chunk, CommDType::Bytes));
    results->push_back(std::vector<float>(out.begin(), out.end()));
  }
  {
    const size_t chunk = 3;
    std::vector<uint8_t> in(chunk * static_cast<size_t>(n)), out(in.size());
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = static_cast<uint8_t>(17 * rank + 5 * static_cast<int>(i));
    SHARDC_RETURN_IF_ERROR(comm.allToAll(in.data(), out.data(), chunk, CommDType::Bytes));
    results->push_back(std::vector<float>(out.begin(), out.end()));
  }
  // Point-to-point transfers as pipeline stages make them: activations along the chain of
  // ranks (the first only sends, the last only receives), then gradients back along it.
  const int none = Communicator::kNoPeer;
  const int next = rank + 1 < n ? rank + 1 : none, prev = rank > 0 ? rank - 1 : none;
  for (size_t count : {size_t(1), size_t(1000)}) {
    const std::vector<float> in = rankData(rank, next == none ? 0 : count, ++salt);
    std::vector<float> out(prev == none ? 0 : count, -1.0f);
    SHARDC_RETURN_IF_ERROR(comm.transfer(in.data(), in.size(), next, out.data(), out.size(), prev,
                                         CommDType::F32));
    results->push_back(out);
    const std::vector<float> grad = rankData(rank, prev == none ? 0 : count, ++salt);
    std::vector<float> back(next == none ? 0 : count, -1.0f);
    SHARDC_RETURN_IF_ERROR(comm.transfer(grad.data(), grad.size(), prev, back.data(), back.size(),
                                         next, CommDType::F32));
    results->push_back(back);
  }
  // Two ranks sending to each other at once (1F1B's steady state), in raw bytes; the ranks
  // without a partner take no part, and the collective after it still matches.
  const int partner = (rank ^ 1) < n ? (rank ^ 1) : none;
  if (partner != none) {
    std::vector<uint8_t> in(11), out(11);
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = static_cast<uint8_t>(13 * rank + 3 * static_cast<int>(i));
    SHARDC_RETURN_IF_ERROR(comm.transfer(in.data(), in.size(), partner, out.data(), out.size(),
                                         partner, CommDType::Bytes));
    results->push_back(std::vector<float>(out.begin(), out.end()));
  }
  // Posted transfers around the ring (the interleaved pipeline's steady state): every rank
  // sends three messages to the next before it receives any, which rendezvous transfers
  // could not do; the buffer is overwritten as soon as each send returns; then a rendezvous
  // transfer on the same pairs, numbered after them, and the end of the posted sends.
  if (n >= 2) {
    const int ringNext = (rank + 1) % n, ringPrev = (rank + n - 1) % n;
    const size_t counts[] = {7, 0, 1000};
    std::vector<float> buffer;
    for (size_t count : counts) {
      buffer = rankData(rank, count, ++salt);
      SHARDC_RETURN_IF_ERROR(comm.transferPosted(buffer.data(), buffer.size(), ringNext, nullptr,
                                                 0, none, CommDType::F32));
      std::fill(buffer.begin(), buffer.end(), -7.0f);
    }
    for (size_t count : counts) {
      std::vector<float> out(count, -1.0f);
      SHARDC_RETURN_IF_ERROR(comm.transferPosted(nullptr, 0, none, out.data(), out.size(),
                                                 ringPrev, CommDType::F32));
      results->push_back(out);
    }
    const std::vector<float> in = rankData(rank, 5, ++salt);
    std::vector<float> out(5, -1.0f);
    SHARDC_RETURN_IF_ERROR(comm.transfer(in.data(), in.size(), ringNext, out.data(), out.size(),
                                         ringPrev, CommDType::F32));
    results->push_back(out);
    SHARDC_RETURN_IF_ERROR(comm.finishPosted());
  }
  {
    std::vector<float> data = rankData(rank, 64, ++salt);
    SHARDC_RETURN_IF_ERROR(comm.allReduceSum(data.data(), data.size()));
    results->push_back(data);
  }
  return Status::ok();
}

// Rank `rank`'s results and counters from a local world of `size` threads.
Status runLocally(int size, int rank, std::vector<std::vector<float>> *results,
                  CommCounters *counters) {
  std::vector<std::unique_ptr<Communicator>> comms;
  SHARDC_RETURN_IF_ERROR(createLocalWorld(size, CommOptions(), &comms));
  std::vector<std::vector<std::vector<float>>> all(static_cast<size_t>(size));
  std::vector<Status> statuses(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      statuses[static_cast<size_t>(r)] =
          runCases(*comms[static_cast<size_t>(r)], &all[static_cast<size_t>(r)]);
    });
  for (std::thread &t : threads)
    t.join();
  for (const Status &s : statuses)
    SHARDC_RETURN_IF_ERROR(s);
  *results = all[static_cast<size_t>(rank)];
  *counters = comms[static_cast<size_t>(rank)]->counters();
  return Status::ok();
}

int compare(Communicator &comm) {
  const int rank = comm.rank();
  std::vector<std::vector<float>> mpiResults, localResults;
  Status status = runCases(comm, &mpiResults);
  CommCounters localCounters;
  if (status.isOk())
    status = runLocally(comm.size(), rank, &localResults, &localCounters);
  if (!status.isOk()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  int mismatches = 0;
  for (size_t i = 0; i < mpiResults.size(); ++i) {
    const auto &a = mpiResults[i], &b = localResults[i];
    if (a.size() != b.size() || (!a.empty() && std::memcmp(a.data(), b.data(), a.size() * 4))) {
      std::fprintf(stderr, "rank %d: case %zu differs from the local backend\n", rank, i);
      ++mismatches;
    }
  }
  const CommCounters &mpiCounters = comm.counters();
  for (int k = 0; k < kCollectiveKinds; ++k) {
    if (mpiCounters.calls[k] != localCounters.calls[k] ||
        mpiCounters.bytesSent[k] != localCounters.bytesSent[k]) {
      std::fprintf(stderr, "rank %d: %s counters differ (%llu vs %llu bytes)\n", rank,
                   collectiveName(static_cast<CollectiveKind>(k)),
                   static_cast<unsigned long long>(mpiCounters.bytesSent[k]),
                   static_cast<unsigned long long>(localCounters.bytesSent[k]));
      ++mismatches;
    }
  }
  // The even-sized reduce-scatters' bytes are exactly comm_cost.h's prediction.
  uint64_t predicted = 0;
  for (size_t chunk : {1, 5, 333})
    predicted +=
        collectiveBytesSent(CollectiveKind::ReduceScatter, chunk * static_cast<size_t>(comm.size()),
                            comm.size(), sizeof(float));
  predicted += collectiveBytesSent(CollectiveKind::ReduceScatter,
                                   5 * static_cast<size_t>(comm.size()), comm.size(), 2);
  if (mpiCounters.bytesSent[1] != predicted) {
    std::fprintf(stderr, "rank %d: reduce_scatter sent %llu bytes, comm_cost predicts %llu\n", rank,
                 static_cast<unsigned long long>(mpiCounters.bytesSent[1]),
                 static_cast<unsigned long long>(predicted));
    ++mismatches;
  }
  // The nccl bootstrap's broadcast.
  char text[32] = {};
  if (rank == 0)
    std::snprintf(text, sizeof(text), "bootstrap id 1234");
  status = mpiBroadcastBytes(comm, text, sizeof(text), 0);
  if (!status.isOk() || std::strcmp(text, "bootstrap id 1234") != 0) {
    std::fprintf(stderr, "rank %d: broadcast failed: %s\n", rank, status.message().c_str());
    ++mismatches;
  }
  if (mismatches != 0)
    return 1;
  std::printf("rank %d: %zu collectives and transfers bit-identical with the local backend\n",
              rank, mpiResults.size());
  return 0;
}

// Rank `rank`'s group of a 2 x 2 mesh along `axis` (0: dp, 1: tp), split from `comm`.
Status meshGroup(Communicator &comm, int axis, std::unique_ptr<Communicator> *group) {
  const std::vector<int64_t> sizes = {2, 2};
  const MeshSlice slice = meshSlice(sizes, meshCoordinate(sizes, comm.rank()), {axis});
  SHARDC_RETURN_IF_ERROR(comm.split(slice.color, slice.key, group));
  (*group)->setGroupName(axis == 1 ? "tp" : "dp");
  return Status::ok();
}

// Both groups of rank `comm.rank()` (tp, then dp) and every case run on each, in order.
Status runGroupCases(Communicator &comm, std::vector<std::vector<float>> *results,
                     CommCounters counters[2], std::vector<int> members[2]) {
  for (int axis : {1, 0}) {
    std::unique_ptr<Communicator> group;
    SHARDC_RETURN_IF_ERROR(meshGroup(comm, axis, &group));
    SHARDC_RETURN_IF_ERROR(runCases(*group, results));
    counters[axis] = group->counters();
    for (int r = 0; r < group->size(); ++r)
      members[axis].push_back(group->worldRankOf(r));
  }
  return Status::ok();
}

int compareGroups(Communicator &comm) {
  const int rank = comm.rank();
  if (comm.size() != 4) {
    std::fprintf(stderr, "groups needs 4 ranks\n");
    return 2;
  }
  std::vector<std::vector<float>> mpiResults;
  CommCounters mpiCounters[2];
  std::vector<int> mpiMembers[2];
  Status status = runGroupCases(comm, &mpiResults, mpiCounters, mpiMembers);
  // The same on the groups of a local world.
  std::vector<std::vector<std::vector<float>>> all(4);
  CommCounters localCounters[4][2];
  std::vector<int> localMembers[4][2];
  std::vector<std::unique_ptr<Communicator>> comms;
  if (status.isOk())
    status = createLocalWorld(4, CommOptions(), &comms);
  if (status.isOk()) {
    std::vector<Status> statuses(4);
    std::vector<std::thread> threads;
    for (int r = 0; r < 4; ++r)
      threads.emplace_back([&, r] {
        statuses[static_cast<size_t>(r)] =
            runGroupCases(*comms[static_cast<size_t>(r)], &all[static_cast<size_t>(r)],
                          localCounters[r], localMembers[r]);
      });
    for (std::thread &t : threads)
      t.join();
    for (const Status &s : statuses)
      if (status.isOk())
        status = s;
  }
  if (!status.isOk()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  int mismatches = 0;
  const auto &localResults = all[static_cast<size_t>(rank)];
  for (size_t i = 0; i < mpiResults.size(); ++i) {
    const auto &a = mpiResults[i], &b = localResults[i];
    if (a.size() != b.size() || (!a.empty() && std::memcmp(a.data(), b.data(), a.size() * 4))) {
      std::fprintf(stderr, "rank %d: group case %zu differs from the local backend\n", rank, i);
      ++mismatches;
    }
  }
  const std::vector<int> expected[2] = {{rank % 2, rank % 2 + 2}, {rank / 2 * 2, rank / 2 * 2 + 1}};
  for (int axis : {0, 1}) {
    if (mpiMembers[axis] != expected[axis] || localMembers[rank][axis] != expected[axis]) {
      std::fprintf(stderr, "rank %d: the group along axis %d has other members\n", rank, axis);
      ++mismatches;
    }
    for (int k = 0; k < kCollectiveKinds; ++k)
      if (mpiCounters[axis].bytesSent[k] != localCounters[rank][axis].bytesSent[k] ||
          mpiCounters[axis].calls[k] != localCounters[rank][axis].calls[k]) {
        std::fprintf(stderr, "rank %d: the group along axis %d counted otherwise\n", rank, axis);
        ++mismatches;
      }
  }
  // The splits are not collectives of a program: the world counted nothing.
  if (comm.counters().totalBytesSent() != 0) {
    std::fprintf(stderr, "rank %d: the world counted the groups' bytes\n", rank);
    ++mismatches;
  }
  if (mismatches != 0)
    return 1;
  std::printf("rank %d: %zu group collectives and transfers bit-identical with the local "
              "backend\n",
              rank, mpiResults.size());
  return 0;
}

// What a launcher does when a rank's collective fails: print the error, give the other ranks'
// messages time to print, then end the job.
int failJob(Communicator &comm, const Status &status) {
  std::fprintf(stderr, "%s\n", status.message().c_str());
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  comm.abort(status.message());
  return 1;
}

// Rank `victim` never calls its tp group's all-reduce; its partner times out.
int groupFailure(Communicator &comm, int victim) {
  const int rank = comm.rank();
  std::unique_ptr<Communicator> tp;
  Status status = meshGroup(comm, 1, &tp);
  if (status.isOk() && rank == victim) {
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  std::vector<float> data(2000, 1.0f);
  if (status.isOk())
    status = tp->allReduceSum(data.data(), data.size());
  if (status.isOk()) {
    std::printf("rank %d: the group all-reduce succeeded\n", rank);
    std::fflush(stdout);
    // The other group's ranks wait here until the job ends (as a job's ranks would, in the
    // next step's collectives).
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  return failJob(comm, status);
}

// Activations along the chain of ranks, as pipeline stages send them; rank `victim` never takes
// part, so the rank before it (whose send nobody takes) and the one after it (which waits for
// its message) time out naming it.
int transferFailure(Communicator &comm, int victim) {
  const int rank = comm.rank(), n = comm.size();
  if (rank == victim) {
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  const int none = Communicator::kNoPeer;
  std::vector<float> in(rank + 1 < n ? 500 : 0, 1.0f), out(rank > 0 ? 500 : 0);
  Status status = comm.transfer(in.data(), in.size(), rank + 1 < n ? rank + 1 : none,
                                out.data(), out.size(), rank > 0 ? rank - 1 : none,
                                CommDType::F32);
  if (status.isOk()) {
    std::printf("rank %d: the transfer succeeded\n", rank);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  return failJob(comm, status);
}

// One all-reduce; `rank` misbehaves as `mode` says.
int failure(Communicator &comm, const std::string &mode, int victim) {
  const int rank = comm.rank();
  if (rank == victim) {
    if (mode == "kill")
      std::raise(SIGKILL);
    if (mode == "silent") {
      std::this_thread::sleep_for(std::chrono::seconds(60));
      return 0;
    }
    if (mode == "abort") {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::fprintf(stderr, "rank %d failed: injected failure\n", rank);
      std::fflush(stderr);
      comm.abort("injected failure");
      return 1;
    }
  }
  std::vector<float> data(comm.size() * 1000, 1.0f);
  Status status = comm.allReduceSum(data.data(), data.size());
  if (status.isOk()) {
    std::printf("rank %d: the all-reduce succeeded\n", rank);
    return 0;
  }
  return failJob(comm, status);
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool failureMode = mode == "kill" || mode == "silent" || mode == "abort" ||
                           mode == "groupsilent" || mode == "transfersilent";
  if (!(mode == "compare" || mode == "groups" || (failureMode && argc > 2))) {
    std::fprintf(stderr, "usage: comm_mpi_worker compare | groups | kill R | silent R | abort R "
                         "| groupsilent R | transfersilent R\n");
    return 2;
  }
  CommOptions options;
  options.timeoutSeconds =
      mode == "silent" || mode == "groupsilent" || mode == "transfersilent" ? 2.0 : 20.0;
  std::unique_ptr<Communicator> comm;
  Status status = createMpiCommunicator(options, &comm);
  if (!status.isOk()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  std::fflush(stdout);
  if (mode == "compare")
    return compare(*comm);
  if (mode == "groups")
    return compareGroups(*comm);
  if (mode == "groupsilent")
    return groupFailure(*comm, std::atoi(argv[2]));
  if (mode == "transfersilent")
    return transferFailure(*comm, std::atoi(argv[2]));
  return failure(*comm, mode, std::atoi(argv[2]));
}
