// layer_norm and layer_norm_grad on CUDA. Contracts and messages are the CPU kernels'
// (cpu/norm_checks.h), and so is the arithmetic (docs/kernels.md; cpu/layer_norm.cpp,
// cpu/gradients_layer_norm.cpp): two-pass mean and variance, inv_std_dev = 1 / sqrt(var + eps),
// y = (x - mean) * inv_std_dev * scale + bias with the float statistics. One block per
// normalised row, fp32 accumulation. A scale or bias that broadcasts over the normalised dims
// is first expanded densely into the workspace, as on the CPU.
//
// layer_norm_grad's dscale and dbias are sums over rows: without atomics (deterministic), a
// grid of (column blocks x row chunks) writes per-chunk partial sums into the workspace, and a
// second kernel adds each column's chunks in order. A dscale/dbias that broadcasts is then
// summed onto its shape by one block per element.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/norm_checks.h"
#include "runtime/kernels/cpu/workspace.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"
#include "runtime/kernels/cuda/row_reduce.cuh"

namespace shardc::runtime::cuda {

namespace {

// Row chunks of layer_norm_grad's parameter sums: enough blocks to fill a GPU for short rows,
// few enough that the partials (chunks x normSize floats) stay small.
constexpr int64_t kMaxChunks = 128;
int64_t chunksFor(int64_t rows) { return rows < 1 ? 1 : (rows > kMaxChunks ? kMaxChunks : rows); }

// dst[i] = src at the broadcast position of dense element i of the normalised dims.
__global__ void expandParam(const float *__restrict__ src, float *__restrict__ dst,
                            DeviceLoop loop) {
  SHARDC_GRID_STRIDE(i, loop.numel) {
    int64_t offsets[1];
    loopOffsets<1>(loop, i, offsets);
    dst[i] = src[offsets[0]];
  }
}

// A broadcast parameter laid out densely: in place when dense, else expanded into `storage`.
Status denseParam(const char *kernel, const Tensor &param, const cpu::StridedLoop &plan,
                  int64_t normSize, float *storage, cudaStream_t stream, const float **out) {
  if (param.numel() == normSize) {
    *out = param.as<float>();
    return Status::ok();
  }
  *out = storage;
  DeviceLoop loop;
  SHARDC_RETURN_IF_ERROR(toDeviceLoop(kernel, plan, &loop));
  if (loop.numel == 0)
    return Status::ok();
  expandParam<<<gridFor(loop.numel), kBlock, 0, stream>>>(param.as<float>(), storage, loop);
  return launchStatus(kernel);
}

__global__ void layerNormRows(const float *__restrict__ x, const float *__restrict__ scale,
                              const float *__restrict__ bias, float *__restrict__ y,
                              float *__restrict__ meanOut, float *__restrict__ invStdOut,
                              int64_t rows, int64_t n, float epsilon) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *row = x + r * n;
    float *out = y + r * n;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      sum += row[i];
    // 0 / 0 = NaN statistics for an empty row, as on the CPU.
    const float mean = blockReduce(sum, SumOp(), 0.0f) / static_cast<float>(n);
    float squares = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float d = row[i] - mean;
      squares += d * d;
    }
    const float var = blockReduce(squares, SumOp(), 0.0f) / static_cast<float>(n);
    const float invStd = 1.0f / sqrtf(var + epsilon);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float v = (row[i] - mean) * invStd * scale[i];
      out[i] = bias ? v + bias[i] : v;
    }
    if (threadIdx.x == 0) {
      if (meanOut)
        meanOut[r] = mean;
      if (invStdOut)
        invStdOut[r] = invStd;
    }
  }
}

// dx = inv / N * (N * g - sum(g) - xhat * sum(g * xhat)), g = dy * scale.
__global__ void layerNormGradRows(const float *__restrict__ dy, const float *__restrict__ x,
                                  const float *__restrict__ scale, const float *__restrict__ mean,
                                  const float *__restrict__ invStd, float *__restrict__ dx,
                                  int64_t rows, int64_t n) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *dyRow = dy + r * n, *xRow = x + r * n;
    const float m = mean[r], inv = invStd[r];
    float sumG = 0.0f, sumGXhat = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float g = dyRow[i] * scale[i];
      sumG += g;
      sumGXhat += g * ((xRow[i] - m) * inv);
    }
    const float meanG = blockReduce(sumG, SumOp(), 0.0f) / static_cast<float>(n);
    const float meanGXhat = blockReduce(sumGXhat, SumOp(), 0.0f) / static_cast<float>(n);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float g = dyRow[i] * scale[i];
      const float h = (xRow[i] - m) * inv;
      dx[r * n + i] = inv * (g - meanG - h * meanGXhat);
    }
  }
}

// Per row chunk (blockIdx.y) and column: the partial sums of dy * xhat and of dy.
__global__ void paramPartials(const float *__restrict__ dy, const float *__restrict__ x,
                              const float *__restrict__ mean, const float *__restrict__ invStd,
                              float *__restrict__ scalePartial, float *__restrict__ biasPartial,
                              int64_t rows, int64_t n, int64_t rowsPerChunk) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= n)
    return;
  const int64_t chunk = blockIdx.y;
  const int64_t begin = chunk * rowsPerChunk;
  const int64_t end = begin + rowsPerChunk < rows ? begin + rowsPerChunk : rows;
  float sumScale = 0.0f, sumBias = 0.0f;
  for (int64_t r = begin; r < end; ++r) {
    const float d = dy[r * n + col];
    sumScale += d * ((x[r * n + col] - mean[r]) * invStd[r]);
    sumBias += d;
  }
  if (scalePartial)
    scalePartial[chunk * n + col] = sumScale;
  if (biasPartial)
    biasPartial[chunk * n + col] = sumBias;
}

// out[col] = the chunks' partials of column col, added in chunk order.
__global__ void sumChunks(const float *__restrict__ partial, float *__restrict__ out, int64_t n,
                          int64_t chunks) {
  SHARDC_GRID_STRIDE(col, n) {
    float sum = 0.0f;
    for (int64_t k = 0; k < chunks; ++k)
      sum += partial[k * n + col];
    out[col] = sum;
  }
}

// out[p] = the sum of the dense values whose broadcast position is p (one block per element
// of the broadcast parameter; only for dscale/dbias that broadcast, which are small).
__global__ void sumOntoParam(const float *__restrict__ dense, float *__restrict__ out,
                             int64_t outNumel, DeviceLoop loop) {
  for (int64_t p = blockIdx.x; p < outNumel; p += gridDim.x) {
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < loop.numel; i += blockDim.x) {
      int64_t offsets[1];
      loopOffsets<1>(loop, i, offsets);
      if (offsets[0] == p)
        sum += dense[i];
    }
    sum = blockReduce(sum, SumOp(), 0.0f);
    if (threadIdx.x == 0)
      out[p] = sum;
  }
}

// ---- workspace ---------------------------------------------------------------------------------

struct NormScratch {
  float *scale = nullptr, *bias = nullptr;
};

Status takeNormScratch(cpu::Workspace &workspace, const KernelArgs &args,
                       const cpu::LayerNormPlan &plan, NormScratch *scratch) {
  const Tensor &scale = args.inputs[1];
  if (scale.numel() != plan.normSize)
    SHARDC_RETURN_IF_ERROR(workspace.take("layer_norm", plan.normSize, &scratch->scale));
  if (args.inputs.size() > 2 && args.inputs[2].present() &&
      args.inputs[2].numel() != plan.normSize)
    SHARDC_RETURN_IF_ERROR(workspace.take("layer_norm", plan.normSize, &scratch->bias));
  return Status::ok();
}

constexpr const char *kGrad = "layer_norm_grad";

struct GradScratch {
  float *scale = nullptr;                          // a broadcast scale, dense
  float *scalePartial = nullptr, *biasPartial = nullptr; // chunks x normSize
  float *scaleDense = nullptr, *biasDense = nullptr;     // when dscale / dbias broadcast
};

Status takeGradScratch(cpu::Workspace &workspace, const KernelArgs &args,
                       const cpu::LayerNormPlan &plan, GradScratch *scratch) {
  const Tensor absent;
  const Tensor &scale = args.inputs[2];
  const Tensor &dscale = args.outputs.size() > 1 ? args.outputs[1] : absent;
  const Tensor &dbias = args.outputs.size() > 2 ? args.outputs[2] : absent;
  const int64_t n = plan.normSize, chunks = chunksFor(plan.rows);
  if (scale.numel() != n)
    SHARDC_RETURN_IF_ERROR(workspace.take(kGrad, n, &scratch->scale));
  if (dscale.present()) {
    SHARDC_RETURN_IF_ERROR(workspace.take(kGrad, chunks * n, &scratch->scalePartial));
    if (dscale.numel() != n)
      SHARDC_RETURN_IF_ERROR(workspace.take(kGrad, n, &scratch->scaleDense));
  }
  if (dbias.present()) {
    SHARDC_RETURN_IF_ERROR(workspace.take(kGrad, chunks * n, &scratch->biasPartial));
    if (dbias.numel() != n)
      SHARDC_RETURN_IF_ERROR(workspace.take(kGrad, n, &scratch->biasDense));
  }
  return Status::ok();
}

// Sums the chunks' partials of one parameter gradient onto `out` (dense, or broadcast through
// `plan`, via `dense`).
Status finishParamGrad(const float *partial, float *dense, const Tensor &out,
                       const cpu::StridedLoop &plan, int64_t n, int64_t chunks,
                       cudaStream_t stream) {
  const bool isDense = out.numel() == n;
  if (n > 0) {
    sumChunks<<<gridFor(n), kBlock, 0, stream>>>(partial, isDense ? out.as<float>() : dense, n,
                                                 chunks);
    SHARDC_RETURN_IF_ERROR(launchStatus(kGrad));
  }
  if (isDense || out.numel() == 0)
    return Status::ok();
  DeviceLoop loop;
  SHARDC_RETURN_IF_ERROR(toDeviceLoop(kGrad, plan, &loop));
  sumOntoParam<<<rowGrid(out.numel()), kBlock, 0, stream>>>(dense, out.as<float>(), out.numel(),
                                                            loop);
  return launchStatus(kGrad);
}

} // namespace

Status layerNormWorkspace(const KernelArgs &args, uint64_t *bytes) {
  cpu::LayerNormPlan plan;
  SHARDC_RETURN_IF_ERROR(cpu::checkLayerNorm(args, &plan));
  NormScratch scratch;
  return cpu::measureWorkspace(bytes, [&](cpu::Workspace &workspace) {
    return takeNormScratch(workspace, args, plan, &scratch);
  });
}

Status layerNormKernel(KernelArgs &args) {
  const char *kernel = "layer_norm";
  cpu::LayerNormPlan plan;
  SHARDC_RETURN_IF_ERROR(cpu::checkLayerNorm(args, &plan));
  cpu::Workspace workspace(args);
  NormScratch scratch;
  SHARDC_RETURN_IF_ERROR(takeNormScratch(workspace, args, plan, &scratch));
  const cudaStream_t stream = streamOf(args);
  const Tensor absent;
  const Tensor &bias = args.inputs.size() > 2 ? args.inputs[2] : absent;
  const Tensor &meanOut = args.outputs.size() > 1 ? args.outputs[1] : absent;
  const Tensor &invStdOut = args.outputs.size() > 2 ? args.outputs[2] : absent;
  if (plan.rows == 0)
    return Status::ok();
  const float *scale = nullptr, *biasData = nullptr;
  SHARDC_RETURN_IF_ERROR(denseParam(kernel, args.inputs[1], plan.scaleLoop, plan.normSize,
                                    scratch.scale, stream, &scale));
  if (bias.present())
    SHARDC_RETURN_IF_ERROR(denseParam(kernel, bias, plan.biasLoop, plan.normSize, scratch.bias,
                                      stream, &biasData));
  layerNormRows<<<rowGrid(plan.rows), rowBlock(plan.normSize), 0, stream>>>(
      args.inputs[0].as<float>(), scale, biasData, args.outputs[0].as<float>(),
      meanOut.as<float>(), invStdOut.as<float>(), plan.rows, plan.normSize, plan.epsilon);
  return launchStatus(kernel);
}

Status layerNormGradWorkspace(const KernelArgs &args, uint64_t *bytes) {
  cpu::LayerNormPlan plan;
  SHARDC_RETURN_IF_ERROR(cpu::checkLayerNormGrad(args, &plan));
  GradScratch scratch;
  return cpu::measureWorkspace(bytes, [&](cpu::Workspace &workspace) {
    return takeGradScratch(workspace, args, plan, &scratch);
  });
}

Status layerNormGradKernel(KernelArgs &args) {
  cpu::LayerNormPlan plan;
  SHARDC_RETURN_IF_ERROR(cpu::checkLayerNormGrad(args, &plan));
  cpu::Workspace workspace(args);
  GradScratch scratch;
  SHARDC_RETURN_IF_ERROR(takeGradScratch(workspace, args, plan, &scratch));
  const cudaStream_t stream = streamOf(args);
  const Tensor absent;
  const Tensor &dy = args.inputs[0], &x = args.inputs[1];
  const Tensor &mean = args.inputs[3], &invStd = args.inputs[4];
  const Tensor &dx = args.outputs.size() > 0 ? args.outputs[0] : absent;
  const Tensor &dscale = args.outputs.size() > 1 ? args.outputs[1] : absent;
  const Tensor &dbias = args.outputs.size() > 2 ? args.outputs[2] : absent;
  const int64_t rows = plan.rows, n = plan.normSize;

  if (dx.present() && rows > 0 && n > 0) {
    const float *scale = nullptr;
    SHARDC_RETURN_IF_ERROR(
        denseParam(kGrad, args.inputs[2], plan.scaleLoop, n, scratch.scale, stream, &scale));
    layerNormGradRows<<<rowGrid(rows), rowBlock(n), 0, stream>>>(
        dy.as<float>(), x.as<float>(), scale, mean.as<float>(), invStd.as<float>(),
        dx.as<float>(), rows, n);
    SHARDC_RETURN_IF_ERROR(launchStatus(kGrad));
  }
  if (!dscale.present() && !dbias.present())
    return Status::ok();
  const int64_t chunks = chunksFor(rows);
  const int64_t rowsPerChunk = (rows + chunks - 1) / chunks;
  if (n > 0) {
    const dim3 grid(static_cast<unsigned>((n + kBlock - 1) / kBlock),
                    static_cast<unsigned>(chunks));
    paramPartials<<<grid, kBlock, 0, stream>>>(dy.as<float>(), x.as<float>(), mean.as<float>(),
                                                invStd.as<float>(), scratch.scalePartial,
                                                scratch.biasPartial, rows, n, rowsPerChunk);
    SHARDC_RETURN_IF_ERROR(launchStatus(kGrad));
  }
  if (dscale.present())
    SHARDC_RETURN_IF_ERROR(finishParamGrad(scratch.scalePartial, scratch.scaleDense, dscale,
                                           plan.scaleLoop, n, chunks, stream));
  if (dbias.present())
    SHARDC_RETURN_IF_ERROR(finishParamGrad(scratch.biasPartial, scratch.biasDense, dbias,
                                           plan.biasLoop, n, chunks, stream));
  return Status::ok();
}

} // namespace shardc::runtime::cuda
