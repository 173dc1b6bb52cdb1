#include "tests/unit/cuda/cuda_compare.h"

#include "runtime/device/device.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>

namespace shardc::runtime::testing {

namespace {

float bf16ToFloat(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float f16ToFloat(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float v;
  if (exponent == 0)
    v = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    v = mantissa ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
  return sign ? -v : v;
}

// Element i of `t` as a double (bools and integers exactly).
double elementAt(const Tensor &t, int64_t i) {
  switch (t.dtype) {
  case program::F32:
    return t.as<float>()[i];
  case program::I64:
    return static_cast<double>(t.as<int64_t>()[i]);
  case program::I32:
    return t.as<int32_t>()[i];
  case program::BOOL:
    return t.as<uint8_t>()[i];
  case program::BF16:
    return bf16ToFloat(t.as<uint16_t>()[i]);
  case program::F16:
    return f16ToFloat(t.as<uint16_t>()[i]);
  default:
    return NAN;
  }
}

void fillTensor(const Operand &op, std::mt19937_64 &rng, const Tensor &t) {
  const int64_t n = t.numel();
  std::uniform_real_distribution<double> uniform(op.fill.lo, op.fill.hi);
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    switch (op.fill.kind) {
    case Fill::Uniform:
      v = uniform(rng);
      break;
    case Fill::Integers:
      v = std::floor(op.fill.lo + static_cast<double>(rng() % static_cast<uint64_t>(
                                                          op.fill.hi - op.fill.lo + 1)));
      break;
    case Fill::Bools:
      v = static_cast<double>(rng() & 1);
      break;
    case Fill::Fixed:
      v = op.fill.values.empty() ? 0 : op.fill.values[static_cast<size_t>(i) % op.fill.values.size()];
      break;
    }
    switch (t.dtype) {
    case program::F32:
      t.as<float>()[i] = static_cast<float>(v);
      break;
    case program::I64:
      t.as<int64_t>()[i] = static_cast<int64_t>(v);
      break;
    case program::I32:
      t.as<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    case program::BOOL:
      t.as<uint8_t>()[i] = v != 0;
      break;
    case program::BF16:
      t.as<uint16_t>()[i] = floatToBf16(static_cast<float>(v));
      break;
    case program::F16: {
      // Through the CPU cast kernel would need a kernel call per element; values drawn for f16
      // tests are small integers and halves, exact in f16.
      const float f = static_cast<float>(v);
      uint16_t h = 0;
      if (f != 0) {
        int e;
        const float m = std::frexp(std::fabs(f), &e); // f = m * 2^e, m in [0.5, 1)
        const uint32_t mantissa = static_cast<uint32_t>(std::lround(m * 2048)) & 0x3ff;
        h = static_cast<uint16_t>(((e + 14) << 10) | mantissa);
        if (f < 0)
          h |= 0x8000;
      }
      t.as<uint16_t>()[i] = h;
      break;
    }
    default:
      break;
    }
  }
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

bool cudaVisible(std::string *why) { return cudaDeviceAvailable(why); }

std::string expectSameErrorOnBothDevices(const std::string &kernel,
                                         const std::vector<Tensor> &inputs,
                                         const std::vector<Tensor> &outputs, const Attrs &attrs) {
  std::string messages[2];
  const DeviceKind devices[2] = {DeviceKind::Cpu, DeviceKind::Cuda};
  for (int d = 0; d < 2; ++d) {
    KernelFn fn = findKernel(devices[d], kernel);
    EXPECT_NE(fn, nullptr) << kernel << " on " << deviceKindName(devices[d]);
    if (fn == nullptr)
      return "";
    KernelArgs args;
    args.inputs = inputs;
    args.outputs = outputs;
    args.attrs = &attrs.map();
    const Status status = fn(args);
    EXPECT_FALSE(status.isOk()) << kernel << " on " << deviceKindName(devices[d]);
    messages[d] = status.message();
  }
  EXPECT_EQ(messages[0], messages[1]) << kernel;
  return messages[0];
}

double compareWithCpu(const KernelCase &c) {
  const std::string label = c.kernel + " (seed " + std::to_string(c.seed) + ")";
  std::mt19937_64 rng(c.seed);
  // Host operands: inputs drawn, outputs patterned so that unwritten elements show.
  std::vector<HostTensor> hostIn, cpuOut, cudaOut;
  for (const Operand &op : c.inputs) {
    hostIn.emplace_back(op.dtype, op.absent ? std::vector<int64_t>{} : op.shape);
    if (!op.absent)
      fillTensor(op, rng, hostIn.back().view());
  }
  for (const Operand &op : c.outputs) {
    cpuOut.emplace_back(op.dtype, op.shape);
    cudaOut.emplace_back(op.dtype, op.shape);
  }
  auto inputViews = [&](std::vector<Tensor> *views) {
    for (size_t i = 0; i < c.inputs.size(); ++i)
      views->push_back(c.inputs[i].absent ? Tensor() : hostIn[i].view());
  };

  // The CPU reference. Outputs updated in place start as their inputs.
  KernelArgs cpuArgs;
  inputViews(&cpuArgs.inputs);
  for (auto &t : cpuOut)
    cpuArgs.outputs.push_back(t.view());
  for (auto [in, out] : c.inPlace)
    std::memcpy(cpuOut[out].view().data, hostIn[in].view().data, hostIn[in].view().sizeBytes());
  for (auto [in, out] : c.inPlace)
    cpuArgs.inputs[in] = cpuOut[out].view();
  cpuArgs.attrs = &c.attrs.map();
  uint64_t cpuWorkspaceBytes = 0;
  Status st = kernelWorkspaceBytes(DeviceKind::Cpu, c.kernel, cpuArgs, &cpuWorkspaceBytes);
  EXPECT_TRUE(st.isOk()) << label << ": cpu workspace: " << st.message();
  WorkspaceStorage cpuWorkspace(cpuWorkspaceBytes);
  cpuWorkspace.give(&cpuArgs);
  KernelFn cpuKernel = findKernel(DeviceKind::Cpu, c.kernel);
  EXPECT_NE(cpuKernel, nullptr) << label << ": no cpu kernel";
  if (cpuKernel == nullptr)
    return INFINITY;
  st = cpuKernel(cpuArgs);
  EXPECT_TRUE(st.isOk()) << label << ": cpu kernel: " << st.message();
  if (!st.isOk())
    return INFINITY;

  // The same on the GPU.
  std::unique_ptr<Device> device;
  st = createCudaDevice(0, &device);
  EXPECT_TRUE(st.isOk()) << st.message();
  if (!st.isOk())
    return INFINITY;
  KernelFn cudaKernel = findKernel(DeviceKind::Cuda, c.kernel);
  EXPECT_NE(cudaKernel, nullptr) << label << ": no cuda kernel";
  if (cudaKernel == nullptr)
    return INFINITY;
  std::vector<DeviceBuffer> deviceIn(c.inputs.size()), deviceOut(c.outputs.size());
  KernelArgs cudaArgs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].absent) {
      cudaArgs.inputs.emplace_back();
      continue;
    }
    const Tensor &h = hostIn[i].view();
    EXPECT_TRUE(DeviceBuffer::allocate(device.get(), h.sizeBytes(), "input", &deviceIn[i]).isOk());
    EXPECT_TRUE(device->copyHostToDevice(deviceIn[i].data(), h.data, h.sizeBytes()).isOk());
    Tensor d = h;
    d.data = deviceIn[i].data();
    cudaArgs.inputs.push_back(d);
  }
  for (size_t o = 0; o < c.outputs.size(); ++o) {
    const Tensor &h = cudaOut[o].view();
    EXPECT_TRUE(DeviceBuffer::allocate(device.get(), h.sizeBytes(), "output", &deviceOut[o]).isOk());
    EXPECT_TRUE(device->fill(deviceOut[o].data(), 0xA5, h.sizeBytes()).isOk());
    Tensor d = h;
    d.data = deviceOut[o].data();
    cudaArgs.outputs.push_back(d);
  }
  for (auto [in, out] : c.inPlace) {
    EXPECT_TRUE(device
                    ->copyDeviceToDevice(deviceOut[out].data(), deviceIn[in].data(),
                                         hostIn[in].view().sizeBytes())
                    .isOk());
    cudaArgs.inputs[in] = cudaArgs.outputs[out];
  }
  cudaArgs.attrs = &c.attrs.map();
  uint64_t cudaWorkspaceBytes = 0;
  st = kernelWorkspaceBytes(DeviceKind::Cuda, c.kernel, cudaArgs, &cudaWorkspaceBytes);
  EXPECT_TRUE(st.isOk()) << label << ": cuda workspace: " << st.message();
  DeviceBuffer workspace;
  EXPECT_TRUE(DeviceBuffer::allocate(device.get(), cudaWorkspaceBytes, "workspace", &workspace).isOk());
  cudaArgs.workspace = workspace.data();
  cudaArgs.workspaceBytes = cudaWorkspaceBytes;
  cudaArgs.stream = device->defaultStream()->nativeHandle();
  st = cudaKernel(cudaArgs);
  EXPECT_TRUE(st.isOk()) << label << ": cuda kernel: " << st.message();
  Status synced = device->synchronize();
  EXPECT_TRUE(synced.isOk()) << label << ": " << synced.message();
  if (!st.isOk() || !synced.isOk())
    return INFINITY;
  for (size_t o = 0; o < c.outputs.size(); ++o)
    EXPECT_TRUE(device
                    ->copyDeviceToHost(cudaOut[o].view().data, deviceOut[o].data(),
                                       cudaOut[o].view().sizeBytes())
                    .isOk());
  EXPECT_TRUE(device->synchronize().isOk());

  double worstOverall = 0;
  for (size_t o = 0; o < c.outputs.size(); ++o) {
    const Tensor &ref = cpuOut[o].view(), &got = cudaOut[o].view();
    const int64_t n = ref.numel();
    const bool isFloat = ref.dtype == program::F32 || ref.dtype == program::BF16 ||
                         ref.dtype == program::F16;
    // The output's scale: the root mean square of its finite elements (a fully masked attention
    // row is NaN on both devices, and must not make every other element's error relative to
    // its own, possibly tiny, value).
    double sumSquares = 0;
    int64_t finite = 0;
    for (int64_t i = 0; i < n; ++i)
      if (std::isfinite(elementAt(ref, i))) {
        sumSquares += elementAt(ref, i) * elementAt(ref, i);
        ++finite;
      }
    const double rms = finite ? std::sqrt(sumSquares / static_cast<double>(finite)) : 0;
    double worst = 0;
    int64_t worstAt = -1;
    for (int64_t i = 0; i < n; ++i) {
      const double r = elementAt(ref, i), g = elementAt(got, i);
      if (std::isnan(r) && std::isnan(g))
        continue;
      double rel;
      if (!isFloat || std::isinf(r))
        rel = r == g ? 0 : INFINITY;
      else
        rel = std::fabs(g - r) / std::max({std::fabs(r), rms, 1e-30});
      if (std::isnan(rel) || rel > worst) {
        worst = std::isnan(rel) ? INFINITY : rel;
        worstAt = i;
      }
    }
    EXPECT_LE(worst, isFloat ? c.tolerance : 0.0)
        << label << ": output " << o << " " << dtypeName(ref.dtype) << shapeText(ref.shape)
        << ": element " << worstAt << ": cuda " << (worstAt >= 0 ? elementAt(got, worstAt) : 0)
        << ", cpu " << (worstAt >= 0 ? elementAt(ref, worstAt) : 0);
    worstOverall = std::max(worstOverall, worst);
  }
  return worstOverall;
}

} // namespace shardc::runtime::testing
