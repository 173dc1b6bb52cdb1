// The collective kernels on the cuda device (all_reduce, reduce_scatter, all_gather, all_to_all,
// shard_slice and send_recv), through host memory: the communicators (runtime/comm) move host
// buffers, so each call waits for the rank's stream, copies its inputs to host memory, runs the
// CPU kernel there (the same checks, packing and communicator calls as a CPU rank, so the
// results are the CPU ranks' bit for bit), and copies its outputs back. This is what lets
// several ranks share one GPU as threads of one process (--comm local) and a CUDA rank use any
// backend; it costs two copies over PCIe and a stream synchronisation per collective, and no
// overlap with the compute stream.
//
// The host buffers are the calling thread's (each rank runs its ops on its own thread) and
// grow to the largest call, which the first step makes: no host allocation after it.
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"

#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace shardc::runtime::cuda {

namespace {

constexpr uint64_t kAlign = 64;

uint64_t alignUp(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The calling thread's host buffer, 64-byte aligned, at least `bytes` long.
unsigned char *hostStaging(uint64_t bytes) {
  thread_local std::vector<unsigned char> buffer;
  if (buffer.size() < bytes + kAlign)
    buffer.resize(bytes + kAlign);
  auto at = reinterpret_cast<uintptr_t>(buffer.data());
  return buffer.data() + (alignUp(at) - at);
}

Status staged(const char *kernel, KernelFn cpuKernel, KernelArgs &args) {
  // The host operands: views of the device ones, placed in the staging buffer, then the CPU
  // kernel's workspace (which the CPU kernel's own function sizes from the shapes).
  KernelArgs host;
  host.attrs = args.attrs;
  host.comm = args.comm;
  host.inputs = args.inputs;
  host.outputs = args.outputs;
  uint64_t workspace = 0;
  SHARDC_RETURN_IF_ERROR(cpuKernelWorkspaceBytes(kernel, host, &workspace));
  uint64_t total = 0;
  for (const Tensor &t : args.inputs)
    total += t.present() ? alignUp(t.sizeBytes()) : 0;
  for (const Tensor &t : args.outputs)
    total += alignUp(t.sizeBytes());
  unsigned char *base = hostStaging(total + workspace);
  uint64_t at = 0;
  auto place = [&](Tensor &t) {
    t.data = base + at;
    at += alignUp(t.sizeBytes());
  };
  cudaStream_t stream = static_cast<cudaStream_t>(args.stream);
  for (size_t i = 0; i < host.inputs.size(); ++i) {
    if (!host.inputs[i].present())
      continue;
    place(host.inputs[i]);
    SHARDC_RETURN_IF_ERROR(cudaStatus(
        kernel, "copying an input to the host",
        cudaMemcpyAsync(host.inputs[i].data, args.inputs[i].data, args.inputs[i].sizeBytes(),
                        cudaMemcpyDeviceToHost, stream)));
  }
  for (Tensor &t : host.outputs)
    place(t);
  host.workspace = workspace ? base + at : nullptr;
  host.workspaceBytes = workspace;
  // The copies queue behind the ops that made the inputs; the CPU kernel reads them after.
  SHARDC_RETURN_IF_ERROR(
      cudaStatus(kernel, "waiting for the stream", cudaStreamSynchronize(stream)));
  SHARDC_RETURN_IF_ERROR(cpuKernel(host));
  for (size_t i = 0; i < host.outputs.size(); ++i)
    SHARDC_RETURN_IF_ERROR(cudaStatus(
        kernel, "copying an output to the device",
        cudaMemcpyAsync(args.outputs[i].data, host.outputs[i].data, host.outputs[i].sizeBytes(),
                        cudaMemcpyHostToDevice, stream)));
  // The staging buffer is reused by the next collective: the copies must be done with it.
  return cudaStatus(kernel, "waiting for the stream", cudaStreamSynchronize(stream));
}

} // namespace

Status allReduceKernel(KernelArgs &args) {
  return staged("all_reduce", cpu::allReduceKernel, args);
}
Status reduceScatterKernel(KernelArgs &args) {
  return staged("reduce_scatter", cpu::reduceScatterKernel, args);
}
Status allGatherKernel(KernelArgs &args) {
  return staged("all_gather", cpu::allGatherKernel, args);
}
Status allToAllKernel(KernelArgs &args) {
  return staged("all_to_all", cpu::allToAllKernel, args);
}
Status shardSliceKernel(KernelArgs &args) {
  return staged("shard_slice", cpu::shardSliceKernel, args);
}
Status sendRecvKernel(KernelArgs &args) {
  return staged("send_recv", cpu::sendRecvKernel, args);
}

} // namespace shardc::runtime::cuda
