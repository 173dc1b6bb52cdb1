//===- CostFormulas.cpp -----------------------------------------------------------------===//
#include "shardc/Cost/CostFormulas.h"

#include <algorithm>

namespace shardc::cost {

double gemmEfficiency(const DeviceSpec &device, double m, double n, double k) {
  auto f = [&](double x) { return x / (x + device.gemm.halfDim); };
  return device.gemm.max * f(m) * f(n) * f(k);
}

double gemmSeconds(const DeviceSpec &device, MatmulPrecision precision, double m, double n,
                   double k, double batch) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
    return 0;
  const double peak =
      precision == MatmulPrecision::Bf16 ? device.peakFlopsBf16 : device.peakFlopsF32;
  return 2 * m * n * k * batch / (peak * gemmEfficiency(device, m, n, k)) + device.kernelSeconds;
}

double memoryBoundSeconds(const DeviceSpec &device, double bytes, double flops) {
  const double moving = bytes / (device.memoryBandwidth * device.memoryEfficiency);
  const double computing =
      flops / (device.elementwiseFlops > 0 ? device.elementwiseFlops : device.peakFlopsF32);
  return std::max(moving, computing) + device.kernelSeconds;
}

double ringSeconds(const LinkSpec &link, CollectiveKind kind, double bytes, int64_t n) {
  if (n <= 1 || bytes <= 0)
    return 0;
  const double share = static_cast<double>(n - 1) / static_cast<double>(n);
  const double steps = static_cast<double>(n - 1);
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2 * share * bytes / link.bandwidth + 2 * steps * link.latency;
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllGather:
  case CollectiveKind::AllToAll:
    return share * bytes / link.bandwidth + steps * link.latency;
  }
  return 0;
}

double collectiveSeconds(const Cluster &cluster, CollectiveKind kind, double bytes, int64_t n,
                         int64_t nodes) {
  if (n <= 1)
    return 0;
  if (nodes <= 1)
    return ringSeconds(cluster.intraNode, kind, bytes, n);
  const double flat = ringSeconds(cluster.interNode, kind, bytes, n);
  const int64_t local = n / nodes;
  if (local <= 1 || kind == CollectiveKind::AllToAll)
    return flat;
  // Inside each node first, so that only the node's share crosses the slower link (the
  // node's `local` rings between nodes run side by side, one per device).
  const double inside = ringSeconds(cluster.intraNode, CollectiveKind::ReduceScatter, bytes, local);
  const double share = bytes / static_cast<double>(local);
  double hierarchical = 0;
  switch (kind) {
  case CollectiveKind::AllReduce:
    hierarchical = 2 * inside + ringSeconds(cluster.interNode, kind, share, nodes);
    break;
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllGather:
    hierarchical = inside + ringSeconds(cluster.interNode, kind, share, nodes);
    break;
  case CollectiveKind::AllToAll:
    break;
  }
  return std::min(flat, hierarchical);
}

double transferSeconds(const Cluster &cluster, double bytes, bool crossesNodes) {
  const LinkSpec &link = crossesNodes ? cluster.interNode : cluster.intraNode;
  return link.latency + bytes / link.bandwidth;
}

double pipelineBubbleSeconds(int64_t p, int64_t v, double forward, double backward,
                             bool zeroBubbleH1) {
  if (p <= 1)
    return 0;
  // ZB-H1 splits backward into B and W (about half each) and runs the deferred W in the
  // cool-down: the idle time is (p-1)(F + B - W), a third of 1F1B's when F = B = W.
  const double idle = zeroBubbleH1 ? forward : forward + backward;
  return static_cast<double>(p - 1) * idle / static_cast<double>(std::max<int64_t>(v, 1));
}

} // namespace shardc::cost
