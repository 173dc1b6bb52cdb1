//===- Cluster.h - the machines a plan is costed on (--cluster) -------------------------===//
//
// A cluster is nodes of identical devices: per device its memory, peak FLOP/s per element
// type, memory bandwidth and how close its matrix products come to the peak; per link level
// (between the devices of one node, between nodes) the bandwidth and latency of one device's
// transfers. `--cluster NAME|FILE` names a preset (public specifications: a100-80g-8x,
// h100-80g-8x, h200-141g-8x), `cpu` (this machine, as `shardc calibrate` measured it), or a
// JSON file in the format clusterToJson writes (docs/cli.md, "Cluster files").
//
// Mesh axes map onto the topology innermost first: the ranks of a mesh are numbered with its
// last axis fastest (runtime/common/mesh.h), and rank r sits on node r / devices_per_node, so
// tp (the last axis) stays inside a node while it fits, then pp, then dp.
//
// Plain C++ (no MLIR): the plan report and the calibration read it too.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_COST_CLUSTER_H
#define SHARDC_COST_CLUSTER_H

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::cost {

// How close a matrix product of M x K by K x N comes to the peak: max * f(M) f(N) f(K), with
// f(x) = x / (x + half_dim): a dimension of half_dim halves the rate, large ones approach
// max. The same constants for every model on the device.
struct GemmEfficiency {
  double max = 0.8;
  double halfDim = 64;
};

struct DeviceSpec {
  std::string name;
  uint64_t memoryBytes = 0;
  double peakFlopsF32 = 0;  // FLOP/s of fp32 matrix products
  double peakFlopsBf16 = 0; // bf16 and fp16 (dense)
  double memoryBandwidth = 0; // bytes/s
  GemmEfficiency gemm;
  // The share of memoryBandwidth that element-wise work reaches, and the fixed cost of
  // starting one kernel (a launch on a GPU, a call on the CPU).
  double memoryEfficiency = 0.8;
  double kernelSeconds = 0;
  // FLOP/s of the ops that are not matrix products (one per element of their largest operand
  // or result, as CostOpInterface counts them): exp, erf, softmax and the like; 0: the fp32
  // peak (a GPU's element-wise units run at it).
  double elementwiseFlops = 0;
  // With all of a node's cores busy, what each one's element-wise work reaches of the node's
  // memory bandwidth (the CPU's cores share it); 0: memoryBandwidth whatever the load.
  double loadedMemoryBandwidth = 0;
};

struct LinkSpec {
  double bandwidth = 0; // bytes/s one device sends while it receives as much
  double latency = 0;   // seconds per message (per ring step)
};

struct Cluster {
  std::string name;
  std::string source; // where the numbers come from
  int devicesPerNode = 1;
  int nodes = 0; // 0: as many as the devices need
  // Cores a node's devices share (the CPU, where a rank is a set of threads): more ranks than
  // cores on a node take turns. 0: every device computes on its own (GPUs).
  int coresPerNode = 0;
  DeviceSpec device;
  LinkSpec intraNode, interNode;

  // The node of rank `rank`.
  int nodeOf(int64_t rank) const { return static_cast<int>(rank / devicesPerNode); }
  // Whether the ranks (world ranks of one group) all sit on one node.
  bool withinOneNode(const std::vector<int64_t> &ranks) const;
};

// The presets' names, in the order `--help` lists them.
std::vector<std::string> clusterPresetNames();

// Where `shardc calibrate` writes and `--cluster cpu` reads this machine's numbers:
// $SHARDC_CLUSTER_DIR/cpu.json, else $XDG_CONFIG_HOME/shardc/cpu.json, else
// ~/.config/shardc/cpu.json.
std::string cpuCalibrationPath();

// A preset, `cpu` (its calibration file) or a JSON file; false with a one-line `error` naming
// the name or file and the field at fault.
bool loadCluster(const std::string &nameOrFile, Cluster &out, std::string &error);
// Parses a cluster from JSON text; `origin` names it in errors.
bool parseCluster(const std::string &text, const std::string &origin, Cluster &out,
                  std::string &error);
std::string clusterToJson(const Cluster &cluster);

// Whether `devices` ranks fit the cluster (its nodes, when it fixes them); else why not.
bool clusterHolds(const Cluster &cluster, int64_t devices, std::string &error);

// "a100-80g-8x: 8 x A100-SXM4-80GB per node (80.0 GiB, 312 TFLOP/s bf16, 2.04 TB/s),
// NVLink 300 GB/s, between nodes 25 GB/s".
std::string clusterSummary(const Cluster &cluster);

} // namespace shardc::cost

#endif
