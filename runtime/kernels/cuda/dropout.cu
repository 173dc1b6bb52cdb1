// dropout on the GPU, bit-identical to the CPU kernel (cpu/dropout.cpp): element i of the whole
// tensor is kept when uniformFloat(word i of the Philox stream (seed, philoxStreamId(step,
// stream))) >= ratio, and y = x * (kept ? scale : 0). Every step of that is exact or a single
// correctly rounded operation on both devices:
// * the Philox words come from the same integer code (support/philox_core.h);
// * uniformFloat converts a 24-bit integer (exact) and multiplies by 2^-24 (exact);
// * scale = 1 / (1 - ratio) is computed once on the host, by the shared checks
//   (cpu/dropout_checks.h), so both devices multiply by the same float;
// * the product is one explicitly rounded multiply (__fmul_rn), which nvcc cannot fuse with
//   anything (no multiply here feeds an add, so -fmad=false is not needed).
// NaNs are NaN on both devices, but not the same bits: the GPU returns its canonical NaN where
// x86 propagates x's payload or gives its negative default NaN (a dropped infinity).
//
// The checks are the CPU kernel's (cpu/dropout_checks.h). The seed and step live in device
// memory, so the kernel reads them there rather than the host reading them back, which would
// stall the stream every step. A step outside [0, 2^32), an error on the CPU, cannot be reported
// from the device: the kernel then writes NaN to every y and 0 to every mask element, so a run
// that reaches it fails loudly (the loss turns NaN) rather than reusing another step's mask.
#include "runtime/kernels/cpu/dropout_checks.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"
#include "runtime/support/philox_core.h"

#include <vector>

namespace shardc::runtime::cuda {

namespace {

constexpr int kMaxIndexGroups = 8;

// Element e of x (row-major) in the whole tensor: x's dimensions merged into groups, outermost
// first, where group g has x's size size[g], x's offset offset[g] in the whole tensor and the
// whole tensor's stride stride[g], so that e with group coordinates c has whole index
// sum_g (c_g + offset_g) * stride_g. The innermost group has stride 1. A tensor that is not
// split is a single group (the whole index is e itself); a block cut along k dimensions has at
// most 2k + 1 groups.
struct WholeIndexMap {
  int groups = 0;
  int64_t size[kMaxIndexGroups] = {};
  int64_t offset[kMaxIndexGroups] = {};
  int64_t stride[kMaxIndexGroups] = {};
};

Status wholeIndexMapOf(const Tensor &x, const cpu::DropoutBlock &block, WholeIndexMap *map) {
  const size_t rank = x.shape.size();
  std::vector<int64_t> wholeStride(rank, 1);
  for (size_t d = rank; d-- > 1;)
    wholeStride[d - 1] = wholeStride[d] * block.global[d];
  // Innermost first. Dimension d joins the group inside it when the group spans whole strides
  // of d (stride_d == size_g * stride_g): then (c_d + o_d) * stride_d + (c_g + o_g) * stride_g
  // is (c_d * size_g + c_g + o_d * size_g + o_g) * stride_g, one coordinate of the merged group.
  std::vector<int64_t> size, offset, stride;
  for (size_t d = rank; d-- > 0;) {
    if (!size.empty() && wholeStride[d] == size.back() * stride.back()) {
      offset.back() += block.offset[d] * size.back();
      size.back() *= x.shape[d];
    } else {
      size.push_back(x.shape[d]);
      offset.push_back(block.offset[d]);
      stride.push_back(wholeStride[d]);
    }
  }
  if (size.empty()) { // a scalar: element 0
    size.push_back(1);
    offset.push_back(0);
    stride.push_back(1);
  }
  if (size.size() > static_cast<size_t>(kMaxIndexGroups))
    return Status::error("dropout: " + x.describe() + " is a block cut along " +
                         std::to_string(size.size()) + " index groups; the cuda kernel handles " +
                         std::to_string(kMaxIndexGroups));
  map->groups = static_cast<int>(size.size());
  for (int g = 0; g < map->groups; ++g) { // outermost first
    const size_t from = size.size() - 1 - static_cast<size_t>(g);
    map->size[g] = size[from];
    map->offset[g] = offset[from];
    map->stride[g] = stride[from];
  }
  return Status::ok();
}

__device__ inline int64_t wholeIndexOf(const WholeIndexMap &map, int64_t e) {
  int64_t whole = 0;
  for (int g = map.groups - 1; g >= 0; --g) {
    const int64_t c = e % map.size[g];
    e /= map.size[g];
    whole += (c + map.offset[g]) * map.stride[g];
  }
  return whole;
}

// Lane `lane` of a block, without a dynamically indexed array (which would live in local memory).
__device__ inline uint32_t laneOf(const uint32_t (&words)[4], uint64_t lane) {
  return lane == 0 ? words[0] : lane == 1 ? words[1] : lane == 2 ? words[2] : words[3];
}

// Each thread takes 4 consecutive elements of x: one Philox block when x is the whole tensor,
// at most two when the 4 cross a block boundary of the whole tensor's index, more only where
// they cross a cut.
__global__ void dropoutImpl(const float *__restrict__ x, const int64_t *__restrict__ seedPtr,
                            const int64_t *__restrict__ stepPtr, float *__restrict__ y,
                            uint8_t *__restrict__ mask, int64_t n, WholeIndexMap map,
                            uint32_t stream, float ratio, float scale) {
  const int64_t step = *stepPtr;
  const uint64_t seed = static_cast<uint64_t>(*seedPtr);
  const bool stepFits = step >= 0 && step <= static_cast<int64_t>(0xFFFFFFFFu);
  const uint64_t streamId = philoxStreamId(static_cast<uint32_t>(step), stream);
  const int inner = map.groups - 1;
  const int64_t quads = (n + 3) / 4;
  SHARDC_GRID_STRIDE(q, quads) {
    const int64_t first = q * 4, last = first + 4 < n ? first + 4 : n;
    if (!stepFits) {
      for (int64_t e = first; e < last; ++e) {
        y[e] = __int_as_float(0x7fffffff);
        mask[e] = 0;
      }
      continue;
    }
    int64_t whole = wholeIndexOf(map, first);
    int64_t c = first % map.size[inner]; // the coordinate in the innermost group (stride 1)
    uint64_t blockIndex = ~uint64_t{0};
    uint32_t words[4] = {0, 0, 0, 0};
    for (int64_t e = first; e < last; ++e) {
      if (e > first) {
        if (++c < map.size[inner]) {
          ++whole;
        } else {
          c = 0;
          whole = wholeIndexOf(map, e);
        }
      }
      const uint64_t w = static_cast<uint64_t>(whole);
      if (w / 4 != blockIndex) {
        blockIndex = w / 4;
        philoxStreamBlock(seed, streamId, blockIndex, words);
      }
      const bool kept = uniformFloat(laneOf(words, w % 4)) >= ratio;
      mask[e] = kept ? 1 : 0;
      y[e] = __fmul_rn(x[e], kept ? scale : 0.0f);
    }
  }
}

} // namespace

Status dropoutKernel(KernelArgs &args) {
  cpu::DropoutAttrs attrs;
  SHARDC_RETURN_IF_ERROR(cpu::checkDropout(args, &attrs));
  cpu::DropoutBlock block;
  SHARDC_RETURN_IF_ERROR(cpu::dropoutBlockOf(args, &block));
  const Tensor &x = args.inputs[0];
  WholeIndexMap map;
  SHARDC_RETURN_IF_ERROR(wholeIndexMapOf(x, block, &map));
  const int64_t n = x.numel();
  if (n == 0)
    return Status::ok();
  dropoutImpl<<<gridFor((n + 3) / 4), kBlock, 0, streamOf(args)>>>(
      x.as<float>(), args.inputs[1].as<int64_t>(), args.inputs[2].as<int64_t>(),
      args.outputs[0].as<float>(), args.outputs[1].as<uint8_t>(), n, map,
      static_cast<uint32_t>(attrs.stream), attrs.ratio, attrs.scale);
  return launchStatus("dropout");
}

} // namespace shardc::runtime::cuda
