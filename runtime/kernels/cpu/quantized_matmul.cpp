// quantized_matmul: x times a frozen weight held in fewer bits (shardc --base-dtype; formats in
// runtime/support/quantized_weights.h), dequantized inside the product a block of rows at a
// time: no full-precision copy of the weight exists, only one block of it in the workspace.
//
//   inputs   x f32 [..., K], codes (bf16 [rows, cols] | i8 [rows, cols] | u8 [rows*cols/2]),
//            scales f32 (int8: [rows]; nf4: [rows*cols/64]; bf16: absent)
//   output   y f32 [..., N]
//   attrs    format (bf16 | int8 | nf4), rows, cols, untransposed (0: y = x · Wᵀ, K = cols,
//            N = rows; 1: y = x · W, K = rows, N = cols)
//
// Each block of W's rows is dequantized into the workspace (the rows side by side on the kernel
// pool), then multiplied by sgemm: into its columns of y (y = x · Wᵀ), or accumulated into all
// of y (y = x · W, the blocks summed in order). Blocks have a fixed size for the weight's shape,
// so the result does not depend on the thread count.
#include "runtime/kernels/cpu/blas.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/kernel_threads.h"
#include "runtime/kernels/cpu/workspace.h"
#include "runtime/support/quantized_weights.h"

#include <algorithm>
#include <string>

namespace shardc::runtime::cpu {

namespace {

constexpr const char *kKernel = "quantized_matmul";
// The dequantized block: about 1 MiB of f32, whole multiples of 16 rows (the micro-kernels'
// widest tile) where the weight has that many.
constexpr int64_t kBlockElements = 1 << 18;

struct QuantizedProduct {
  WeightFormat format = WeightFormat::Nf4;
  int64_t rows = 0, cols = 0;
  bool untransposed = false;
  int64_t m = 0, k = 0, n = 0; // y [m, n] = x [m, k] · op(W)
  int64_t blockRows = 0;
};

Status checkQuantizedMatmul(const KernelArgs &args, QuantizedProduct *p) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kKernel, args, Arity::withOptional(2, 1), Arity::exactly(1)));
  std::string format;
  int64_t untransposed = 0;
  SHARDC_RETURN_IF_ERROR(getStringAttr(args, "format", &format));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "rows", &p->rows));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "cols", &p->cols));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "untransposed", &untransposed));
  std::optional<WeightFormat> parsed = weightFormatFromName(format);
  if (!parsed)
    return Status::error(std::string(kKernel) + ": unknown format '" + format +
                         "' (bf16, int8 or nf4)");
  p->format = *parsed;
  p->untransposed = untransposed != 0;
  if (p->rows < 1 || p->cols < 1)
    return Status::error(std::string(kKernel) + ": rows and cols must be positive");
  const Tensor &x = args.inputs[0], &codes = args.inputs[1], &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectDtype(kKernel, "x", x, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype(kKernel, "y", y, program::F32));
  if (x.shape.empty())
    return Status::error(std::string(kKernel) + ": x must have rank >= 1");
  p->k = p->untransposed ? p->rows : p->cols;
  p->n = p->untransposed ? p->cols : p->rows;
  if (x.shape.back() != p->k)
    return Status::error(std::string(kKernel) + ": x " + x.describe() +
                         " must end in the contracted size " + std::to_string(p->k));
  std::vector<int64_t> yShape = x.shape;
  yShape.back() = p->n;
  SHARDC_RETURN_IF_ERROR(expectShape(kKernel, "y", y, yShape));
  p->m = x.numel() / p->k;
  const int64_t elements = p->rows * p->cols;
  const DType codeDtype = p->format == WeightFormat::Bf16   ? program::BF16
                          : p->format == WeightFormat::Int8 ? program::I8
                                                            : program::U8;
  SHARDC_RETURN_IF_ERROR(expectDtype(kKernel, "codes", codes, codeDtype));
  if (p->format == WeightFormat::Nf4 && elements % kNf4BlockSize != 0)
    return Status::error(std::string(kKernel) + ": nf4 needs a multiple of 64 elements, not " +
                         std::to_string(elements));
  const int64_t codeCount = p->format == WeightFormat::Nf4 ? elements / 2 : elements;
  if (codes.numel() != codeCount)
    return Status::error(std::string(kKernel) + ": codes " + codes.describe() + " must hold " +
                         std::to_string(codeCount) + " elements for a " + format + " weight [" +
                         std::to_string(p->rows) + "x" + std::to_string(p->cols) + "]");
  const int64_t scaleCount = quantizedScaleCount(p->format, p->rows, p->cols);
  const bool hasScales = args.inputs.size() > 2 && args.inputs[2].present();
  if (scaleCount == 0 && hasScales)
    return Status::error(std::string(kKernel) + ": format bf16 takes no scales");
  if (scaleCount > 0) {
    if (!hasScales)
      return Status::error(std::string(kKernel) + ": format " + format + " needs its scales");
    SHARDC_RETURN_IF_ERROR(expectDtype(kKernel, "scales", args.inputs[2], program::F32));
    if (args.inputs[2].numel() != scaleCount)
      return Status::error(std::string(kKernel) + ": scales " + args.inputs[2].describe() +
                           " must hold " + std::to_string(scaleCount) + " values");
  }
  SHARDC_RETURN_IF_ERROR(checkBlasDims(kKernel, {p->m, p->k, p->n}));
  int64_t blockRows = std::max<int64_t>(1, kBlockElements / p->cols);
  if (blockRows >= 16)
    blockRows -= blockRows % 16;
  p->blockRows = std::min(blockRows, p->rows);
  return Status::ok();
}

} // namespace

Status quantizedMatmulWorkspace(const KernelArgs &args, uint64_t *bytes) {
  QuantizedProduct p;
  SHARDC_RETURN_IF_ERROR(checkQuantizedMatmul(args, &p));
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    float *block = nullptr;
    return workspace.take(kKernel, p.blockRows * p.cols, &block);
  });
}

Status quantizedMatmulKernel(KernelArgs &args) {
  QuantizedProduct p;
  SHARDC_RETURN_IF_ERROR(checkQuantizedMatmul(args, &p));
  Workspace workspace(args);
  float *block = nullptr;
  SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, p.blockRows * p.cols, &block));
  const Tensor &x = args.inputs[0], &codes = args.inputs[1], &y = args.outputs[0];
  const uint8_t *codeBytes = static_cast<const uint8_t *>(codes.data);
  const float *scales = args.inputs.size() > 2 && args.inputs[2].present()
                            ? args.inputs[2].as<float>()
                            : nullptr;
  const float *px = x.as<float>();
  float *py = y.as<float>();
  if (p.m == 0)
    return Status::ok();
  // Rows per dequantizing task: a few thousand elements each.
  const int64_t grain = std::max<int64_t>(1, 4096 / p.cols);
  for (int64_t begin = 0; begin < p.rows; begin += p.blockRows) {
    const int64_t end = std::min(p.rows, begin + p.blockRows), count = end - begin;
    parallelFor(count, grain, [&](int64_t first, int64_t last) {
      dequantizeRows(p.format, codeBytes, scales, p.cols, begin + first, begin + last,
                     block + first * p.cols);
    });
    if (!p.untransposed)
      // y[:, begin:end] = x · blockᵀ
      sgemmStrided(false, true, p.m, count, p.cols, 1.0f, px, p.cols, block, p.cols, 0.0f,
                   py + begin, p.rows);
    else
      // y += x[:, begin:end] · block
      sgemmStrided(false, false, p.m, p.cols, count, 1.0f, px + begin, p.rows, block, p.cols,
                   begin == 0 ? 0.0f : 1.0f, py, p.cols);
  }
  return Status::ok();
}

} // namespace shardc::runtime::cpu
