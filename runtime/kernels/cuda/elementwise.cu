// Elementwise CUDA kernels: unary maps, binary ops over a broadcast walk, comparisons, logic,
// where and cast. Contracts (and their error messages) are the CPU kernels', from
// cpu/elementwise_checks.h; results follow the CPU kernels' semantics (integer wrap-around,
// NaN propagation in max/min, cast's float -> int pinning), with CUDA's libm for the
// transcendental functions (within a few ulp of the CPU's). Walks of at most two dims after
// coalescing (same shapes, scalars, an operand broadcast along leading or trailing dims) take
// RowsLoop kernels, four elements per access where alignment allows: the same per-element
// arithmetic as the general DeviceLoop kernels, without their per-element index division.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/elementwise_checks.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"
#include "runtime/kernels/cuda/elementwise_functions.cuh"

#include <type_traits>

namespace shardc::runtime::cuda {

namespace {

// ---- dispatch: the CPU kernels' visitors (dtype -> element type); casts add CUDA's 16-bit
// float types ----------------------------------------------------------------------------------

using cpu::visitAnyDtype;
using cpu::visitElementSize;
using cpu::visitNumeric;

template <typename Fn> Status visitCastable(DType dtype, Fn &&fn) {
  if (dtype == program::BF16)
    return fn(bf16{});
  if (dtype == program::F16)
    return fn(f16{});
  return visitAnyDtype(dtype, fn);
}

// Calls fn(width) with the elements per access as a compile-time constant: kPack when every
// access can be a whole aligned pack, else 1 (the same kernels, element by element).
template <typename Fn> Status withPackWidth(bool packed, Fn &&fn) {
  if (packed)
    return fn(std::integral_constant<int, kPack>{});
  return fn(std::integral_constant<int, 1>{});
}

// ---- unary -------------------------------------------------------------------------------------

// x and y are contiguous and of one shape: N elements per access (both pointers aligned to N
// elements), the last n % N one by one.
template <int N, typename T, typename Op>
__global__ void unaryKernel(const T *__restrict__ x, T *__restrict__ y, int64_t n, Op op) {
  const int64_t packs = n / N;
  SHARDC_GRID_STRIDE(p, packs) {
    const Pack<T, N> in = reinterpret_cast<const Pack<T, N> *>(x)[p];
    Pack<T, N> out;
#pragma unroll
    for (int u = 0; u < N; ++u)
      out.v[u] = op(in.v[u]);
    reinterpret_cast<Pack<T, N> *>(y)[p] = out;
  }
  SHARDC_GRID_STRIDE(t, n - packs * N) {
    const int64_t i = packs * N + t;
    y[i] = op(x[i]);
  }
}

template <typename T, typename Op> Status launchUnary(const char *kernel, KernelArgs &args, Op op) {
  const int64_t n = args.inputs[0].numel();
  if (n == 0)
    return Status::ok();
  const T *x = args.inputs[0].as<T>();
  T *y = args.outputs[0].as<T>();
  return withPackWidth(packAligned(x, sizeof(T)) && packAligned(y, sizeof(T)), [&](auto width) {
    constexpr int N = decltype(width)::value;
    unaryKernel<N, T><<<gridFor(n / N), kBlock, 0, streamOf(args)>>>(x, y, n, op);
    return launchStatus(kernel);
  });
}

template <typename Op> Status floatUnary(const char *kernel, KernelArgs &args, Op op) {
  SHARDC_RETURN_IF_ERROR(cpu::checkFloatUnary(kernel, args));
  return launchUnary<float>(kernel, args, op);
}

// Integers wrap (two's complement), as on the CPU.
template <typename T> __device__ inline T wrappingNeg(T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(v));
  else
    return -v;
}

// The f32 paths are the functions of elementwise_functions.cuh, which fused_elementwise's steps
// call too.
struct NegOp {
  template <typename T> __device__ T operator()(T v) const {
    if constexpr (std::is_same_v<T, float>)
      return negF32(v);
    else
      return wrappingNeg(v);
  }
};
struct AbsOp {
  template <typename T> __device__ T operator()(T v) const {
    if constexpr (std::is_same_v<T, float>)
      return absF32(v);
    else
      return v < 0 ? wrappingNeg(v) : v;
  }
};
struct ReluOp {
  // NaN propagates (the comparison is false).
  template <typename T> __device__ T operator()(T v) const {
    if constexpr (std::is_same_v<T, float>)
      return reluF32(v);
    else
      return v < T(0) ? T(0) : v;
  }
};

template <typename Op> Status numericUnary(const char *kernel, KernelArgs &args, Op op) {
  SHARDC_RETURN_IF_ERROR(cpu::checkNumericUnary(kernel, args));
  return visitNumeric(args.inputs[0].dtype, [&](auto tag) {
    return launchUnary<decltype(tag)>(kernel, args, op);
  });
}

// ---- binary ------------------------------------------------------------------------------------

template <typename A, typename B, typename Out, typename Op>
__global__ void binaryKernel(const A *__restrict__ a, const B *__restrict__ b, Out *__restrict__ y,
                             DeviceLoop loop, Op op) {
  SHARDC_GRID_STRIDE(i, loop.numel) {
    int64_t offsets[2];
    loopOffsets<2>(loop, i, offsets);
    y[i] = op(a[offsets[0]], b[offsets[1]]);
  }
}

// binaryKernel for walks of at most two dims (RowsLoop): N elements per access where
// rowsPackable and the pointers allow, then a one-row walk's last partial pack one by one.
template <int N, typename A, typename B, typename Out, typename Op>
__global__ void binaryRowsKernel(const A *__restrict__ a, const B *__restrict__ b,
                                 Out *__restrict__ y, RowsLoop<2> loop, Op op) {
  const int64_t packs = loop.numel / N;
  SHARDC_GRID_STRIDE(p, packs) {
    int64_t row, column;
    rowAndColumn(loop, p * N, &row, &column);
    const Pack<A, N> av = loadPack<N>(a, loop, 0, row, column);
    const Pack<B, N> bv = loadPack<N>(b, loop, 1, row, column);
    Pack<Out, N> out;
#pragma unroll
    for (int u = 0; u < N; ++u)
      out.v[u] = op(av.v[u], bv.v[u]);
    reinterpret_cast<Pack<Out, N> *>(y)[p] = out;
  }
  SHARDC_GRID_STRIDE(t, loop.numel - packs * N) {
    const int64_t i = packs * N + t;
    int64_t row, column;
    rowAndColumn(loop, i, &row, &column);
    y[i] = op(loadElement(a, loop, 0, row, column), loadElement(b, loop, 1, row, column));
  }
}

template <typename A, typename B, typename Out, typename Op>
Status launchBinary(const char *kernel, const cpu::StridedLoop &plan, KernelArgs &args, Op op) {
  const A *a = args.inputs[0].as<A>();
  const B *b = args.inputs[1].as<B>();
  Out *y = args.outputs[0].as<Out>();
  RowsLoop<2> rows;
  if (toRowsLoop(plan, &rows)) {
    if (rows.numel == 0)
      return Status::ok();
    const bool packed = rowsPackable(rows) && (!rows.contiguous[0] || packAligned(a, sizeof(A))) &&
                        (!rows.contiguous[1] || packAligned(b, sizeof(B))) &&
                        packAligned(y, sizeof(Out));
    return withPackWidth(packed, [&](auto width) {
      constexpr int N = decltype(width)::value;
      binaryRowsKernel<N, A, B, Out><<<gridFor(rows.numel / N), kBlock, 0, streamOf(args)>>>(
          a, b, y, rows, op);
      return launchStatus(kernel);
    });
  }
  DeviceLoop loop;
  SHARDC_RETURN_IF_ERROR(toDeviceLoop(kernel, plan, &loop));
  if (loop.numel == 0)
    return Status::ok();
  binaryKernel<A, B, Out><<<gridFor(loop.numel), kBlock, 0, streamOf(args)>>>(a, b, y, loop, op);
  return launchStatus(kernel);
}

template <typename T, typename Op> __device__ inline T wrapping(T a, T b, Op op) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(op(static_cast<U>(a), static_cast<U>(b)));
  } else {
    return op(a, b);
  }
}

struct AddOp {
  template <typename T> __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, float>)
      return addF32(a, b);
    else
      return wrapping(a, b, [](auto u, auto v) { return u + v; });
  }
};
struct SubOp {
  template <typename T> __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, float>)
      return subF32(a, b);
    else
      return wrapping(a, b, [](auto u, auto v) { return u - v; });
  }
};
struct MulOp {
  template <typename T> __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, float>)
      return mulF32(a, b);
    else
      return wrapping(a, b, [](auto u, auto v) { return u * v; });
  }
};
struct MaxOp {
  template <typename T> __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, float>)
      return maxF32(a, b);
    else
      return (a > b || a != a) ? a : b;
  }
};
struct MinOp {
  template <typename T> __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, float>)
      return minF32(a, b);
    else
      return (a < b || a != a) ? a : b;
  }
};

template <typename Op> Status numericBinary(const char *kernel, KernelArgs &args, Op op) {
  cpu::StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(cpu::checkNumericBinary(kernel, args, &loop));
  return visitNumeric(args.inputs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    return launchBinary<T, T, T>(kernel, loop, args, op);
  });
}

struct EqualOp {
  template <typename T> __device__ uint8_t operator()(T a, T b) const { return a == b; }
};
struct LessOp {
  template <typename T> __device__ uint8_t operator()(T a, T b) const { return a < b; }
};
struct GreaterOp {
  template <typename T> __device__ uint8_t operator()(T a, T b) const { return a > b; }
};

template <typename Op>
Status comparison(const char *kernel, KernelArgs &args, bool allowBool, Op op) {
  cpu::StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(cpu::checkComparison(kernel, args, allowBool, &loop));
  return visitAnyDtype(args.inputs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    return launchBinary<T, T, uint8_t>(kernel, loop, args, op);
  });
}

struct AndOp {
  __device__ uint8_t operator()(uint8_t a, uint8_t b) const { return (a != 0) && (b != 0); }
};
struct OrOp {
  __device__ uint8_t operator()(uint8_t a, uint8_t b) const { return (a != 0) || (b != 0); }
};

template <typename Op> Status logical(const char *kernel, KernelArgs &args, Op op) {
  cpu::StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(cpu::checkLogical(kernel, args, &loop));
  return launchBinary<uint8_t, uint8_t, uint8_t>(kernel, loop, args, op);
}

// In double, as the CPU kernel: a float's square is exact there.
struct PowOp {
  template <typename B> __device__ float operator()(float u, B v) const {
    if constexpr (std::is_same_v<B, float>)
      return powF32(u, v);
    else
      return static_cast<float>(pow(static_cast<double>(u), static_cast<double>(v)));
  }
};

// ---- where -------------------------------------------------------------------------------------

template <typename T>
__global__ void whereKernelImpl(const uint8_t *__restrict__ cond, const T *__restrict__ x,
                                const T *__restrict__ y, T *__restrict__ z, DeviceLoop loop) {
  SHARDC_GRID_STRIDE(i, loop.numel) {
    int64_t offsets[3];
    loopOffsets<3>(loop, i, offsets);
    z[i] = cond[offsets[0]] ? x[offsets[1]] : y[offsets[2]];
  }
}

// whereKernelImpl for walks of at most two dims (RowsLoop), as binaryRowsKernel. Both x and y
// are read (the selection then needs no branch); every offset read is inside its operand.
template <int N, typename T>
__global__ void whereRowsKernel(const uint8_t *__restrict__ cond, const T *__restrict__ x,
                                const T *__restrict__ y, T *__restrict__ z, RowsLoop<3> loop) {
  const int64_t packs = loop.numel / N;
  SHARDC_GRID_STRIDE(p, packs) {
    int64_t row, column;
    rowAndColumn(loop, p * N, &row, &column);
    const Pack<uint8_t, N> c = loadPack<N>(cond, loop, 0, row, column);
    const Pack<T, N> xv = loadPack<N>(x, loop, 1, row, column);
    const Pack<T, N> yv = loadPack<N>(y, loop, 2, row, column);
    Pack<T, N> out;
#pragma unroll
    for (int u = 0; u < N; ++u)
      out.v[u] = c.v[u] ? xv.v[u] : yv.v[u];
    reinterpret_cast<Pack<T, N> *>(z)[p] = out;
  }
  SHARDC_GRID_STRIDE(t, loop.numel - packs * N) {
    const int64_t i = packs * N + t;
    int64_t row, column;
    rowAndColumn(loop, i, &row, &column);
    z[i] = loadElement(cond, loop, 0, row, column) ? loadElement(x, loop, 1, row, column)
                                                   : loadElement(y, loop, 2, row, column);
  }
}

// ---- cast --------------------------------------------------------------------------------------

template <typename T> constexpr bool kIsHalf = std::is_same_v<T, bf16> || std::is_same_v<T, f16>;

template <typename Int, typename Float> __device__ inline Int floatToInt(Float v) {
  // As cpu/convert.h: NaN and out-of-range values give the most negative value (what x86 does).
  const Float limit = static_cast<Float>(sizeof(Int) == 8 ? 9223372036854775808.0 : 2147483648.0);
  if (!(v > -limit - Float(1) && v < limit))
    return sizeof(Int) == 8 ? static_cast<Int>(INT64_MIN) : static_cast<Int>(INT32_MIN);
  return static_cast<Int>(v);
}

template <typename To, typename From> __device__ inline To convertElement(From v) {
  if constexpr (kIsHalf<From>) {
    return convertElement<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bf16>) {
    return __float2bfloat16_rn(convertElement<float>(v));
  } else if constexpr (std::is_same_v<To, f16>) {
    return __float2half_rn(convertElement<float>(v));
  } else if constexpr (std::is_same_v<To, uint8_t>) {
    return v != From(0) ? 1 : 0;
  } else if constexpr (std::is_same_v<From, uint8_t>) {
    return v != 0 ? To(1) : To(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return floatToInt<To>(v);
  } else if constexpr (std::is_integral_v<To> && std::is_integral_v<From>) {
    return static_cast<To>(static_cast<std::make_unsigned_t<To>>(v));
  } else {
    return static_cast<To>(v);
  }
}

// As unaryKernel: N elements per access, the last n % N one by one.
template <int N, typename From, typename To>
__global__ void castKernelImpl(const From *__restrict__ x, To *__restrict__ y, int64_t n) {
  const int64_t packs = n / N;
  SHARDC_GRID_STRIDE(p, packs) {
    const Pack<From, N> in = reinterpret_cast<const Pack<From, N> *>(x)[p];
    Pack<To, N> out;
#pragma unroll
    for (int u = 0; u < N; ++u)
      out.v[u] = convertElement<To>(in.v[u]);
    reinterpret_cast<Pack<To, N> *>(y)[p] = out;
  }
  SHARDC_GRID_STRIDE(t, n - packs * N) {
    const int64_t i = packs * N + t;
    y[i] = convertElement<To>(x[i]);
  }
}

} // namespace

Status negKernel(KernelArgs &args) { return numericUnary("neg", args, NegOp{}); }
Status absKernel(KernelArgs &args) { return numericUnary("abs", args, AbsOp{}); }
Status reluKernel(KernelArgs &args) { return numericUnary("relu", args, ReluOp{}); }

Status sqrtKernel(KernelArgs &args) {
  return floatUnary("sqrt", args, [] __device__(float v) { return sqrtF32(v); });
}
Status reciprocalKernel(KernelArgs &args) {
  return floatUnary("reciprocal", args, [] __device__(float v) { return reciprocalF32(v); });
}
Status expKernel(KernelArgs &args) {
  return floatUnary("exp", args, [] __device__(float v) { return expF32(v); });
}
Status logKernel(KernelArgs &args) {
  return floatUnary("log", args, [] __device__(float v) { return logF32(v); });
}
Status tanhKernel(KernelArgs &args) {
  return floatUnary("tanh", args, [] __device__(float v) { return tanhF32(v); });
}
Status erfKernel(KernelArgs &args) {
  return floatUnary("erf", args, [] __device__(float v) { return erfF32(v); });
}
Status sinKernel(KernelArgs &args) {
  return floatUnary("sin", args, [] __device__(float v) { return sinF32(v); });
}
Status cosKernel(KernelArgs &args) {
  return floatUnary("cos", args, [] __device__(float v) { return cosF32(v); });
}

Status softplusKernel(KernelArgs &args) {
  // The CPU kernel's form: max(x, 0) + log1p(exp(-|x|)) never overflows.
  return floatUnary("softplus", args, [] __device__(float v) { return softplusF32(v); });
}
Status sigmoidKernel(KernelArgs &args) {
  // exp of -|x| never overflows.
  return floatUnary("sigmoid", args, [] __device__(float v) { return sigmoidF32(v); });
}

Status geluKernel(KernelArgs &args) {
  std::string approximate;
  SHARDC_RETURN_IF_ERROR(getStringAttr(args, "approximate", &approximate));
  if (approximate == "none")
    return floatUnary("gelu", args, [] __device__(float v) {
      return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
    });
  if (approximate == "tanh")
    return floatUnary("gelu", args, [] __device__(float v) {
      const float u2 = 2.0f * 0.79788456080286535588f * (v + 0.044715f * v * v * v);
      return v / (1.0f + expf(-u2));
    });
  return Status::error("gelu: attribute 'approximate' must be \"none\" or \"tanh\", got \"" +
                       approximate + "\"");
}

Status notKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(cpu::checkUnary("not", args));
  SHARDC_RETURN_IF_ERROR(cpu::expectDtype("not", "x", args.inputs[0], program::BOOL));
  return launchUnary<uint8_t>("not", args, [] __device__(uint8_t v) -> uint8_t { return v == 0; });
}

Status addKernel(KernelArgs &args) { return numericBinary("add", args, AddOp{}); }
Status subKernel(KernelArgs &args) { return numericBinary("sub", args, SubOp{}); }
Status mulKernel(KernelArgs &args) { return numericBinary("mul", args, MulOp{}); }
Status maxKernel(KernelArgs &args) { return numericBinary("max", args, MaxOp{}); }
Status minKernel(KernelArgs &args) { return numericBinary("min", args, MinOp{}); }

Status divKernel(KernelArgs &args) {
  cpu::StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(cpu::checkNumericBinary("div", args, &loop));
  // The CPU kernel reports an integer division by zero, which needs the divisor's values on the
  // host before the division; integer division stays on the CPU until the kernels can report
  // such errors from the device.
  if (args.inputs[0].dtype != program::F32)
    return Status::error(std::string("div: integer division (") +
                         dtypeName(args.inputs[0].dtype) + ") has no cuda kernel");
  return launchBinary<float, float, float>("div", loop, args,
                                           [] __device__(float a, float b) { return divF32(a, b); });
}

Status modKernel(KernelArgs &args) {
  cpu::StridedLoop loop;
  bool fmod = false;
  SHARDC_RETURN_IF_ERROR(cpu::checkMod(args, &loop, &fmod));
  // As div: an integer remainder needs the divisor checked for zero on the host first.
  if (args.inputs[0].dtype != program::F32)
    return Status::error(std::string("mod: integer remainder (") +
                         dtypeName(args.inputs[0].dtype) + ") has no cuda kernel");
  return launchBinary<float, float, float>("mod", loop, args,
                                           [] __device__(float a, float b) { return fmodf(a, b); });
}

Status powKernel(KernelArgs &args) {
  cpu::StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(cpu::checkBinary("pow", args, &loop));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(cpu::expectNumeric("pow", "a", a));
  SHARDC_RETURN_IF_ERROR(cpu::expectNumeric("pow", "b", b));
  SHARDC_RETURN_IF_ERROR(cpu::expectSameDtype("pow", "a", a, "y", y));
  if (a.dtype != program::F32)
    return Status::error(std::string("pow: an integer base (") + dtypeName(a.dtype) +
                         ") has no cuda kernel");
  return visitNumeric(b.dtype, [&](auto tag) {
    return launchBinary<float, decltype(tag), float>("pow", loop, args, PowOp{});
  });
}

Status equalKernel(KernelArgs &args) { return comparison("equal", args, true, EqualOp{}); }
Status lessKernel(KernelArgs &args) { return comparison("less", args, false, LessOp{}); }
Status greaterKernel(KernelArgs &args) { return comparison("greater", args, false, GreaterOp{}); }
Status andKernel(KernelArgs &args) { return logical("and", args, AndOp{}); }
Status orKernel(KernelArgs &args) { return logical("or", args, OrOp{}); }

Status whereKernel(KernelArgs &args) {
  cpu::StridedLoop plan;
  SHARDC_RETURN_IF_ERROR(cpu::checkWhere(args, &plan));
  RowsLoop<3> rows;
  if (toRowsLoop(plan, &rows)) {
    if (rows.numel == 0)
      return Status::ok();
    return visitElementSize(args.inputs[1].dtype, [&](auto tag) {
      using T = decltype(tag);
      const uint8_t *cond = args.inputs[0].as<uint8_t>();
      const T *x = args.inputs[1].as<T>(), *y = args.inputs[2].as<T>();
      T *z = args.outputs[0].as<T>();
      const bool packed = rowsPackable(rows) &&
                          (!rows.contiguous[0] || packAligned(cond, sizeof(uint8_t))) &&
                          (!rows.contiguous[1] || packAligned(x, sizeof(T))) &&
                          (!rows.contiguous[2] || packAligned(y, sizeof(T))) &&
                          packAligned(z, sizeof(T));
      return withPackWidth(packed, [&](auto width) {
        constexpr int N = decltype(width)::value;
        whereRowsKernel<N, T><<<gridFor(rows.numel / N), kBlock, 0, streamOf(args)>>>(
            cond, x, y, z, rows);
        return launchStatus("where");
      });
    });
  }
  DeviceLoop loop;
  SHARDC_RETURN_IF_ERROR(toDeviceLoop("where", plan, &loop));
  if (loop.numel == 0)
    return Status::ok();
  return visitElementSize(args.inputs[1].dtype, [&](auto tag) {
    using T = decltype(tag);
    whereKernelImpl<T><<<gridFor(loop.numel), kBlock, 0, streamOf(args)>>>(
        args.inputs[0].as<uint8_t>(), args.inputs[1].as<T>(), args.inputs[2].as<T>(),
        args.outputs[0].as<T>(), loop);
    return launchStatus("where");
  });
}

Status castKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(cpu::checkCast(args));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  const int64_t n = x.numel();
  return visitCastable(x.dtype, [&](auto fromTag) {
    return visitCastable(y.dtype, [&](auto toTag) {
      using From = decltype(fromTag);
      using To = decltype(toTag);
      if (n == 0)
        return Status::ok();
      const From *in = x.as<From>();
      To *out = y.as<To>();
      return withPackWidth(packAligned(in, sizeof(From)) && packAligned(out, sizeof(To)),
                           [&](auto width) {
                             constexpr int N = decltype(width)::value;
                             castKernelImpl<N, From, To>
                                 <<<gridFor(n / N), kBlock, 0, streamOf(args)>>>(in, out, n);
                             return launchStatus("cast");
                           });
    });
  });
}

} // namespace shardc::runtime::cuda
