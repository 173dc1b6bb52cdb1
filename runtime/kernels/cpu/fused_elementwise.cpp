// fused_elementwise: a chain of elementwise steps computed block by block (docs/kernels.md).
// The output is walked in row-major blocks of kBlock elements. For each block every input is
// widened to f32 into a scratch row (read in place when it is f32 and of the output's shape,
// filled once when it has a single element), each step then runs over the block as a plain loop
// of its f32 function (elementwise_functions.h, the unfused kernels' own), and each output
// stores its slot, rounded to its dtype as `cast` rounds. Single-threaded, like the other
// elementwise kernels.
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/elementwise_functions.h"
#include "runtime/kernels/cpu/fused_elementwise_checks.h"
#include "runtime/support/half_float.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace shardc::runtime::cpu {

namespace {

constexpr int64_t kBlock = 512;

inline float widen(float v) { return v; }
inline float widen(BFloat16 v) { return toFloat(v); }
inline float widen(Float16 v) { return toFloat(v); }

template <typename T> inline T narrow(float v);
template <> inline float narrow<float>(float v) { return v; }
template <> inline BFloat16 narrow<BFloat16>(float v) { return toBFloat16(v); }
template <> inline Float16 narrow<Float16>(float v) { return toFloat16(v); }

// Calls fn(T{}) with the element type of a checked fused_elementwise dtype.
template <typename Fn> void visitFloatDtype(DType dtype, Fn &&fn) {
  if (dtype == program::BF16)
    fn(BFloat16{});
  else if (dtype == program::F16)
    fn(Float16{});
  else
    fn(float{});
}

// n elements from src, `stride` apart (0: one element repeated), widened into dst.
template <typename T>
void loadRun(const T *__restrict src, int64_t stride, int64_t n, float *__restrict dst) {
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = widen(src[i]);
  } else if (stride == 0) {
    const float v = widen(src[0]);
    for (int64_t i = 0; i < n; ++i)
      dst[i] = v;
  } else {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = widen(src[i * stride]);
  }
}

// An input read broadcast: its own coalesced walk of the output (planFusedWalk with it alone)
// and where that walk is, advanced block by block.
struct BroadcastCursor {
  std::vector<int64_t> dims, strides, coordinate;
  int64_t outerOffset = 0; // the element offset of the current row's start

  // Reads the walk's next n elements into dst.
  template <typename T> void read(const T *src, int64_t n, float *dst) {
    const size_t inner = dims.size() - 1;
    while (n > 0) {
      const int64_t run = std::min(n, dims[inner] - coordinate[inner]);
      loadRun(src + outerOffset + coordinate[inner] * strides[inner], strides[inner], run, dst);
      dst += run;
      n -= run;
      coordinate[inner] += run;
      if (coordinate[inner] < dims[inner])
        continue;
      coordinate[inner] = 0;
      // The odometer over the outer dims (wrapping to the start after the last row).
      for (size_t d = inner; d-- > 0;) {
        if (++coordinate[d] < dims[d]) {
          outerOffset += strides[d];
          break;
        }
        outerOffset -= strides[d] * (dims[d] - 1);
        coordinate[d] = 0;
      }
    }
  }
};

// How a block of an input becomes its slot row.
enum class InputKind {
  InPlace,    // f32 of the output's shape: the slot is the input itself
  Contiguous, // 16-bit of the output's shape: widened element by element
  Constant,   // one element: its row is filled once
  Broadcast,  // anything else: read through a BroadcastCursor
};

template <typename Fn>
void mapUnary(const float *__restrict a, float *__restrict y, int64_t n, Fn fn) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = fn(a[i]);
}

template <typename Fn>
void mapBinary(const float *__restrict a, const float *__restrict b, float *__restrict y,
               int64_t n, Fn fn) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = fn(a[i], b[i]);
}

// Step `op` over n elements. `square`: a pow whose exponent is the constant 2.
void runStep(FusedOp op, bool square, const float *a, const float *b, float *y, int64_t n) {
  switch (op) {
  case FusedOp::Neg:
    return mapUnary(a, y, n, [](float v) { return negF32(v); });
  case FusedOp::Abs:
    return mapUnary(a, y, n, [](float v) { return absF32(v); });
  case FusedOp::Relu:
    return mapUnary(a, y, n, [](float v) { return reluF32(v); });
  case FusedOp::Sqrt:
    return mapUnary(a, y, n, [](float v) { return sqrtF32(v); });
  case FusedOp::Reciprocal:
    return mapUnary(a, y, n, [](float v) { return reciprocalF32(v); });
  case FusedOp::Exp:
    return mapUnary(a, y, n, [](float v) { return expF32(v); });
  case FusedOp::Log:
    return mapUnary(a, y, n, [](float v) { return logF32(v); });
  case FusedOp::Tanh:
    return mapUnary(a, y, n, [](float v) { return tanhF32(v); });
  case FusedOp::Erf:
    return mapUnary(a, y, n, [](float v) { return erfF32(v); });
  case FusedOp::Sin:
    return mapUnary(a, y, n, [](float v) { return sinF32(v); });
  case FusedOp::Cos:
    return mapUnary(a, y, n, [](float v) { return cosF32(v); });
  case FusedOp::Sigmoid:
    return mapUnary(a, y, n, [](float v) { return sigmoidF32(v); });
  case FusedOp::Softplus:
    return mapUnary(a, y, n, [](float v) { return softplusF32(v); });
  case FusedOp::RoundBf16:
    return mapUnary(a, y, n, [](float v) { return roundBf16F32(v); });
  case FusedOp::RoundF16:
    return mapUnary(a, y, n, [](float v) { return roundF16F32(v); });
  case FusedOp::Add:
    return mapBinary(a, b, y, n, [](float u, float v) { return addF32(u, v); });
  case FusedOp::Sub:
    return mapBinary(a, b, y, n, [](float u, float v) { return subF32(u, v); });
  case FusedOp::Mul:
    return mapBinary(a, b, y, n, [](float u, float v) { return mulF32(u, v); });
  case FusedOp::Div:
    return mapBinary(a, b, y, n, [](float u, float v) { return divF32(u, v); });
  case FusedOp::Pow:
    if (square)
      return mapUnary(a, y, n, [](float v) { return squareF32(v); });
    return mapBinary(a, b, y, n, [](float u, float v) { return powF32(u, v); });
  case FusedOp::Max:
    return mapBinary(a, b, y, n, [](float u, float v) { return maxF32(u, v); });
  case FusedOp::Min:
    return mapBinary(a, b, y, n, [](float u, float v) { return minF32(u, v); });
  }
}

// The f32 value of a one-element input.
float singleValue(const Tensor &t) {
  float v = 0;
  visitFloatDtype(t.dtype, [&](auto tag) { v = widen(t.as<decltype(tag)>()[0]); });
  return v;
}

} // namespace

Status fusedElementwiseKernel(KernelArgs &args) {
  FusedProgram program;
  SHARDC_RETURN_IF_ERROR(checkFusedElementwise(args, &program));
  const std::vector<int64_t> &shape = args.outputs[0].shape;
  const int64_t numel = args.outputs[0].numel();
  if (numel == 0)
    return Status::ok();
  const size_t numInputs = args.inputs.size(), numSteps = program.steps.size();
  const size_t numSlots = numInputs + numSteps;

  // One row of kBlock floats per slot (an in-place input's row goes unused). Allocated per call:
  // (N + steps) * kBlock floats, whatever the tensors' size.
  std::vector<float> scratch(numSlots * kBlock);
  auto row = [&](size_t slot) { return scratch.data() + slot * kBlock; };

  std::vector<InputKind> kinds(numInputs);
  std::vector<BroadcastCursor> cursors(numInputs);
  for (size_t k = 0; k < numInputs; ++k) {
    const Tensor &x = args.inputs[k];
    if (x.numel() == numel) {
      kinds[k] = x.dtype == program::F32 ? InputKind::InPlace : InputKind::Contiguous;
    } else if (x.numel() == 1) {
      kinds[k] = InputKind::Constant;
      std::fill(row(k), row(k) + kBlock, singleValue(x));
    } else {
      kinds[k] = InputKind::Broadcast;
      FusedWalk walk = planFusedWalk({&x.shape}, shape);
      BroadcastCursor &c = cursors[k];
      c.dims = std::move(walk.dims);
      c.strides = std::move(walk.strides[0]);
      c.coordinate.assign(c.dims.size(), 0);
    }
  }
  // A pow by the constant 2 squares (exactly what pow returns), as the pow kernel does.
  std::vector<bool> square(numSteps, false);
  for (size_t i = 0; i < numSteps; ++i) {
    const FusedStep &s = program.steps[i];
    square[i] = s.op == FusedOp::Pow && s.b < static_cast<int64_t>(numInputs) &&
                kinds[s.b] == InputKind::Constant && row(s.b)[0] == 2.0f;
  }

  std::vector<const float *> slots(numSlots);
  for (int64_t start = 0; start < numel; start += kBlock) {
    const int64_t n = std::min(kBlock, numel - start);
    for (size_t k = 0; k < numInputs; ++k) {
      const Tensor &x = args.inputs[k];
      switch (kinds[k]) {
      case InputKind::InPlace:
        slots[k] = x.as<float>() + start;
        break;
      case InputKind::Contiguous:
        visitFloatDtype(x.dtype, [&](auto tag) {
          loadRun(x.as<decltype(tag)>() + start, 1, n, row(k));
        });
        slots[k] = row(k);
        break;
      case InputKind::Constant:
        slots[k] = row(k);
        break;
      case InputKind::Broadcast:
        visitFloatDtype(x.dtype, [&](auto tag) {
          cursors[k].read(x.as<decltype(tag)>(), n, row(k));
        });
        slots[k] = row(k);
        break;
      }
    }
    for (size_t i = 0; i < numSteps; ++i) {
      const FusedStep &s = program.steps[i];
      float *y = row(numInputs + i);
      runStep(s.op, square[i], slots[s.a], s.b >= 0 ? slots[s.b] : nullptr, y, n);
      slots[numInputs + i] = y;
    }
    for (size_t j = 0; j < args.outputs.size(); ++j) {
      const Tensor &out = args.outputs[j];
      const float *src = slots[program.results[j]];
      visitFloatDtype(out.dtype, [&](auto tag) {
        using T = decltype(tag);
        T *dst = out.as<T>() + start;
        for (int64_t i = 0; i < n; ++i)
          dst[i] = narrow<T>(src[i]);
      });
    }
  }
  return Status::ok();
}

} // namespace shardc::runtime::cpu
