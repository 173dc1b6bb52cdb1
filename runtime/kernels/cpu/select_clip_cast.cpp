// where (select between two broadcast inputs), clip (bound to optional scalars) and cast.
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/convert.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/elementwise_checks.h"
#include "runtime/kernels/cpu/grad_checks.h"
#include "runtime/support/half_float.h"

#include <type_traits>

namespace shardc::runtime::cpu {

Status whereKernel(KernelArgs &args) {
  StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(checkWhere(args, &loop));
  const Tensor &cond = args.inputs[0], &x = args.inputs[1], &y = args.inputs[2];
  const Tensor &z = args.outputs[0];
  return visitElementSize(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const uint8_t *pc = cond.as<uint8_t>();
    const T *px = x.as<T>();
    const T *py = y.as<T>();
    T *pz = z.as<T>();
    forEachRow(loop,
               [&](int64_t outOffset, const int64_t *in, const int64_t *stride, int64_t count) {
                 for (int64_t i = 0; i < count; ++i)
                   pz[outOffset + i] = pc[in[0] + i * stride[0]] ? px[in[1] + i * stride[1]]
                                                                 : py[in[2] + i * stride[2]];
               });
    return Status::ok();
  });
}

Status clipKernel(KernelArgs &args) {
  const Tensor *lo = nullptr, *hi = nullptr;
  SHARDC_RETURN_IF_ERROR(checkClip(args, &lo, &hi));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  return visitNumeric(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *in = x.as<T>();
    T *out = y.as<T>();
    const int64_t n = x.numel();
    // min(max(x, lo), hi) as in ONNX: when lo > hi every element becomes hi. The comparisons
    // are written so that a NaN element stays NaN.
    const bool hasLo = lo != nullptr, hasHi = hi != nullptr;
    const T vlo = hasLo ? lo->as<T>()[0] : T(0);
    const T vhi = hasHi ? hi->as<T>()[0] : T(0);
    for (int64_t i = 0; i < n; ++i) {
      T v = in[i];
      if (hasLo && v < vlo)
        v = vlo;
      if (hasHi && v > vhi)
        v = vhi;
      out[i] = v;
    }
    return Status::ok();
  });
}

namespace {

// The element types a cast converts between: the numeric ones, bool and the 16-bit floats.
template <typename Fn> Status visitCastDtype(DType dtype, Fn &&fn) {
  if (dtype == program::BF16)
    return fn(BFloat16{});
  if (dtype == program::F16)
    return fn(Float16{});
  return visitAnyDtype(dtype, fn);
}

template <typename T>
constexpr bool kIsHalfFloat = std::is_same_v<T, BFloat16> || std::is_same_v<T, Float16>;

// convertElement, with a 16-bit float on either side converted through f32, as PyTorch does
// (an i64 becomes the f32 nearest to it, then the 16-bit float nearest to that).
template <typename To, typename From> To castElement(From v) {
  if constexpr (kIsHalfFloat<From>)
    return castElement<To>(toFloat(v));
  else if constexpr (std::is_same_v<To, BFloat16>)
    return toBFloat16(convertElement<float>(v));
  else if constexpr (std::is_same_v<To, Float16>)
    return toFloat16(convertElement<float>(v));
  else
    return convertElement<To>(v);
}

} // namespace

Status castKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkCast(args));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  return visitCastDtype(x.dtype, [&](auto fromTag) {
    return visitCastDtype(y.dtype, [&](auto toTag) {
      using From = decltype(fromTag);
      using To = decltype(toTag);
      const From *in = x.as<From>();
      To *out = y.as<To>();
      const int64_t n = x.numel();
      for (int64_t i = 0; i < n; ++i)
        out[i] = castElement<To>(in[i]);
      return Status::ok();
    });
  });
}

} // namespace shardc::runtime::cpu
