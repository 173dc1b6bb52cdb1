// A one-collective run of the nccl backend: `mpirun -np N comm_nccl_smoke` on a machine with
// N GPUs prints "rank R: nccl ok". Without a GPU it must fail cleanly with the factory's error
// (what the ctest on the development machine, which has none, checks), never crash or hang.
#include "runtime/comm/nccl/nccl_comm.h"

#include <cstdio>
#include <memory>
#include <vector>

using namespace shardc::runtime;

int main() {
  CommOptions options;
  options.timeoutSeconds = 30;
  std::unique_ptr<Communicator> comm;
  Status status = createNcclCommunicator(options, -1, &comm);
  if (!status.isOk()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  const int n = comm->size(), rank = comm->rank();
  std::vector<float> data(static_cast<size_t>(n) * 3, static_cast<float>(rank + 1));
  status = comm->allReduceSum(data.data(), data.size());
  const float expected = static_cast<float>(n * (n + 1) / 2);
  for (float x : data)
    if (status.isOk() && x != expected)
      status = Status::error("wrong sum " + std::to_string(x));
  std::vector<float> shard(3), gathered(static_cast<size_t>(n) * 3);
  if (status.isOk())
    status = comm->reduceScatterSum(data.data(), shard.data(), 3);
  if (status.isOk())
    status = comm->allGather(shard.data(), gathered.data(), 3);
  if (!status.isOk()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    comm->abort(status.message());
    return 1;
  }
  std::printf("rank %d: nccl ok (%llu bytes counted)\n", rank,
              static_cast<unsigned long long>(comm->counters().totalBytesSent()));
  return 0;
}
