// Elementwise kernels with two broadcast inputs: arithmetic, pow, max/min, comparisons, logic.
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/convert.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/elementwise_checks.h"
#include "runtime/kernels/cpu/elementwise_functions.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace shardc::runtime::cpu {

namespace {

// One row of a broadcast walk. The four stride cases are split out so that the common ones
// (same shape, or one side a broadcast scalar along the row) are plain loops the compiler
// vectorises.
template <typename A, typename B, typename Out, typename Op>
void binaryRow(const A *a, int64_t strideA, const B *b, int64_t strideB, Out *out, int64_t n,
               Op &op) {
  if (strideA == 1 && strideB == 1) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = op(a[i], b[i]);
  } else if (strideA == 0 && strideB == 1) {
    const A va = a[0];
    for (int64_t i = 0; i < n; ++i)
      out[i] = op(va, b[i]);
  } else if (strideA == 1 && strideB == 0) {
    const B vb = b[0];
    for (int64_t i = 0; i < n; ++i)
      out[i] = op(a[i], vb);
  } else {
    for (int64_t i = 0; i < n; ++i)
      out[i] = op(a[i * strideA], b[i * strideB]);
  }
}

template <typename A, typename B, typename Out, typename Op>
void binaryBroadcast(const StridedLoop &loop, const Tensor &a, const Tensor &b, const Tensor &y,
                     Op op) {
  const A *pa = a.as<A>();
  const B *pb = b.as<B>();
  Out *py = y.as<Out>();
  forEachRowInParallel(loop, [&](int64_t outOffset, const int64_t *inOffsets,
                                 const int64_t *inStrides, int64_t count) {
    binaryRow(pa + inOffsets[0], inStrides[0], pb + inOffsets[1], inStrides[1], py + outOffset,
              count, op);
  });
}

// Runs `op` (a generic lambda) over an already checked numeric binary kernel.
template <typename Op> Status applyNumericBinary(const StridedLoop &loop, KernelArgs &args, Op op) {
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  return visitNumeric(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    binaryBroadcast<T, T, T>(loop, a, b, y, [&](T u, T v) { return op(u, v); });
    return Status::ok();
  });
}

template <typename Op> Status numericBinary(const char *kernel, KernelArgs &args, Op op) {
  StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(checkNumericBinary(kernel, args, &loop));
  return applyNumericBinary(loop, args, op);
}

// a and b share a dtype (numeric, or also bool when `allowBool`); y is bool.
template <typename Op>
Status comparison(const char *kernel, KernelArgs &args, bool allowBool, Op op) {
  StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(checkComparison(kernel, args, allowBool, &loop));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  return visitAnyDtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    binaryBroadcast<T, T, uint8_t>(loop, a, b, y,
                                   [&](T u, T v) { return static_cast<uint8_t>(op(u, v)); });
    return Status::ok();
  });
}

template <typename Op> Status logical(const char *kernel, KernelArgs &args, Op op) {
  StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(checkLogical(kernel, args, &loop));
  binaryBroadcast<uint8_t, uint8_t, uint8_t>(
      loop, args.inputs[0], args.inputs[1], args.outputs[0],
      [&](uint8_t u, uint8_t v) { return static_cast<uint8_t>(op(u != 0, v != 0)); });
  return Status::ok();
}

// Integer add/sub/mul wrap on overflow (two's complement, like NumPy) instead of being
// undefined behaviour; float arithmetic is plain IEEE.
template <typename T, typename Op> T wrapping(T a, T b, Op op) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(op(static_cast<U>(a), static_cast<U>(b)));
  } else {
    return op(a, b);
  }
}

// y = (y's type) pow(double(a), double(b)); f32 by f32 is powF32 (elementwise_functions.h).
template <typename A, typename B> Status powTyped(const StridedLoop &loop, KernelArgs &args) {
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  // x^2 is the common case (variance, RMS norm). A float has a 24-bit significand, so its square
  // is exact in double and equal to what pow(x, 2.0) returns, at a fraction of the cost.
  if constexpr (std::is_same_v<A, float>) {
    if (b.numel() == 1 && static_cast<double>(b.as<B>()[0]) == 2.0) {
      binaryBroadcast<A, B, A>(loop, a, b, y, [](A u, B) { return squareF32(u); });
      return Status::ok();
    }
  }
  binaryBroadcast<A, B, A>(loop, a, b, y, [](A u, B v) {
    if constexpr (std::is_same_v<A, float> && std::is_same_v<B, float>) {
      return powF32(u, v);
    } else {
      const double r = std::pow(static_cast<double>(u), static_cast<double>(v));
      if constexpr (std::is_integral_v<A>)
        return floatToInt<A>(r);
      else
        return static_cast<A>(r);
    }
  });
  return Status::ok();
}

} // namespace

Status addKernel(KernelArgs &args) {
  return numericBinary("add", args, [](auto a, auto b) {
    if constexpr (std::is_same_v<decltype(a), float>)
      return addF32(a, b);
    else
      return wrapping(a, b, [](auto u, auto v) { return u + v; });
  });
}

Status subKernel(KernelArgs &args) {
  return numericBinary("sub", args, [](auto a, auto b) {
    if constexpr (std::is_same_v<decltype(a), float>)
      return subF32(a, b);
    else
      return wrapping(a, b, [](auto u, auto v) { return u - v; });
  });
}

Status mulKernel(KernelArgs &args) {
  return numericBinary("mul", args, [](auto a, auto b) {
    if constexpr (std::is_same_v<decltype(a), float>)
      return mulF32(a, b);
    else
      return wrapping(a, b, [](auto u, auto v) { return u * v; });
  });
}

namespace {
// Integer division by zero traps on x86; report it instead. Checked up front so that the
// division loop itself has no error path.
Status checkNoIntegerZeroDivisor(const char *kernel, const Tensor &b) {
  if (b.dtype == program::F32)
    return Status::ok();
  bool zeroDivisor = false;
  SHARDC_RETURN_IF_ERROR(visitNumeric(b.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *pb = b.as<T>();
    const int64_t n = b.numel();
    for (int64_t i = 0; i < n; ++i)
      zeroDivisor |= pb[i] == 0;
    return Status::ok();
  }));
  return zeroDivisor ? Status::error(std::string(kernel) + ": integer division by zero")
                     : Status::ok();
}
} // namespace

Status divKernel(KernelArgs &args) {
  StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(checkNumericBinary("div", args, &loop));
  SHARDC_RETURN_IF_ERROR(checkNoIntegerZeroDivisor("div", args.inputs[1]));
  return applyNumericBinary(loop, args, [](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_integral_v<T>) {
      // INT_MIN / -1 overflows (and traps on x86); the wrapped result is INT_MIN.
      if (b == T(-1))
        return wrapping(T(0), a, [](auto u, auto v) { return u - v; });
      return static_cast<T>(a / b); // C++ integer division truncates toward zero
    } else {
      return divF32(a, b);
    }
  });
}

Status modKernel(KernelArgs &args) {
  StridedLoop loop;
  bool fmod = false;
  SHARDC_RETURN_IF_ERROR(checkMod(args, &loop, &fmod));
  SHARDC_RETURN_IF_ERROR(checkNoIntegerZeroDivisor("mod", args.inputs[1]));
  return applyNumericBinary(loop, args, [fmod](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_integral_v<T>) {
      // INT_MIN % -1 overflows (and traps on x86); the remainder is 0.
      if (b == T(-1))
        return T(0);
      T r = static_cast<T>(a % b); // C++: the dividend's sign
      // Python's %: the divisor's sign.
      if (!fmod && r != 0 && ((r < 0) != (b < 0)))
        r = static_cast<T>(r + b);
      return r;
    } else {
      return std::fmod(a, b);
    }
  });
}

Status powKernel(KernelArgs &args) {
  StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(checkBinary("pow", args, &loop));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectNumeric("pow", "a", a));
  SHARDC_RETURN_IF_ERROR(expectNumeric("pow", "b", b));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("pow", "a", a, "y", y));
  return visitNumeric(a.dtype, [&](auto tagA) {
    return visitNumeric(
        b.dtype, [&](auto tagB) { return powTyped<decltype(tagA), decltype(tagB)>(loop, args); });
  });
}

Status maxKernel(KernelArgs &args) {
  // NaN in either operand propagates: if `a` is NaN it is returned, if `b` is, `a > b` is false.
  return numericBinary("max", args, [](auto a, auto b) {
    if constexpr (std::is_same_v<decltype(a), float>)
      return maxF32(a, b);
    else
      return (a > b || a != a) ? a : b;
  });
}

Status minKernel(KernelArgs &args) {
  return numericBinary("min", args, [](auto a, auto b) {
    if constexpr (std::is_same_v<decltype(a), float>)
      return minF32(a, b);
    else
      return (a < b || a != a) ? a : b;
  });
}

Status equalKernel(KernelArgs &args) {
  return comparison("equal", args, /*allowBool=*/true, [](auto a, auto b) { return a == b; });
}

Status lessKernel(KernelArgs &args) {
  return comparison("less", args, /*allowBool=*/false, [](auto a, auto b) { return a < b; });
}

Status greaterKernel(KernelArgs &args) {
  return comparison("greater", args, /*allowBool=*/false, [](auto a, auto b) { return a > b; });
}

Status andKernel(KernelArgs &args) {
  return logical("and", args, [](bool a, bool b) { return a && b; });
}

Status orKernel(KernelArgs &args) {
  return logical("or", args, [](bool a, bool b) { return a || b; });
}

} // namespace shardc::runtime::cpu
