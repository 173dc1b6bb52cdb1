// Data-movement CUDA kernels: copy, transpose, slice, expand, concat, split, trilu, gather and
// gather_grad. Contracts, error messages and the strided walks are the CPU kernels' own
// (cpu/movement_checks.h); the device then runs one generic copy, y[i] = x[offset(i)] over the
// planned walk, dispatched on element size only (as the CPU kernels are).
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/gather_indices.h"
#include "runtime/kernels/cpu/movement_checks.h"
#include "runtime/kernels/cpu/workspace.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"

#include <vector>

namespace shardc::runtime::cuda {

namespace {

// Moving elements needs their size only: the CPU kernels' visitor.
using cpu::visitElementSize;

// y[i] = x[offset of element i of the walk] (y contiguous).
template <typename T>
__global__ void gatherWalk(const T *__restrict__ x, T *__restrict__ y, DeviceLoop loop) {
  SHARDC_GRID_STRIDE(i, loop.numel) {
    int64_t offsets[1];
    loopOffsets<1>(loop, i, offsets);
    y[i] = x[offsets[0]];
  }
}

// y[offset1(i)] = x[offset0(i)]: a walk that places its elements too (concat's blocks).
template <typename T>
__global__ void scatterWalk(const T *__restrict__ x, T *__restrict__ y, DeviceLoop loop) {
  SHARDC_GRID_STRIDE(i, loop.numel) {
    int64_t offsets[2];
    loopOffsets<2>(loop, i, offsets);
    y[offsets[1]] = x[offsets[0]];
  }
}

// Copies the elements the single-operand `plan` reads from x into contiguous y.
Status copyThrough(const char *kernel, const cpu::StridedLoop &plan, const void *x, void *y,
                   DType dtype, cudaStream_t stream) {
  DeviceLoop loop;
  SHARDC_RETURN_IF_ERROR(toDeviceLoop(kernel, plan, &loop));
  if (loop.numel == 0)
    return Status::ok();
  return visitElementSize(dtype, [&](auto tag) {
    using T = decltype(tag);
    gatherWalk<T><<<gridFor(loop.numel), kBlock, 0, stream>>>(static_cast<const T *>(x),
                                                             static_cast<T *>(y), loop);
    return launchStatus(kernel);
  });
}

Status scatterThrough(const char *kernel, const cpu::StridedLoop &plan, const void *x, void *y,
                      DType dtype, cudaStream_t stream) {
  DeviceLoop loop;
  SHARDC_RETURN_IF_ERROR(toDeviceLoop(kernel, plan, &loop));
  if (loop.numel == 0)
    return Status::ok();
  return visitElementSize(dtype, [&](auto tag) {
    using T = decltype(tag);
    scatterWalk<T><<<gridFor(loop.numel), kBlock, 0, stream>>>(static_cast<const T *>(x),
                                                              static_cast<T *>(y), loop);
    return launchStatus(kernel);
  });
}

// The walk over a [outer, block] slab of a tensor whose rows are `pitch` elements apart,
// starting at element `base` (a block of concat's output or split's input).
cpu::StridedLoop slabWalk(int64_t outer, int64_t block, int64_t pitch, int64_t base) {
  cpu::StridedLoop loop;
  loop.numOperands = 1;
  loop.dims = {outer, block};
  loop.strides[0] = {pitch, 1};
  loop.baseOffsets[0] = base;
  loop.coalesce();
  return loop;
}

template <typename T>
__global__ void triluImpl(const T *__restrict__ x, T *__restrict__ y, int64_t n, int64_t rows,
                          int64_t cols, bool upper, int64_t k) {
  SHARDC_GRID_STRIDE(i, n) {
    const int64_t j = i % cols, r = (i / cols) % rows;
    // As the CPU: compare j - r with k, never forming r + k (k is unbounded).
    const bool keep = upper ? (j - r >= k) : (j - r <= k);
    y[i] = keep ? x[i] : T(0);
  }
}

// gather over [outer, dim, inner] data: y[o, j, i] = data[o, rows[j], i], zero where rows[j] < 0
// (another index block's row; all-zero bytes are 0 in every dtype).
template <typename T>
__global__ void gatherImpl(const T *__restrict__ data, const int64_t *__restrict__ rows,
                           T *__restrict__ y, int64_t n, int64_t count, int64_t dim,
                           int64_t inner) {
  SHARDC_GRID_STRIDE(i, n) {
    const int64_t k = i % inner;
    const int64_t j = (i / inner) % count;
    const int64_t o = i / (inner * count);
    const int64_t row = rows[j];
    y[i] = row < 0 ? T(0) : data[(o * dim + row) * inner + k];
  }
}

// gather_grad over [outer, dim, inner] ddata, one thread per element: the sum, in index order,
// of the dy rows whose index selects this row. `order[rowStart[r] .. rowStart[r + 1])` lists
// those indices j ascending, so the additions are the CPU kernel's, in its order (bit-identical,
// and independent of scheduling: no atomics).
__global__ void gatherGradImpl(const float *__restrict__ dy, const int64_t *__restrict__ rowStart,
                               const int64_t *__restrict__ order, float *__restrict__ ddata,
                               int64_t n, int64_t count, int64_t dim, int64_t inner) {
  SHARDC_GRID_STRIDE(i, n) {
    const int64_t k = i % inner;
    const int64_t r = (i / inner) % dim;
    const int64_t o = i / (inner * dim);
    float sum = 0.0f;
    for (int64_t t = rowStart[r]; t < rowStart[r + 1]; ++t)
      sum = __fadd_rn(sum, dy[(o * count + order[t]) * inner + k]);
    ddata[i] = sum;
  }
}

// The index values, read on the host and range-checked there with the CPU kernels' own check
// (cpu::gatherRowsOf), so an out-of-range index is the same error as on the CPU and no device
// thread ever reads outside the data. This copies the indices to the host and waits for the
// stream (a synchronisation per call, and a host vector the size of the indices): acceptable
// for now, until the kernels can report errors from the device.
Status hostGatherRows(const char *kernel, int64_t axis, const cpu::IndexBlock &block,
                      const Tensor &indices, cudaStream_t stream, std::vector<int64_t> *rows) {
  const int64_t count = indices.numel();
  rows->assign(static_cast<size_t>(count), 0);
  if (count == 0)
    return Status::ok();
  std::vector<uint8_t> host(indices.sizeBytes());
  SHARDC_RETURN_IF_ERROR(cudaStatus(
      kernel, "copying the indices to the host",
      cudaMemcpyAsync(host.data(), indices.data, host.size(), cudaMemcpyDeviceToHost, stream)));
  SHARDC_RETURN_IF_ERROR(
      cudaStatus(kernel, "waiting for the indices", cudaStreamSynchronize(stream)));
  Tensor hostIndices = indices;
  hostIndices.data = host.data();
  return cpu::gatherRowsOf(kernel, axis, block, hostIndices, rows->data());
}

// gather_grad's workspace: the rows grouped by the index that selects them (counting sort).
Status takeGatherGradGroups(cpu::Workspace &workspace, int64_t count, int64_t dim,
                            int64_t **rowStart, int64_t **order) {
  SHARDC_RETURN_IF_ERROR(workspace.take("gather_grad", dim + 1, rowStart));
  return workspace.take("gather_grad", count, order);
}

} // namespace

Status copyKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(cpu::checkCopy(args));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  const size_t bytes = x.sizeBytes();
  if (bytes == 0 || x.data == y.data)
    return Status::ok();
  // The CPU kernel uses memmove; a device copy between partly overlapping ranges is undefined,
  // so refuse it rather than corrupt the result (the memory planner never produces one).
  const auto *xb = static_cast<const uint8_t *>(x.data), *yb = static_cast<const uint8_t *>(y.data);
  if (xb < yb + bytes && yb < xb + bytes)
    return Status::error("copy: x and y partly overlap, which the cuda kernel does not support");
  return cudaStatus("copy", "cudaMemcpyAsync",
                    cudaMemcpyAsync(y.data, x.data, bytes, cudaMemcpyDeviceToDevice,
                                    streamOf(args)));
}

Status transposeKernel(KernelArgs &args) {
  cpu::StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(cpu::planTranspose(args, &loop));
  return copyThrough("transpose", loop, args.inputs[0].data, args.outputs[0].data,
                     args.inputs[0].dtype, streamOf(args));
}

Status sliceKernel(KernelArgs &args) {
  cpu::StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(cpu::planSlice(args, &loop));
  return copyThrough("slice", loop, args.inputs[0].data, args.outputs[0].data,
                     args.inputs[0].dtype, streamOf(args));
}

Status expandKernel(KernelArgs &args) {
  cpu::StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(cpu::planExpand(args, &loop));
  return copyThrough("expand", loop, args.inputs[0].data, args.outputs[0].data,
                     args.inputs[0].dtype, streamOf(args));
}

Status concatKernel(KernelArgs &args) {
  size_t ax = 0;
  SHARDC_RETURN_IF_ERROR(cpu::checkConcat(args, &ax));
  const Tensor &y = args.outputs[0];
  const int64_t outer = cpu::dimsProduct(y.shape, 0, ax);
  const int64_t inner = cpu::dimsProduct(y.shape, ax + 1, y.shape.size());
  const int64_t pitch = y.shape[ax] * inner;
  int64_t column = 0; // where this input's block starts in each row of y, in elements
  for (const Tensor &x : args.inputs) {
    const int64_t block = x.shape[ax] * inner;
    if (block > 0 && outer > 0) {
      // Operand 0 walks x contiguously, operand 1 places it in y.
      cpu::StridedLoop loop;
      loop.numOperands = 2;
      loop.dims = {outer, block};
      loop.strides[0] = {block, 1};
      loop.strides[1] = {pitch, 1};
      loop.baseOffsets[1] = column;
      loop.coalesce();
      SHARDC_RETURN_IF_ERROR(
          scatterThrough("concat", loop, x.data, y.data, y.dtype, streamOf(args)));
    }
    column += block;
  }
  return Status::ok();
}

Status splitKernel(KernelArgs &args) {
  size_t ax = 0;
  SHARDC_RETURN_IF_ERROR(cpu::checkSplit(args, &ax));
  const Tensor &x = args.inputs[0];
  const int64_t outer = cpu::dimsProduct(x.shape, 0, ax);
  const int64_t inner = cpu::dimsProduct(x.shape, ax + 1, x.shape.size());
  const int64_t pitch = x.shape[ax] * inner;
  int64_t column = 0;
  for (const Tensor &y : args.outputs) {
    const int64_t block = y.shape[ax] * inner;
    if (block > 0 && outer > 0)
      SHARDC_RETURN_IF_ERROR(copyThrough("split", slabWalk(outer, block, pitch, column), x.data,
                                         y.data, x.dtype, streamOf(args)));
    column += block;
  }
  return Status::ok();
}

Status triluKernel(KernelArgs &args) {
  int64_t upper = 0, k = 0;
  SHARDC_RETURN_IF_ERROR(cpu::checkTrilu(args, &upper, &k));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  const int64_t n = x.numel();
  if (n == 0)
    return Status::ok();
  const int64_t rows = x.shape[x.rank() - 2], cols = x.shape[x.rank() - 1];
  return visitElementSize(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    triluImpl<T><<<gridFor(n), kBlock, 0, streamOf(args)>>>(x.as<T>(), y.as<T>(), n, rows, cols,
                                                            upper != 0, k);
    return launchStatus("trilu");
  });
}

Status gatherKernel(KernelArgs &args) {
  const char *kernel = "gather";
  SHARDC_RETURN_IF_ERROR(cpu::checkOperands(kernel, args, cpu::Arity::exactly(2),
                                            cpu::Arity::exactly(1)));
  const Tensor &data = args.inputs[0], &indices = args.inputs[1], &y = args.outputs[0];
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(cpu::expectSameDtype(kernel, "data", data, "y", y));
  cpu::Workspace workspace(args);
  cpu::IndexBlock block;
  SHARDC_RETURN_IF_ERROR(cpu::checkGatherOperands(kernel, args, data.shape, axis, indices, y, "y",
                                                  &block));
  int64_t *rows = nullptr; // device memory
  SHARDC_RETURN_IF_ERROR(cpu::takeGatherRows(kernel, workspace, indices, &rows));
  std::vector<int64_t> hostRows;
  SHARDC_RETURN_IF_ERROR(hostGatherRows(kernel, axis, block, indices, streamOf(args), &hostRows));
  const int64_t n = y.numel();
  if (n == 0)
    return Status::ok();
  // From pageable memory: the call returns once hostRows is staged, so it may go out of scope.
  SHARDC_RETURN_IF_ERROR(cudaStatus(kernel, "copying the rows to the device",
                                    cudaMemcpyAsync(rows, hostRows.data(),
                                                    hostRows.size() * sizeof(int64_t),
                                                    cudaMemcpyHostToDevice, streamOf(args))));
  const size_t ax = static_cast<size_t>(axis);
  const int64_t inner = cpu::dimsProduct(data.shape, ax + 1, data.shape.size());
  return visitElementSize(data.dtype, [&](auto tag) {
    using T = decltype(tag);
    gatherImpl<T><<<gridFor(n), kBlock, 0, streamOf(args)>>>(
        data.as<T>(), rows, y.as<T>(), n, indices.numel(), data.shape[ax], inner);
    return launchStatus(kernel);
  });
}

Status gatherWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return cpu::gatherRowsWorkspace("gather", args, bytes);
}

Status gatherGradKernel(KernelArgs &args) {
  const char *kernel = "gather_grad";
  SHARDC_RETURN_IF_ERROR(cpu::checkOperands(kernel, args, cpu::Arity::exactly(2),
                                            cpu::Arity::exactly(1)));
  const Tensor &dy = args.inputs[0], &indices = args.inputs[1], &ddata = args.outputs[0];
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(cpu::expectDtype(kernel, "dy", dy, program::F32));
  SHARDC_RETURN_IF_ERROR(cpu::expectDtype(kernel, "ddata", ddata, program::F32));
  cpu::IndexBlock block;
  SHARDC_RETURN_IF_ERROR(cpu::checkGatherOperands(kernel, args, ddata.shape, axis, indices, dy,
                                                  "dy", &block));
  const size_t ax = static_cast<size_t>(axis);
  const int64_t count = indices.numel(), dim = ddata.shape[ax];
  cpu::Workspace workspace(args);
  int64_t *rowStart = nullptr, *order = nullptr; // device memory
  SHARDC_RETURN_IF_ERROR(takeGatherGradGroups(workspace, count, dim, &rowStart, &order));
  std::vector<int64_t> rows;
  SHARDC_RETURN_IF_ERROR(hostGatherRows(kernel, axis, block, indices, streamOf(args), &rows));
  const int64_t n = ddata.numel();
  if (n == 0)
    return Status::ok();
  // Counting sort of the indices by row, stable (ascending j within a row); other blocks' rows
  // (-1) are left out. One host vector holds rowStart then order, copied in one transfer.
  std::vector<int64_t> groups(static_cast<size_t>(dim + 1 + count), 0);
  int64_t *start = groups.data(), *sorted = groups.data() + dim + 1;
  for (int64_t j = 0; j < count; ++j)
    if (rows[j] >= 0)
      ++start[rows[j] + 1];
  for (int64_t r = 0; r < dim; ++r)
    start[r + 1] += start[r];
  std::vector<int64_t> next(start, start + dim);
  for (int64_t j = 0; j < count; ++j)
    if (rows[j] >= 0)
      sorted[next[rows[j]]++] = j;
  // rowStart and order are adjacent pieces of the workspace, but each piece is aligned: copy
  // them separately. From pageable memory, so `groups` may go out of scope once they return.
  SHARDC_RETURN_IF_ERROR(cudaStatus(kernel, "copying the row groups to the device",
                                    cudaMemcpyAsync(rowStart, start, (dim + 1) * sizeof(int64_t),
                                                    cudaMemcpyHostToDevice, streamOf(args))));
  if (count > 0)
    SHARDC_RETURN_IF_ERROR(cudaStatus(kernel, "copying the row groups to the device",
                                      cudaMemcpyAsync(order, sorted, count * sizeof(int64_t),
                                                      cudaMemcpyHostToDevice, streamOf(args))));
  const int64_t inner = cpu::dimsProduct(ddata.shape, ax + 1, ddata.shape.size());
  gatherGradImpl<<<gridFor(n), kBlock, 0, streamOf(args)>>>(dy.as<float>(), rowStart, order,
                                                             ddata.as<float>(), n, count, dim,
                                                             inner);
  return launchStatus(kernel);
}

Status gatherGradWorkspace(const KernelArgs &args, uint64_t *bytes) {
  SHARDC_RETURN_IF_ERROR(cpu::checkOperands("gather_grad", args, cpu::Arity::exactly(2),
                                            cpu::Arity::exactly(1)));
  const Tensor &dy = args.inputs[0], &indices = args.inputs[1], &ddata = args.outputs[0];
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  cpu::IndexBlock block;
  SHARDC_RETURN_IF_ERROR(cpu::checkGatherOperands("gather_grad", args, ddata.shape, axis, indices,
                                                  dy, "dy", &block));
  const int64_t dim = ddata.shape[static_cast<size_t>(axis)];
  return cpu::measureWorkspace(bytes, [&](cpu::Workspace &workspace) {
    int64_t *rowStart = nullptr, *order = nullptr;
    return takeGatherGradGroups(workspace, indices.numel(), dim, &rowStart, &order);
  });
}

} // namespace shardc::runtime::cuda
