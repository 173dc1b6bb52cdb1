// pad, pad_for_slice, cum_sum and scatter_nd on the GPU. Contracts, error messages and the
// strided walks are the CPU kernels' own (cpu/pad_scan_checks.h), and so is every result, bit
// for bit: pad and pad_for_slice only move elements, cum_sum runs the CPU's sequential sum (in
// double for floats, int64 for integers) in one thread per row, and scatter_nd applies each
// output element's updates in tuple order in one thread (no atomics), as the CPU does.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/pad_scan_checks.h"
#include "runtime/kernels/cpu/workspace.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"

#include <type_traits>
#include <vector>

namespace shardc::runtime::cuda {

namespace {

template <typename T> __global__ void fillImpl(T *__restrict__ y, int64_t n, T value) {
  SHARDC_GRID_STRIDE(i, n) { y[i] = value; }
}

// y[offset1(i)] = x[offset0(i)] (pad's block of x placed in y).
template <typename T>
__global__ void placeWalk2(const T *__restrict__ x, T *__restrict__ y, DeviceLoop loop) {
  SHARDC_GRID_STRIDE(i, loop.numel) {
    int64_t offsets[2];
    loopOffsets<2>(loop, i, offsets);
    y[offsets[1]] = x[offsets[0]];
  }
}

// y[offset0(i)] = x[i] (pad_for_slice: dy, in order, to the places the slice read).
template <typename T>
__global__ void placeWalk1(const T *__restrict__ x, T *__restrict__ y, DeviceLoop loop) {
  SHARDC_GRID_STRIDE(i, loop.numel) {
    int64_t offsets[1];
    loopOffsets<1>(loop, i, offsets);
    y[offsets[0]] = x[i];
  }
}

template <typename T>
Status padAs(KernelArgs &args, const std::vector<int64_t> &pads, T value) {
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  const int64_t n = y.numel();
  if (n > 0) {
    fillImpl<T><<<gridFor(n), kBlock, 0, streamOf(args)>>>(y.as<T>(), n, value);
    SHARDC_RETURN_IF_ERROR(launchStatus("pad"));
  }
  cpu::StridedLoop plan;
  if (!cpu::planPad(x, y, pads, &plan))
    return Status::ok();
  DeviceLoop loop;
  SHARDC_RETURN_IF_ERROR(toDeviceLoop("pad", plan, &loop));
  if (loop.numel == 0)
    return Status::ok();
  // Queued after the fill on the same stream, so the copied block overwrites it.
  placeWalk2<T><<<gridFor(loop.numel), kBlock, 0, streamOf(args)>>>(x.as<T>(), y.as<T>(), loop);
  return launchStatus("pad");
}

// One thread per (outer, inner) row of the scanned axis, summing in the CPU's order and
// accumulator; each element is read before it is written, so x and y may be one buffer.
template <typename T>
__global__ void cumSumImpl(const T *x, T *y, int64_t outer, int64_t length, int64_t inner,
                           bool exclusive, bool reverse) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  SHARDC_GRID_STRIDE(r, outer * inner) {
    const int64_t o = r / inner, i = r % inner;
    Acc sum = 0;
    for (int64_t step = 0; step < length; ++step) {
      const int64_t k = reverse ? length - 1 - step : step;
      const int64_t at = (o * length + k) * inner + i;
      const T value = x[at];
      if (exclusive) {
        y[at] = static_cast<T>(sum);
        sum += static_cast<Acc>(value);
      } else {
        sum += static_cast<Acc>(value);
        y[at] = static_cast<T>(sum);
      }
    }
  }
}

// scatter_nd: one thread per output element, starting from data and applying, in tuple order,
// the updates of the tuples that address its slice: `order[slotStart[s] .. slotStart[s + 1])`
// lists those tuples ascending. The combining expressions are the CPU's (std::max / std::min
// spelled out), so NaN and ties go the same way and the last "none" update wins.
template <typename T>
__global__ void scatterNdImpl(const T *data, const T *__restrict__ updates,
                              const int64_t *__restrict__ slotStart,
                              const int64_t *__restrict__ order, T *y, int64_t n, int64_t slice,
                              cpu::ScatterCombine combine) {
  SHARDC_GRID_STRIDE(i, n) {
    const int64_t s = i / slice, e = i % slice;
    T v = data[i]; // read before y[i] is written: data and y may be one buffer
    for (int64_t t = slotStart[s]; t < slotStart[s + 1]; ++t) {
      const T u = updates[order[t] * slice + e];
      switch (combine) {
      case cpu::ScatterCombine::kNone: v = u; break;
      case cpu::ScatterCombine::kAdd: v = static_cast<T>(v + u); break;
      case cpu::ScatterCombine::kMul: v = static_cast<T>(v * u); break;
      case cpu::ScatterCombine::kMax: v = (v < u) ? u : v; break; // std::max(v, u)
      case cpu::ScatterCombine::kMin: v = (u < v) ? u : v; break; // std::min(v, u)
      }
    }
    y[i] = v;
  }
}

// scatter_nd's workspace: the tuples grouped by the slice they address (counting sort).
Status takeScatterGroups(cpu::Workspace &workspace, int64_t slots, int64_t tuples,
                         int64_t **slotStart, int64_t **order) {
  SHARDC_RETURN_IF_ERROR(workspace.take("scatter_nd", slots + 1, slotStart));
  return workspace.take("scatter_nd", tuples, order);
}

int64_t scatterSlots(const Tensor &data, const cpu::ScatterNdPlan &plan) {
  return cpu::dimsProduct(data.shape, 0, static_cast<size_t>(plan.k));
}

} // namespace

Status padKernel(KernelArgs &args) {
  std::vector<int64_t> pads;
  double value = 0;
  SHARDC_RETURN_IF_ERROR(cpu::checkPad(args, &pads, &value));
  const Tensor &x = args.inputs[0];
  // The fill value converts on the host exactly as the CPU kernel converts it.
  switch (x.dtype) {
  case program::F32:
    return padAs<float>(args, pads, static_cast<float>(value));
  case program::I64:
    return padAs<int64_t>(args, pads, static_cast<int64_t>(value));
  case program::I32:
    return padAs<int32_t>(args, pads, static_cast<int32_t>(value));
  case program::BOOL:
    return padAs<uint8_t>(args, pads, value != 0 ? 1 : 0);
  default:
    return Status::error("pad: unsupported dtype of x " + x.describe());
  }
}

Status padForSliceKernel(KernelArgs &args) {
  const char *kernel = "pad_for_slice";
  cpu::StridedLoop plan;
  SHARDC_RETURN_IF_ERROR(cpu::planPadForSlice(args, &plan));
  const Tensor &dy = args.inputs[0], &dx = args.outputs[0];
  DeviceLoop loop;
  SHARDC_RETURN_IF_ERROR(toDeviceLoop(kernel, plan, &loop));
  // All-zero bytes are 0 in every dtype, so the scatter only needs the element size.
  if (dx.sizeBytes() > 0)
    SHARDC_RETURN_IF_ERROR(cudaStatus(kernel, "zeroing dx",
                                      cudaMemsetAsync(dx.data, 0, dx.sizeBytes(), streamOf(args))));
  if (loop.numel == 0)
    return Status::ok();
  return cpu::visitElementSize(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    placeWalk1<T><<<gridFor(loop.numel), kBlock, 0, streamOf(args)>>>(dy.as<T>(), dx.as<T>(),
                                                                       loop);
    return launchStatus(kernel);
  });
}

Status cumSumKernel(KernelArgs &args) {
  int64_t axis = 0;
  bool exclusive = false, reverse = false;
  SHARDC_RETURN_IF_ERROR(cpu::checkCumSum(args, &axis, &exclusive, &reverse));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  const size_t a = static_cast<size_t>(axis);
  const int64_t outer = cpu::dimsProduct(x.shape, 0, a), length = x.shape[a];
  const int64_t inner = cpu::dimsProduct(x.shape, a + 1, x.shape.size());
  return cpu::visitNumeric(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t rows = outer * inner;
    if (rows == 0 || length == 0)
      return Status::ok();
    cumSumImpl<T><<<gridFor(rows), kBlock, 0, streamOf(args)>>>(x.as<T>(), y.as<T>(), outer,
                                                                length, inner, exclusive, reverse);
    return launchStatus("cum_sum");
  });
}

Status scatterNdKernel(KernelArgs &args) {
  const char *kernel = "scatter_nd";
  cpu::ScatterNdPlan plan;
  SHARDC_RETURN_IF_ERROR(cpu::checkScatterNd(args, &plan));
  const Tensor &data = args.inputs[0], &indices = args.inputs[1], &updates = args.inputs[2];
  const Tensor &y = args.outputs[0];
  const int64_t slots = scatterSlots(data, plan);
  cpu::Workspace workspace(args);
  int64_t *slotStart = nullptr, *order = nullptr; // device memory
  SHARDC_RETURN_IF_ERROR(takeScatterGroups(workspace, slots, plan.tuples, &slotStart, &order));
  // The index values, read on the host and range-checked there with the CPU kernel's own
  // function, so an out-of-range index is the CPU's error (before anything is written, as on
  // the CPU) and no device thread reads or writes outside data. This copies the indices to the
  // host and waits for the stream (a synchronisation per call): acceptable until the kernels
  // can report errors from the device.
  std::vector<int64_t> slotOf(static_cast<size_t>(plan.tuples));
  if (plan.tuples > 0) {
    std::vector<uint8_t> host(indices.sizeBytes());
    SHARDC_RETURN_IF_ERROR(cudaStatus(
        kernel, "copying the indices to the host",
        cudaMemcpyAsync(host.data(), indices.data, host.size(), cudaMemcpyDeviceToHost,
                        streamOf(args))));
    SHARDC_RETURN_IF_ERROR(
        cudaStatus(kernel, "waiting for the indices", cudaStreamSynchronize(streamOf(args))));
    Tensor hostIndices = indices;
    hostIndices.data = host.data();
    for (int64_t t = 0; t < plan.tuples; ++t) {
      int64_t offset = 0;
      SHARDC_RETURN_IF_ERROR(cpu::scatterNdTupleOffset(plan, data, hostIndices, t, &offset));
      slotOf[static_cast<size_t>(t)] = plan.slice > 0 ? offset / plan.slice : 0;
    }
  }
  const int64_t n = y.numel();
  if (n == 0)
    return Status::ok();
  // Counting sort of the tuples by slot, stable (ascending t within a slot). One host vector
  // holds slotStart then order; from pageable memory, so it may go out of scope once the
  // copies return.
  std::vector<int64_t> groups(static_cast<size_t>(slots + 1 + plan.tuples), 0);
  int64_t *start = groups.data(), *sorted = groups.data() + slots + 1;
  for (int64_t t = 0; t < plan.tuples; ++t)
    ++start[slotOf[static_cast<size_t>(t)] + 1];
  for (int64_t s = 0; s < slots; ++s)
    start[s + 1] += start[s];
  std::vector<int64_t> next(start, start + slots);
  for (int64_t t = 0; t < plan.tuples; ++t)
    sorted[next[static_cast<size_t>(slotOf[static_cast<size_t>(t)])]++] = t;
  // slotStart and order are separately aligned pieces of the workspace: two copies.
  SHARDC_RETURN_IF_ERROR(cudaStatus(kernel, "copying the slot groups to the device",
                                    cudaMemcpyAsync(slotStart, start, (slots + 1) * sizeof(int64_t),
                                                    cudaMemcpyHostToDevice, streamOf(args))));
  if (plan.tuples > 0)
    SHARDC_RETURN_IF_ERROR(cudaStatus(kernel, "copying the slot groups to the device",
                                      cudaMemcpyAsync(order, sorted,
                                                      plan.tuples * sizeof(int64_t),
                                                      cudaMemcpyHostToDevice, streamOf(args))));
  // By dtype, not element size: the reductions do arithmetic.
  return cpu::visitAnyDtype(data.dtype, [&](auto tag) {
    using T = decltype(tag);
    scatterNdImpl<T><<<gridFor(n), kBlock, 0, streamOf(args)>>>(
        data.as<T>(), updates.as<T>(), slotStart, order, y.as<T>(), n, plan.slice, plan.combine);
    return launchStatus(kernel);
  });
}

Status scatterNdWorkspace(const KernelArgs &args, uint64_t *bytes) {
  cpu::ScatterNdPlan plan;
  SHARDC_RETURN_IF_ERROR(cpu::checkScatterNd(args, &plan));
  const int64_t slots = scatterSlots(args.inputs[0], plan);
  return cpu::measureWorkspace(bytes, [&](cpu::Workspace &workspace) {
    int64_t *slotStart = nullptr, *order = nullptr;
    return takeScatterGroups(workspace, slots, plan.tuples, &slotStart, &order);
  });
}

} // namespace shardc::runtime::cuda
