// A one-collective run of the nccl backend: `mpirun -np N comm_nccl_smoke` on a machine with
// N GPUs prints "rank R: nccl ok" after checking every collective's result, and fails otherwise.
// Where no GPU is visible there is nothing to test: it says so ("SKIPPED: ...", which ctest
// reports as a skip) and exits 0, having checked that the factory refuses cleanly.
#include "runtime/comm/nccl/nccl_comm.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <memory>
#include <vector>

using namespace shardc::runtime;

int main() {
  CommOptions options;
  options.timeoutSeconds = 30;
  std::unique_ptr<Communicator> comm;
  int gpus = 0;
  const cudaError_t visible = cudaGetDeviceCount(&gpus);
  Status status = createNcclCommunicator(options, -1, &comm);
  if (visible != cudaSuccess || gpus == 0) {
    // Without a GPU the factory must refuse, in one line naming the backend.
    if (status.isOk() || status.message().find("nccl communicator: ") == std::string::npos ||
        status.message().find('\n') != std::string::npos) {
      std::fprintf(stderr, "no GPU, yet the nccl factory answered: %s\n",
                   status.isOk() ? "ok" : status.message().c_str());
      return 1;
    }
    std::printf("SKIPPED: no CUDA device is visible (%s); the factory refused cleanly: %s\n",
                visible != cudaSuccess ? cudaGetErrorString(visible) : "0 devices",
                status.message().c_str());
    return 0;
  }
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
  // Reduce-scatter of the sums: each rank's 3 elements are n * expected; the all-gather
  // brings every rank's 3 back.
  std::vector<float> shard(3), gathered(static_cast<size_t>(n) * 3);
  if (status.isOk())
    status = comm->reduceScatterSum(data.data(), shard.data(), 3);
  for (float x : shard)
    if (status.isOk() && x != expected * static_cast<float>(n))
      status = Status::error("reduce-scatter: wrong sum " + std::to_string(x));
  if (status.isOk())
    status = comm->allGather(shard.data(), gathered.data(), 3);
  for (float x : gathered)
    if (status.isOk() && x != expected * static_cast<float>(n))
      status = Status::error("all-gather: wrong value " + std::to_string(x));
  if (!status.isOk()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    comm->abort(status.message());
    return 1;
  }
  std::printf("rank %d: nccl ok (%llu bytes counted)\n", rank,
              static_cast<unsigned long long>(comm->counters().totalBytesSent()));
  return 0;
}
