// fused_elementwise on the GPU (docs/kernels.md): one thread per output element in a
// grid-stride loop reads every input at its broadcast offset, widened to f32, runs the steps
// (the functions of elementwise_functions.cuh, those of the unfused CUDA kernels) and stores
// each output rounded to its dtype as `cast` does. The checks are the CPU kernel's
// (cpu/fused_elementwise_checks.h). The program travels by value as a kernel parameter: the
// code, each input's strides over the output's (jointly merged) dims and the outputs'
// dtypes and slots. At most kMaxInputs inputs; more than kOutputsPerLaunch outputs take
// several launches, each computing the chain and storing its share of them.
#include "runtime/kernels/cpu/fused_elementwise_checks.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"
#include "runtime/kernels/cuda/elementwise_functions.cuh"

#include <string>

namespace shardc::runtime::cuda {

namespace {

constexpr int kMaxInputs = 32;
constexpr int kOutputsPerLaunch = 16;
constexpr int kMaxSlots = kMaxInputs + kMaxFusedInstructions;

// The element types, as small numbers the device switches on.
enum FloatKind : uint8_t { kF32 = 0, kBf16 = 1, kF16 = 2 };

FloatKind floatKind(DType dtype) {
  return dtype == program::BF16 ? kBf16 : dtype == program::F16 ? kF16 : kF32;
}

// Under 4 KiB, the classic kernel-parameter limit.
struct FusedLaunch {
  int64_t numel = 0;
  int rank = 0; // dims of the merged walk
  int numInputs = 0, numSteps = 0, numOutputs = 0;
  int64_t dims[kMaxLoopDims] = {};
  int64_t strides[kMaxInputs][kMaxLoopDims] = {};
  const void *inputs[kMaxInputs] = {};
  uint8_t inputKind[kMaxInputs] = {};
  uint8_t op[kMaxFusedInstructions] = {};
  int16_t a[kMaxFusedInstructions] = {}, b[kMaxFusedInstructions] = {};
  void *outputs[kOutputsPerLaunch] = {};
  uint8_t outputKind[kOutputsPerLaunch] = {};
  int16_t result[kOutputsPerLaunch] = {};
};
static_assert(sizeof(FusedLaunch) <= 4096, "a kernel parameter of at most 4 KiB");

__device__ inline float loadInput(const FusedLaunch &p, int k, int64_t offset) {
  switch (p.inputKind[k]) {
  case kBf16:
    return __bfloat162float(static_cast<const bf16 *>(p.inputs[k])[offset]);
  case kF16:
    return __half2float(static_cast<const f16 *>(p.inputs[k])[offset]);
  default:
    return static_cast<const float *>(p.inputs[k])[offset];
  }
}

__device__ inline void storeOutput(const FusedLaunch &p, int j, int64_t i, float v) {
  switch (p.outputKind[j]) {
  case kBf16:
    static_cast<bf16 *>(p.outputs[j])[i] = __float2bfloat16_rn(v);
    break;
  case kF16:
    static_cast<f16 *>(p.outputs[j])[i] = __float2half_rn(v);
    break;
  default:
    static_cast<float *>(p.outputs[j])[i] = v;
    break;
  }
}

__device__ inline float runStep(uint8_t op, float a, float b) {
  switch (static_cast<FusedOp>(op)) {
  case FusedOp::Neg: return negF32(a);
  case FusedOp::Abs: return absF32(a);
  case FusedOp::Relu: return reluF32(a);
  case FusedOp::Sqrt: return sqrtF32(a);
  case FusedOp::Reciprocal: return reciprocalF32(a);
  case FusedOp::Exp: return expF32(a);
  case FusedOp::Log: return logF32(a);
  case FusedOp::Tanh: return tanhF32(a);
  case FusedOp::Erf: return erfF32(a);
  case FusedOp::Sin: return sinF32(a);
  case FusedOp::Cos: return cosF32(a);
  case FusedOp::Sigmoid: return sigmoidF32(a);
  case FusedOp::Softplus: return softplusF32(a);
  case FusedOp::RoundBf16: return roundBf16F32(a);
  case FusedOp::RoundF16: return roundF16F32(a);
  case FusedOp::Add: return addF32(a, b);
  case FusedOp::Sub: return subF32(a, b);
  case FusedOp::Mul: return mulF32(a, b);
  case FusedOp::Div: return divF32(a, b);
  case FusedOp::Pow: return powF32(a, b);
  case FusedOp::Max: return maxF32(a, b);
  case FusedOp::Min: return minF32(a, b);
  }
  return 0.0f; // unreachable: the host checked every opcode
}

__global__ void fusedElementwiseImpl(const FusedLaunch p) {
  SHARDC_GRID_STRIDE(i, p.numel) {
    // The output coordinate along each merged dim (none to compute for a one-dim walk).
    int64_t coordinate[kMaxLoopDims];
    if (p.rank == 1) {
      coordinate[0] = i;
    } else {
      int64_t rest = i;
      for (int d = p.rank - 1; d >= 0; --d) {
        coordinate[d] = rest % p.dims[d];
        rest /= p.dims[d];
      }
    }
    float slot[kMaxSlots];
    for (int k = 0; k < p.numInputs; ++k) {
      int64_t offset = 0;
      for (int d = 0; d < p.rank; ++d)
        offset += coordinate[d] * p.strides[k][d];
      slot[k] = loadInput(p, k, offset);
    }
    for (int s = 0; s < p.numSteps; ++s)
      slot[p.numInputs + s] = runStep(p.op[s], slot[p.a[s]], p.b[s] >= 0 ? slot[p.b[s]] : 0.0f);
    for (int j = 0; j < p.numOutputs; ++j)
      storeOutput(p, j, i, slot[p.result[j]]);
  }
}

} // namespace

Status fusedElementwiseKernel(KernelArgs &args) {
  const char *kernel = "fused_elementwise";
  cpu::FusedProgram program;
  SHARDC_RETURN_IF_ERROR(cpu::checkFusedElementwise(args, &program));
  const size_t numInputs = args.inputs.size();
  if (numInputs > static_cast<size_t>(kMaxInputs))
    return Status::error(std::string(kernel) + ": " + std::to_string(numInputs) +
                         " inputs, the cuda kernel takes at most " + std::to_string(kMaxInputs));
  const std::vector<int64_t> &shape = args.outputs[0].shape;
  const int64_t numel = args.outputs[0].numel();
  if (numel == 0)
    return Status::ok();
  std::vector<const std::vector<int64_t> *> shapes;
  for (const Tensor &x : args.inputs)
    shapes.push_back(&x.shape);
  const cpu::FusedWalk walk = cpu::planFusedWalk(shapes, shape);
  if (walk.dims.size() > static_cast<size_t>(kMaxLoopDims))
    return Status::error(std::string(kernel) + ": the cuda kernels walk at most " +
                         std::to_string(kMaxLoopDims) + " dims after merging, this needs " +
                         std::to_string(walk.dims.size()));

  FusedLaunch p;
  p.numel = numel;
  p.rank = static_cast<int>(walk.dims.size());
  p.numInputs = static_cast<int>(numInputs);
  p.numSteps = static_cast<int>(program.steps.size());
  for (int d = 0; d < p.rank; ++d)
    p.dims[d] = walk.dims[d];
  for (size_t k = 0; k < numInputs; ++k) {
    for (int d = 0; d < p.rank; ++d)
      p.strides[k][d] = walk.strides[k][d];
    p.inputs[k] = args.inputs[k].data;
    p.inputKind[k] = floatKind(args.inputs[k].dtype);
  }
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const cpu::FusedStep &step = program.steps[s];
    p.op[s] = static_cast<uint8_t>(step.op);
    p.a[s] = static_cast<int16_t>(step.a);
    p.b[s] = static_cast<int16_t>(step.b);
  }
  const size_t numOutputs = args.outputs.size();
  for (size_t first = 0; first < numOutputs; first += kOutputsPerLaunch) {
    const size_t count = std::min(numOutputs - first, static_cast<size_t>(kOutputsPerLaunch));
    p.numOutputs = static_cast<int>(count);
    for (size_t j = 0; j < count; ++j) {
      p.outputs[j] = args.outputs[first + j].data;
      p.outputKind[j] = floatKind(args.outputs[first + j].dtype);
      p.result[j] = static_cast<int16_t>(program.results[first + j]);
    }
    fusedElementwiseImpl<<<gridFor(numel), kBlock, 0, streamOf(args)>>>(p);
    SHARDC_RETURN_IF_ERROR(launchStatus(kernel));
  }
  return Status::ok();
}

} // namespace shardc::runtime::cuda
