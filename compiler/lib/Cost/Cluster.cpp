//===- Cluster.cpp ----------------------------------------------------------------------===//
#include "shardc/Cost/Cluster.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace shardc::cost {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Latencies are not on the data sheets: a ring step of NCCL inside an NVLink node takes a few
// microseconds, one across InfiniBand about twice that (NCCL's published latencies).
constexpr double kNvlinkLatency = 5e-6;
constexpr double kInfinibandLatency = 1e-5;
// A kernel launch on a GPU.
constexpr double kGpuKernelSeconds = 4e-6;

Cluster dgx(const std::string &name, const std::string &source, DeviceSpec device,
            double nvlinkPerDirection, double infinibandPerGpu) {
  Cluster c;
  c.name = name;
  c.source = source;
  c.devicesPerNode = 8;
  c.device = std::move(device);
  c.intraNode = {nvlinkPerDirection, kNvlinkLatency};
  c.interNode = {infinibandPerGpu, kInfinibandLatency};
  return c;
}

DeviceSpec gpu(const std::string &name, uint64_t memoryBytes, double f32, double bf16,
               double bandwidth) {
  DeviceSpec d;
  d.name = name;
  d.memoryBytes = memoryBytes;
  d.peakFlopsF32 = f32;
  d.peakFlopsBf16 = bf16;
  d.memoryBandwidth = bandwidth;
  // cuBLAS reaches about 80% of the tensor cores' peak on large products; a dimension of 64
  // (a quarter of a 256-wide tile) halves it.
  d.gemm = {0.8, 64};
  d.memoryEfficiency = 0.8;
  d.kernelSeconds = kGpuKernelSeconds;
  return d;
}

bool preset(const std::string &name, Cluster &out) {
  if (name == "a100-80g-8x") {
    // NVIDIA A100 Tensor Core GPU data sheet (SXM4 80GB): FP32 19.5 TFLOP/s, BF16 312 TFLOP/s
    // dense, HBM2e 2,039 GB/s; NVLink 600 GB/s (both directions); DGX A100: 8 single-port
    // 200 Gb/s HDR InfiniBand adapters for the cluster network, one per GPU.
    out = dgx(name, "NVIDIA A100 data sheet (SXM4 80GB) and DGX A100 user guide",
              gpu("A100-SXM4-80GB", static_cast<uint64_t>(80 * kGiB), 19.5e12, 312e12, 2.039e12),
              300e9, 25e9);
    return true;
  }
  if (name == "h100-80g-8x") {
    // NVIDIA H100 data sheet (SXM5): FP32 67 TFLOP/s, BF16 989 TFLOP/s dense, HBM3 3.35 TB/s;
    // NVLink 900 GB/s; DGX H100: 8 ConnectX-7 400 Gb/s NDR ports for the compute fabric.
    out = dgx(name, "NVIDIA H100 data sheet (SXM5 80GB) and DGX H100 user guide",
              gpu("H100-SXM5-80GB", static_cast<uint64_t>(80 * kGiB), 67e12, 989e12, 3.35e12),
              450e9, 50e9);
    return true;
  }
  if (name == "h200-141g-8x") {
    // NVIDIA H200 data sheet (SXM): 141 GB HBM3e at 4.8 TB/s, FP32 67 TFLOP/s, BF16 989
    // TFLOP/s dense; NVLink 900 GB/s; DGX H200: 8 x 400 Gb/s NDR as DGX H100.
    out = dgx(name, "NVIDIA H200 data sheet (SXM) and DGX H200 user guide",
              gpu("H200-SXM-141GB", static_cast<uint64_t>(141e9), 67e12, 989e12, 4.8e12), 450e9,
              50e9);
    return true;
  }
  return false;
}

bool fileExists(const std::string &path) {
  std::ifstream in(path);
  return in.good();
}

// Reads `key` of `object` as a positive number (or >= 0 with allowZero); false with `error`.
bool number(const nlohmann::json &object, const char *key, const std::string &where,
            double &out, std::string &error, bool required = true, bool allowZero = false) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (!required)
      return true;
    error = where + ": missing \"" + key + "\"";
    return false;
  }
  if (!it->is_number()) {
    error = where + ": \"" + key + "\" must be a number";
    return false;
  }
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0 || (!allowZero && v == 0)) {
    error = where + ": \"" + key + "\" must be " + (allowZero ? "at least 0" : "positive") +
            ", got " + it->dump();
    return false;
  }
  out = v;
  return true;
}

const nlohmann::json *object(const nlohmann::json &parent, const char *key,
                             const std::string &where, std::string &error) {
  auto it = parent.find(key);
  if (it == parent.end() || !it->is_object()) {
    error = where + ": \"" + key + "\" must be an object";
    return nullptr;
  }
  return &*it;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

} // namespace

bool Cluster::withinOneNode(const std::vector<int64_t> &ranks) const {
  for (int64_t r : ranks)
    if (nodeOf(r) != nodeOf(ranks.front()))
      return false;
  return true;
}

std::vector<std::string> clusterPresetNames() {
  return {"a100-80g-8x", "h100-80g-8x", "h200-141g-8x", "cpu"};
}

std::string cpuCalibrationPath() {
  if (const char *dir = std::getenv("SHARDC_CLUSTER_DIR"); dir && *dir)
    return std::string(dir) + "/cpu.json";
  if (const char *xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg)
    return std::string(xdg) + "/shardc/cpu.json";
  const char *home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.config/shardc/cpu.json";
}

bool parseCluster(const std::string &text, const std::string &origin, Cluster &out,
                  std::string &error) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error &e) {
    error = origin + ": not valid JSON (" + std::string(e.what()) + ")";
    return false;
  }
  if (!j.is_object()) {
    error = origin + ": a cluster must be a JSON object";
    return false;
  }
  Cluster c;
  c.name = j.value("name", origin);
  c.source = j.value("source", std::string());
  double perNode = 0, nodes = 0;
  if (!number(j, "devices_per_node", origin, perNode, error))
    return false;
  if (!number(j, "nodes", origin, nodes, error, /*required=*/false, /*allowZero=*/true))
    return false;
  if (perNode != std::floor(perNode) || nodes != std::floor(nodes) || perNode > 1e6 ||
      nodes > 1e6) {
    error = origin + ": \"devices_per_node\" and \"nodes\" must be whole numbers";
    return false;
  }
  c.devicesPerNode = static_cast<int>(perNode);
  c.nodes = static_cast<int>(nodes);
  double cores = 0;
  if (!number(j, "cores_per_node", origin, cores, error, /*required=*/false, /*allowZero=*/true))
    return false;
  if (cores != std::floor(cores) || cores > 1e6) {
    error = origin + ": \"cores_per_node\" must be a whole number";
    return false;
  }
  c.coresPerNode = static_cast<int>(cores);
  const std::string deviceWhere = origin + ": device";
  const nlohmann::json *device = object(j, "device", origin, error);
  if (!device)
    return false;
  DeviceSpec &d = c.device;
  d.name = device->value("name", std::string("device"));
  double memory = 0;
  if (!number(*device, "memory_bytes", deviceWhere, memory, error) ||
      !number(*device, "memory_bandwidth", deviceWhere, d.memoryBandwidth, error) ||
      !number(*device, "memory_efficiency", deviceWhere, d.memoryEfficiency, error, false) ||
      !number(*device, "kernel_seconds", deviceWhere, d.kernelSeconds, error, false, true) ||
      !number(*device, "elementwise_flops", deviceWhere, d.elementwiseFlops, error, false, true) ||
      !number(*device, "loaded_memory_bandwidth", deviceWhere, d.loadedMemoryBandwidth, error,
              false, true))
    return false;
  d.memoryBytes = static_cast<uint64_t>(memory);
  const nlohmann::json *peak = object(*device, "peak_flops", deviceWhere, error);
  if (!peak || !number(*peak, "fp32", deviceWhere + ".peak_flops", d.peakFlopsF32, error))
    return false;
  d.peakFlopsBf16 = d.peakFlopsF32;
  if (!number(*peak, "bf16", deviceWhere + ".peak_flops", d.peakFlopsBf16, error, false))
    return false;
  if (auto gemm = device->find("gemm_efficiency"); gemm != device->end()) {
    if (!gemm->is_object()) {
      error = deviceWhere + ": \"gemm_efficiency\" must be an object";
      return false;
    }
    if (!number(*gemm, "max", deviceWhere + ".gemm_efficiency", d.gemm.max, error) ||
        !number(*gemm, "half_dim", deviceWhere + ".gemm_efficiency", d.gemm.halfDim, error,
                true, true))
      return false;
  }
  if (d.gemm.max > 1 || d.memoryEfficiency > 1) {
    error = deviceWhere + ": an efficiency is a share of the peak, at most 1";
    return false;
  }
  const nlohmann::json *links = object(j, "links", origin, error);
  if (!links)
    return false;
  for (auto [key, link] : {std::pair{"intra_node", &c.intraNode}, {"inter_node", &c.interNode}}) {
    const std::string where = origin + ": links." + key;
    const nlohmann::json *l = object(*links, key, origin + ": links", error);
    if (!l || !number(*l, "bandwidth", where, link->bandwidth, error) ||
        !number(*l, "latency", where, link->latency, error, true, true))
      return false;
  }
  out = std::move(c);
  return true;
}

std::string clusterToJson(const Cluster &c) {
  nlohmann::ordered_json j;
  j["name"] = c.name;
  j["source"] = c.source;
  j["devices_per_node"] = c.devicesPerNode;
  j["nodes"] = c.nodes;
  if (c.coresPerNode > 0)
    j["cores_per_node"] = c.coresPerNode;
  j["device"] = {{"name", c.device.name},
                 {"memory_bytes", c.device.memoryBytes},
                 {"peak_flops", {{"fp32", c.device.peakFlopsF32}, {"bf16", c.device.peakFlopsBf16}}},
                 {"memory_bandwidth", c.device.memoryBandwidth},
                 {"memory_efficiency", c.device.memoryEfficiency},
                 {"kernel_seconds", c.device.kernelSeconds},
                 {"elementwise_flops", c.device.elementwiseFlops},
                 {"loaded_memory_bandwidth", c.device.loadedMemoryBandwidth},
                 {"gemm_efficiency", {{"max", c.device.gemm.max}, {"half_dim", c.device.gemm.halfDim}}}};
  j["links"] = {
      {"intra_node", {{"bandwidth", c.intraNode.bandwidth}, {"latency", c.intraNode.latency}}},
      {"inter_node", {{"bandwidth", c.interNode.bandwidth}, {"latency", c.interNode.latency}}}};
  return j.dump(2) + "\n";
}

bool loadCluster(const std::string &nameOrFile, Cluster &out, std::string &error) {
  if (preset(nameOrFile, out))
    return true;
  std::string path = nameOrFile;
  if (nameOrFile == "cpu") {
    path = cpuCalibrationPath();
    if (!fileExists(path)) {
      error = "--cluster cpu: this machine is not calibrated (no " + path +
              "); run 'shardc calibrate' first";
      return false;
    }
  } else if (!fileExists(path)) {
    std::string names;
    for (const std::string &n : clusterPresetNames())
      names += (names.empty() ? "" : ", ") + n;
    error = "--cluster " + nameOrFile + ": neither a preset (" + names + ") nor a readable file";
    return false;
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) {
    error = path + ": cannot read it";
    return false;
  }
  return parseCluster(text.str(), path, out, error);
}

bool clusterHolds(const Cluster &cluster, int64_t devices, std::string &error) {
  if (cluster.nodes > 0 &&
      devices > static_cast<int64_t>(cluster.nodes) * cluster.devicesPerNode) {
    error = "--gpus " + std::to_string(devices) + ": the cluster " + cluster.name + " has " +
            std::to_string(cluster.nodes) + " nodes of " +
            std::to_string(cluster.devicesPerNode) + " devices";
    return false;
  }
  return true;
}

std::string clusterSummary(const Cluster &c) {
  const DeviceSpec &d = c.device;
  return c.name + ": " + std::to_string(c.devicesPerNode) + " x " + d.name + " per node (" +
         fixed(d.memoryBytes / kGiB, 1) + " GiB, " + fixed(d.peakFlopsBf16 / 1e12, 1) +
         " TFLOP/s bf16, " + fixed(d.peakFlopsF32 / 1e12, 1) + " TFLOP/s fp32, " +
         fixed(d.memoryBandwidth / 1e9, 0) + " GB/s), within a node " +
         fixed(c.intraNode.bandwidth / 1e9, 1) + " GB/s, between nodes " +
         fixed(c.interNode.bandwidth / 1e9, 1) + " GB/s per device";
}

} // namespace shardc::cost
