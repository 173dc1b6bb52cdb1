// fused_elementwise: a chain of elementwise steps computed block by block (docs/kernels.md).
// The output is walked in row-major blocks of kBlock elements. For each block every input is
// widened to f32 into a scratch row (read in place when it is f32 and of the output's shape,
// filled once when it has a single element), each step then runs over the block as a plain loop
// of its f32 function (elementwise_functions.h, the unfused kernels' own), and each output
// stores its slot, rounded to its dtype as `cast` rounds. The blocks are split over the kernel
// threads (each with its own scratch rows), and each step's loop is vectorised at the CPU's
// widest level (vector_dispatch.h): neither changes a bit of the result.
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/elementwise_functions.h"
#include "runtime/kernels/cpu/fused_elementwise_checks.h"
#include "runtime/kernels/cpu/kernel_threads.h"
#include "runtime/kernels/cpu/vector_dispatch.h"
#include "runtime/support/half_float.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace shardc::runtime::cpu {

namespace {

constexpr int64_t kBlock = 512;
constexpr int64_t kBlocksPerThread = kElementsPerThread / kBlock;

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

  // Moves to element `at` of the walk (from its start).
  void seek(int64_t at) {
    outerOffset = 0;
    for (size_t d = dims.size(); d-- > 0;) {
      coordinate[d] = at % dims[d];
      at /= dims[d];
      if (d + 1 < dims.size())
        outerOffset += coordinate[d] * strides[d];
    }
  }

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
  vectorLoop(0, n, [&](int64_t i) { SHARDC_INLINE_BODY y[i] = fn(a[i]); });
}

template <typename Fn>
void mapBinary(const float *__restrict a, const float *__restrict b, float *__restrict y,
               int64_t n, Fn fn) {
  vectorLoop(0, n, [&](int64_t i) { SHARDC_INLINE_BODY y[i] = fn(a[i], b[i]); });
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

// How each input of one call is read, planned once and shared by the threads.
struct FusedPlan {
  std::vector<InputKind> kinds;
  std::vector<BroadcastCursor> cursors; // at the walk's start; each thread copies them
  std::vector<float> constants;         // the value of each Constant input
  std::vector<bool> square;             // per step: a pow by the constant 2
};

// Computes output elements [first, last) (first a multiple of kBlock) block by block.
void runBlocks(const KernelArgs &args, const FusedProgram &program, const FusedPlan &plan,
               int64_t first, int64_t last) {
  const size_t numInputs = args.inputs.size(), numSteps = program.steps.size();
  const size_t numSlots = numInputs + numSteps;
  // One row of kBlock floats per slot (an in-place input's row goes unused): (N + steps) *
  // kBlock floats per thread, whatever the tensors' size.
  std::vector<float> scratch(numSlots * kBlock);
  auto row = [&](size_t slot) { return scratch.data() + slot * kBlock; };
  std::vector<BroadcastCursor> cursors = plan.cursors;
  for (size_t k = 0; k < numInputs; ++k) {
    if (plan.kinds[k] == InputKind::Constant)
      std::fill(row(k), row(k) + kBlock, plan.constants[k]);
    if (plan.kinds[k] == InputKind::Broadcast)
      cursors[k].seek(first);
  }

  std::vector<const float *> slots(numSlots);
  for (int64_t start = first; start < last; start += kBlock) {
    const int64_t n = std::min(kBlock, last - start);
    for (size_t k = 0; k < numInputs; ++k) {
      const Tensor &x = args.inputs[k];
      switch (plan.kinds[k]) {
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
      runStep(s.op, plan.square[i], slots[s.a], s.b >= 0 ? slots[s.b] : nullptr, y, n);
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

  FusedPlan plan;
  plan.kinds.resize(numInputs);
  plan.cursors.resize(numInputs);
  plan.constants.assign(numInputs, 0.0f);
  for (size_t k = 0; k < numInputs; ++k) {
    const Tensor &x = args.inputs[k];
    if (x.numel() == numel) {
      plan.kinds[k] = x.dtype == program::F32 ? InputKind::InPlace : InputKind::Contiguous;
    } else if (x.numel() == 1) {
      plan.kinds[k] = InputKind::Constant;
      plan.constants[k] = singleValue(x);
    } else {
      plan.kinds[k] = InputKind::Broadcast;
      FusedWalk walk = planFusedWalk({&x.shape}, shape);
      BroadcastCursor &c = plan.cursors[k];
      c.dims = std::move(walk.dims);
      c.strides = std::move(walk.strides[0]);
      c.coordinate.assign(c.dims.size(), 0);
    }
  }
  // A pow by the constant 2 squares (exactly what pow returns), as the pow kernel does.
  plan.square.assign(numSteps, false);
  for (size_t i = 0; i < numSteps; ++i) {
    const FusedStep &s = program.steps[i];
    plan.square[i] = s.op == FusedOp::Pow && s.b < static_cast<int64_t>(numInputs) &&
                     plan.kinds[s.b] == InputKind::Constant && plan.constants[s.b] == 2.0f;
  }

  const int64_t blocks = (numel + kBlock - 1) / kBlock;
  parallelFor(blocks, kBlocksPerThread, [&](int64_t begin, int64_t end) {
    runBlocks(args, program, plan, begin * kBlock, std::min(end * kBlock, numel));
  });
  return Status::ok();
}

} // namespace shardc::runtime::cpu
