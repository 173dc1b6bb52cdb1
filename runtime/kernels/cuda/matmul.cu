// matmul (NumPy semantics) and gemm (ONNX Gemm) on cuBLASLt. Contracts (and their error
// messages) are the CPU kernels', from cpu/matmul_checks.h.
//
// Every product is computed in f32 (CUBLAS_COMPUTE_32F, never TF32): 16-bit operands enter as
// they are (their products are exact in f32) and a 16-bit result is rounded once from the f32
// accumulator, which is the CPU kernel's math up to the order of the f32 sums. cuBLASLt takes
// a and b of one type, and with f32 operands only an f32 result, so
//  * operands of different dtypes are both widened (exactly) to f32 in the workspace;
//  * a result cuBLASLt cannot write from these operands (f32 operands, or bf16 operands and an
//    f16 result, ...) and gemm's 16-bit result with a c operand (c is f32 and must enter the sum
//    unrounded, as on the CPU) are computed into an f32 copy in the workspace, then rounded.
//
// Row-major tensors: row-major y[m,n] is column-major y^T[n,m], so y^T = op(b)^T op(a)^T is one
// column-major product with b in cuBLASLt's "A" place and a in its "B" place.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/matmul_checks.h"
#include "runtime/kernels/cpu/workspace.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"
#include "runtime/kernels/cuda/cublaslt_library.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace shardc::runtime::cuda {

namespace {

// cuBLASLt's workspace: what its heuristic may use (32 MiB is NVIDIA's advice for Hopper), plus
// room to round the piece up to the 256-byte alignment cublasLtMatmul requires.
constexpr uint64_t kLtWorkspaceBytes = 32ull << 20;
constexpr uint64_t kLtWorkspaceAlignment = 256;

// ---- the library and its errors ----------------------------------------------------------------

// cuBLASLt's functions. Every kernel opens the library in ltHandle (or fails there) before it
// calls any of them, so here it is open.
const CublasLtLibrary &lib() {
  const CublasLtLibrary *library = nullptr;
  const Status opened = openCublasLt("matmul", &library);
  assert(opened.isOk() && library != nullptr);
  (void)opened;
  return *library;
}

Status ltStatus(const char *kernel, const char *what, cublasStatus_t status) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::ok();
  return Status::error(std::string(kernel) + ": " + what + " failed: " +
                       lib().GetStatusName(status) + ": " + lib().GetStatusString(status));
}

// ---- the handle --------------------------------------------------------------------------------

// One handle per thread and device, created on first use. The handles are never destroyed: a
// thread_local destructor could run after the CUDA runtime has shut down at process exit, and a
// handle is small.
Status ltHandle(const char *kernel, int *deviceOut, cublasLtHandle_t *out) {
  const CublasLtLibrary *library = nullptr;
  SHARDC_RETURN_IF_ERROR(openCublasLt(kernel, &library));
  int device = 0;
  SHARDC_RETURN_IF_ERROR(cudaStatus(kernel, "cudaGetDevice", cudaGetDevice(&device)));
  thread_local std::unordered_map<int, cublasLtHandle_t> handles;
  auto it = handles.find(device);
  if (it == handles.end()) {
    cublasLtHandle_t handle = nullptr;
    SHARDC_RETURN_IF_ERROR(ltStatus(kernel, "cublasLtCreate", lib().Create(&handle)));
    it = handles.emplace(device, handle).first;
  }
  *deviceOut = device;
  *out = it->second;
  return Status::ok();
}

// ---- descriptors (destroyed on every path) -----------------------------------------------------

struct MatmulDesc {
  cublasLtMatmulDesc_t desc = nullptr;
  ~MatmulDesc() {
    if (desc)
      lib().MatmulDescDestroy(desc);
  }
};
struct Layout {
  cublasLtMatrixLayout_t layout = nullptr;
  ~Layout() {
    if (layout)
      lib().MatrixLayoutDestroy(layout);
  }
};
struct Preference {
  cublasLtMatmulPreference_t pref = nullptr;
  ~Preference() {
    if (pref)
      lib().MatmulPreferenceDestroy(pref);
  }
};

cudaDataType_t cudaType(DType dtype) {
  switch (dtype) {
  case program::BF16:
    return CUDA_R_16BF;
  case program::F16:
    return CUDA_R_16F;
  default:
    return CUDA_R_32F;
  }
}

// The alignment cuBLASLt may assume for a matrix at `data` whose batch members lie `strideBytes`
// apart (0: no batch): the largest power of two, up to 256, dividing both.
uint32_t alignmentOf(const void *data, uint64_t strideBytes) {
  const uint64_t bits = reinterpret_cast<uintptr_t>(data) | strideBytes | 256;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

// ---- one product -------------------------------------------------------------------------------

// y[m,n] = alpha * op(a)[m,k] * op(b)[k,n] + beta * y for `batch` row-major products whose
// matrices lie strideA, strideB, strideY elements apart. a and b are of dtype abType, y of yType,
// a combination cuBLASLt supports with CUBLAS_COMPUTE_32F (see planProduct).
struct Product {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  DType abType = program::F32, yType = program::F32;
  const void *a = nullptr, *b = nullptr;
  void *y = nullptr;
  int64_t batch = 1, strideA = 0, strideB = 0, strideY = 0;
  float alpha = 1, beta = 0;
};

struct LtContext {
  cublasLtHandle_t handle = nullptr;
  int device = 0;
  void *workspace = nullptr; // kLtWorkspaceBytes, 256-byte aligned
  cudaStream_t stream = nullptr;
};

Status makeLayout(const char *kernel, DType dtype, int64_t rows, int64_t cols, int64_t ld,
                  int64_t batch, int64_t stride, Layout *out) {
  SHARDC_RETURN_IF_ERROR(ltStatus(kernel, "cublasLtMatrixLayoutCreate",
                                  lib().MatrixLayoutCreate(&out->layout, cudaType(dtype),
                                                             static_cast<uint64_t>(rows),
                                                             static_cast<uint64_t>(cols), ld)));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    SHARDC_RETURN_IF_ERROR(ltStatus(
        kernel, "cublasLtMatrixLayoutSetAttribute",
        lib().MatrixLayoutSetAttribute(out->layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                         sizeof(count))));
    SHARDC_RETURN_IF_ERROR(ltStatus(
        kernel, "cublasLtMatrixLayoutSetAttribute",
        lib().MatrixLayoutSetAttribute(out->layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                         &stride, sizeof(stride))));
  }
  return Status::ok();
}

// The heuristic's first choice per problem, per thread (the handles are per thread too). The
// key is everything the heuristic is given; the map is cleared when it grows past a bound, so a
// program with ever-changing shapes cannot grow it without limit.
using AlgoKey = std::vector<int64_t>;
std::map<AlgoKey, cublasLtMatmulAlgo_t> &algoCache() {
  thread_local std::map<AlgoKey, cublasLtMatmulAlgo_t> cache;
  return cache;
}
constexpr size_t kAlgoCacheLimit = 4096;

Status runProduct(const char *kernel, const LtContext &lt, const Product &p) {
  const size_t abSize = dtypeSize(p.abType), ySize = dtypeSize(p.yType);
  // cuBLASLt's "A" is b: stored row-major [k,n] (or [n,k] transposed), i.e. column-major
  // [n rows, k cols] (or [k, n]). Its "B" is a: row-major [m,k] (or [k,m]), column-major [k, m]
  // (or [m, k]). D is y: column-major [n, m], leading dimension n.
  const int64_t rowsB = p.transB ? p.k : p.n, colsB = p.transB ? p.n : p.k;
  const int64_t rowsA = p.transA ? p.m : p.k, colsA = p.transA ? p.k : p.m;
  const cublasOperation_t opLtA = p.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opLtB = p.transA ? CUBLAS_OP_T : CUBLAS_OP_N;

  MatmulDesc desc;
  SHARDC_RETURN_IF_ERROR(ltStatus(kernel, "cublasLtMatmulDescCreate",
                                  lib().MatmulDescCreate(&desc.desc, CUBLAS_COMPUTE_32F,
                                                           CUDA_R_32F)));
  SHARDC_RETURN_IF_ERROR(ltStatus(
      kernel, "cublasLtMatmulDescSetAttribute",
      lib().MatmulDescSetAttribute(desc.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opLtA, sizeof(opLtA))));
  SHARDC_RETURN_IF_ERROR(ltStatus(
      kernel, "cublasLtMatmulDescSetAttribute",
      lib().MatmulDescSetAttribute(desc.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opLtB, sizeof(opLtB))));
  Layout layoutLtA, layoutLtB, layoutY;
  SHARDC_RETURN_IF_ERROR(
      makeLayout(kernel, p.abType, rowsB, colsB, rowsB, p.batch, p.strideB, &layoutLtA));
  SHARDC_RETURN_IF_ERROR(
      makeLayout(kernel, p.abType, rowsA, colsA, rowsA, p.batch, p.strideA, &layoutLtB));
  SHARDC_RETURN_IF_ERROR(makeLayout(kernel, p.yType, p.n, p.m, p.n, p.batch, p.strideY, &layoutY));

  const bool batched = p.batch > 1;
  const uint32_t alignLtA = alignmentOf(p.b, batched ? p.strideB * abSize : 0);
  const uint32_t alignLtB = alignmentOf(p.a, batched ? p.strideA * abSize : 0);
  const uint32_t alignY = alignmentOf(p.y, batched ? p.strideY * ySize : 0);

  const AlgoKey key = {lt.device, p.m,        p.n,         p.k,      p.transA, p.transB,
                       p.abType,  p.yType,    p.batch,     p.strideA, p.strideB, p.strideY,
                       alignLtA,  alignLtB,   alignY,      p.beta != 0.0f};
  auto &cache = algoCache();
  auto it = cache.find(key);
  if (it == cache.end()) {
    Preference pref;
    SHARDC_RETURN_IF_ERROR(ltStatus(kernel, "cublasLtMatmulPreferenceCreate",
                                    lib().MatmulPreferenceCreate(&pref.pref)));
    const uint64_t workspaceBytes = kLtWorkspaceBytes;
    SHARDC_RETURN_IF_ERROR(ltStatus(
        kernel, "cublasLtMatmulPreferenceSetAttribute",
        lib().MatmulPreferenceSetAttribute(pref.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspaceBytes, sizeof(workspaceBytes))));
    // Batch members and tensors at odd offsets may be less aligned than cuBLASLt's default
    // assumption (256 bytes); say what they are so it picks an algorithm that reads them.
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignLtA},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignLtB},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignY},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignY},
    };
    for (const auto &[attribute, bytes] : alignments)
      SHARDC_RETURN_IF_ERROR(
          ltStatus(kernel, "cublasLtMatmulPreferenceSetAttribute",
                   lib().MatmulPreferenceSetAttribute(pref.pref, attribute, &bytes,
                                                        sizeof(bytes))));
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    SHARDC_RETURN_IF_ERROR(ltStatus(
        kernel, "cublasLtMatmulAlgoGetHeuristic",
        lib().MatmulAlgoGetHeuristic(lt.handle, desc.desc, layoutLtA.layout, layoutLtB.layout,
                                       layoutY.layout, layoutY.layout, pref.pref, 1, &result,
                                       &found)));
    if (found < 1)
      return Status::error(std::string(kernel) + ": cuBLASLt has no algorithm for [" +
                           std::to_string(p.m) + "x" + std::to_string(p.k) + "] x [" +
                           std::to_string(p.k) + "x" + std::to_string(p.n) + "] (" +
                           dtypeName(p.abType) + " -> " + dtypeName(p.yType) + ")");
    if (cache.size() >= kAlgoCacheLimit)
      cache.clear();
    it = cache.emplace(key, result.algo).first;
  }
  // C is y itself: gemm's c is already there (beta scales it); with beta 0 it is not read.
  return ltStatus(kernel, "cublasLtMatmul",
                  lib().Matmul(lt.handle, desc.desc, &p.alpha, p.b, layoutLtA.layout, p.a,
                                 layoutLtB.layout, &p.beta, p.y, layoutY.layout, p.y,
                                 layoutY.layout, &it->second, lt.workspace, kLtWorkspaceBytes,
                                 lt.stream));
}

// ---- conversions and gemm's c ------------------------------------------------------------------

__device__ inline float widen(bf16 v) { return __bfloat162float(v); }
__device__ inline float widen(f16 v) { return __half2float(v); }

template <typename From> __global__ void widenKernel(const From *x, float *y, int64_t n) {
  SHARDC_GRID_STRIDE(i, n) { y[i] = widen(x[i]); }
}

// Round to nearest even, as the CPU kernels' narrowing does.
template <typename To> __device__ inline To narrow(float v);
template <> __device__ inline bf16 narrow<bf16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ inline f16 narrow<f16>(float v) { return __float2half_rn(v); }

template <typename To> __global__ void narrowKernel(const float *x, To *y, int64_t n) {
  SHARDC_GRID_STRIDE(i, n) { y[i] = narrow<To>(x[i]); }
}

// y = scale * (c broadcast to y's shape); scale 0 writes zeros (BLAS's beta = 0 reads nothing,
// so a NaN in c does not show), scale 1 copies c exactly.
__global__ void fillFromCKernel(const float *c, float *y, DeviceLoop loop, float scale) {
  SHARDC_GRID_STRIDE(i, loop.numel) {
    int64_t offsets[1];
    loopOffsets<1>(loop, i, offsets);
    y[i] = scale == 0.0f ? 0.0f : scale * c[offsets[0]];
  }
}

// f32 copy of the 16-bit tensor t into `out` (n elements).
Status launchWiden(const char *kernel, const Tensor &t, float *out, cudaStream_t stream) {
  const int64_t n = t.numel();
  if (n == 0)
    return Status::ok();
  if (t.dtype == program::BF16)
    widenKernel<bf16><<<gridFor(n), kBlock, 0, stream>>>(t.as<bf16>(), out, n);
  else
    widenKernel<f16><<<gridFor(n), kBlock, 0, stream>>>(t.as<f16>(), out, n);
  return launchStatus(kernel);
}

// Rounds the f32 `staged` into the 16-bit y.
Status launchNarrow(const char *kernel, const float *staged, const Tensor &y, cudaStream_t stream) {
  const int64_t n = y.numel();
  if (n == 0)
    return Status::ok();
  if (y.dtype == program::BF16)
    narrowKernel<bf16><<<gridFor(n), kBlock, 0, stream>>>(staged, y.as<bf16>(), n);
  else
    narrowKernel<f16><<<gridFor(n), kBlock, 0, stream>>>(staged, y.as<f16>(), n);
  return launchStatus(kernel);
}

// ---- planning ----------------------------------------------------------------------------------

// How a product's tensors reach cuBLASLt (module comment): the A/B type, the type cuBLASLt
// writes, and which tensors go through f32 copies in the workspace.
struct ProductPlan {
  DType abType = program::F32, ltYType = program::F32;
  bool widenA = false, widenB = false, stageY = false;
};

bool ltSupports(DType ab, DType y) {
  return y == program::F32 || ab == y; // COMPUTE_32F: f32->f32, bf16->bf16|f32, f16->f16|f32
}

ProductPlan planProduct(const Tensor &a, const Tensor &b, const Tensor &y, bool hasC) {
  ProductPlan plan;
  if (a.dtype == b.dtype) {
    plan.abType = a.dtype;
  } else {
    plan.abType = program::F32;
    plan.widenA = a.dtype != program::F32;
    plan.widenB = b.dtype != program::F32;
  }
  plan.stageY = y.dtype != program::F32 && (hasC || !ltSupports(plan.abType, y.dtype));
  plan.ltYType = plan.stageY ? program::F32 : y.dtype;
  return plan;
}

// The workspace pieces, taken in this order by the kernels and their size functions alike:
// cuBLASLt's workspace, then the f32 copies of a, b and y that the plan asks for.
struct Pieces {
  void *lt = nullptr;
  float *a = nullptr, *b = nullptr, *y = nullptr;
};

Status takePieces(const char *kernel, cpu::Workspace &workspace, const Tensor &a, const Tensor &b,
                  const Tensor &y, const ProductPlan &plan, Pieces *pieces) {
  uint8_t *lt = nullptr;
  SHARDC_RETURN_IF_ERROR(workspace.take(
      kernel, static_cast<int64_t>(kLtWorkspaceBytes + kLtWorkspaceAlignment), &lt));
  const uintptr_t address = reinterpret_cast<uintptr_t>(lt);
  pieces->lt = lt == nullptr ? nullptr
                             : lt + ((kLtWorkspaceAlignment - address % kLtWorkspaceAlignment) %
                                     kLtWorkspaceAlignment);
  if (plan.widenA)
    SHARDC_RETURN_IF_ERROR(workspace.take(kernel, a.numel(), &pieces->a));
  if (plan.widenB)
    SHARDC_RETURN_IF_ERROR(workspace.take(kernel, b.numel(), &pieces->b));
  if (plan.stageY)
    SHARDC_RETURN_IF_ERROR(workspace.take(kernel, y.numel(), &pieces->y));
  return Status::ok();
}

// Takes the pieces, widens the operands the plan asks for, and gets the handle: what both
// kernels do before their products. aData/bData/yData: what cuBLASLt reads and writes.
Status prepare(const char *kernel, KernelArgs &args, const ProductPlan &plan, LtContext *lt,
               Pieces *pieces, const void **aData, const void **bData, void **yData) {
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  cpu::Workspace workspace(args);
  SHARDC_RETURN_IF_ERROR(takePieces(kernel, workspace, a, b, y, plan, pieces));
  lt->stream = streamOf(args);
  lt->workspace = pieces->lt;
  SHARDC_RETURN_IF_ERROR(ltHandle(kernel, &lt->device, &lt->handle));
  *aData = a.data;
  *bData = b.data;
  *yData = plan.stageY ? static_cast<void *>(pieces->y) : y.data;
  if (plan.widenA) {
    SHARDC_RETURN_IF_ERROR(launchWiden(kernel, a, pieces->a, lt->stream));
    *aData = pieces->a;
  }
  if (plan.widenB) {
    SHARDC_RETURN_IF_ERROR(launchWiden(kernel, b, pieces->b, lt->stream));
    *bData = pieces->b;
  }
  return Status::ok();
}

const void *offsetBy(const void *base, int64_t elements, size_t elementSize) {
  return static_cast<const uint8_t *>(base) + elements * static_cast<int64_t>(elementSize);
}

} // namespace

// ---- matmul ------------------------------------------------------------------------------------

Status matmulWorkspace(const KernelArgs &args, uint64_t *bytes) {
  cpu::MatmulShape shape;
  SHARDC_RETURN_IF_ERROR(cpu::checkMatmul(args, &shape));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  const ProductPlan plan = planProduct(a, b, y, false);
  Pieces pieces;
  return cpu::measureWorkspace(bytes, [&](cpu::Workspace &workspace) {
    return takePieces("matmul", workspace, a, b, y, plan, &pieces);
  });
}

Status matmulKernel(KernelArgs &args) {
  cpu::MatmulShape shape;
  SHARDC_RETURN_IF_ERROR(cpu::checkMatmul(args, &shape));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  if (y.numel() == 0)
    return Status::ok();
  const ProductPlan plan = planProduct(a, b, y, false);
  LtContext lt;
  Pieces pieces;
  const void *aData = nullptr, *bData = nullptr;
  void *yData = nullptr;
  SHARDC_RETURN_IF_ERROR(prepare("matmul", args, plan, &lt, &pieces, &aData, &bData, &yData));
  const int64_t m = shape.m, n = shape.n, k = shape.k;

  if (k == 0) {
    // An empty sum: zeros (all-zero bits in every dtype), as sgemm writes.
    return cudaStatus("matmul", "cudaMemsetAsync",
                      cudaMemsetAsync(y.data, 0, y.sizeBytes(), lt.stream));
  }
  Product p;
  p.k = k;
  p.n = n;
  p.transA = shape.transA;
  p.transB = shape.transB;
  p.abType = plan.abType;
  p.yType = plan.ltYType;
  if (shape.tall) {
    // b shared by every batch, a's batches contiguous: one [batch*m, k] x [k, n] product.
    p.m = shape.rows();
    p.a = aData;
    p.b = bData;
    p.y = yData;
    SHARDC_RETURN_IF_ERROR(runProduct("matmul", lt, p));
  } else {
    p.m = m;
    const size_t abSize = dtypeSize(plan.abType), ySize = dtypeSize(plan.ltYType);
    // The broadcast walk over the batch dims yields, per innermost row, the first matrix of a
    // and b and their strides (in matrices). A row whose operands both advance is one strided
    // batched call. A broadcast operand (stride 0) is one call per matrix: cuBLASLt does not
    // document zero batch strides, so they are not relied on.
    cpu::StridedLoop loop;
    SHARDC_RETURN_IF_ERROR(cpu::planBroadcast({&shape.batchA, &shape.batchB}, shape.batch, &loop));
    struct Row {
      int64_t outOffset, in[2], stride[2], count;
    };
    std::vector<Row> rows;
    cpu::forEachRow(loop, [&](int64_t outOffset, const int64_t *in, const int64_t *stride,
                              int64_t count) {
      rows.push_back({outOffset, {in[0], in[1]}, {stride[0], stride[1]}, count});
    });
    const int64_t maxBatch = std::numeric_limits<int32_t>::max();
    for (const Row &row : rows) {
      const bool strided = row.stride[0] != 0 && row.stride[1] != 0;
      for (int64_t first = 0; first < row.count;) {
        const int64_t batch = strided ? std::min(row.count - first, maxBatch) : 1;
        p.a = offsetBy(aData, (row.in[0] + first * row.stride[0]) * m * k, abSize);
        p.b = offsetBy(bData, (row.in[1] + first * row.stride[1]) * k * n, abSize);
        p.y = const_cast<void *>(offsetBy(yData, (row.outOffset + first) * m * n, ySize));
        p.batch = batch;
        p.strideA = row.stride[0] * m * k;
        p.strideB = row.stride[1] * k * n;
        p.strideY = m * n;
        SHARDC_RETURN_IF_ERROR(runProduct("matmul", lt, p));
        first += batch;
      }
    }
  }
  if (plan.stageY)
    return launchNarrow("matmul", pieces.y, y, lt.stream);
  return Status::ok();
}

// ---- gemm --------------------------------------------------------------------------------------

Status gemmWorkspace(const KernelArgs &args, uint64_t *bytes) {
  cpu::GemmShape shape;
  SHARDC_RETURN_IF_ERROR(cpu::checkGemm(args, &shape));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  const bool hasC = args.inputs.size() > 2 && args.inputs[2].present();
  const ProductPlan plan = planProduct(a, b, y, hasC);
  Pieces pieces;
  return cpu::measureWorkspace(bytes, [&](cpu::Workspace &workspace) {
    return takePieces("gemm", workspace, a, b, y, plan, &pieces);
  });
}

Status gemmKernel(KernelArgs &args) {
  cpu::GemmShape shape;
  SHARDC_RETURN_IF_ERROR(cpu::checkGemm(args, &shape));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  const Tensor noC;
  const Tensor &c = args.inputs.size() > 2 ? args.inputs[2] : noC;
  cpu::StridedLoop cLoop;
  if (c.present())
    SHARDC_RETURN_IF_ERROR(cpu::planGemmC(c, y, &cLoop));
  if (y.numel() == 0)
    return Status::ok();
  const ProductPlan plan = planProduct(a, b, y, c.present());
  LtContext lt;
  Pieces pieces;
  const void *aData = nullptr, *bData = nullptr;
  void *yData = nullptr;
  SHARDC_RETURN_IF_ERROR(prepare("gemm", args, plan, &lt, &pieces, &aData, &bData, &yData));

  // sgemm with k = 0 or alpha = 0 only scales C by beta (the products are not computed, so a
  // NaN or infinity in a or b does not show); the same here.
  const bool productsVanish = shape.k == 0 || shape.alpha == 0.0f;
  if (c.present()) {
    // y (its f32 copy when 16-bit: plan.stageY) starts as c broadcast to [M,N]; cuBLASLt then
    // adds alpha*op(a)*op(b) to beta*y. cuBLASLt's bias epilogue adds an unscaled vector, which
    // is this only for beta = 1 and a row vector c, so it is not used.
    DeviceLoop loop;
    SHARDC_RETURN_IF_ERROR(toDeviceLoop("gemm", cLoop, &loop));
    fillFromCKernel<<<gridFor(loop.numel), kBlock, 0, lt.stream>>>(
        c.as<float>(), static_cast<float *>(yData), loop, productsVanish ? shape.beta : 1.0f);
    SHARDC_RETURN_IF_ERROR(launchStatus("gemm"));
  } else if (productsVanish) {
    SHARDC_RETURN_IF_ERROR(cudaStatus("gemm", "cudaMemsetAsync",
                                      cudaMemsetAsync(y.data, 0, y.sizeBytes(), lt.stream)));
    return Status::ok();
  }
  if (!productsVanish) {
    Product p;
    p.m = shape.m;
    p.n = shape.n;
    p.k = shape.k;
    p.transA = shape.transA;
    p.transB = shape.transB;
    p.abType = plan.abType;
    p.yType = plan.ltYType;
    p.a = aData;
    p.b = bData;
    p.y = yData;
    p.alpha = shape.alpha;
    p.beta = c.present() ? shape.beta : 0.0f;
    SHARDC_RETURN_IF_ERROR(runProduct("gemm", lt, p));
  }
  if (plan.stageY)
    return launchNarrow("gemm", pieces.y, y, lt.stream);
  return Status::ok();
}

} // namespace shardc::runtime::cuda
