//===- CostFormulas.h - how long work and messages take on a cluster ----------------------===//
//
// The cost model's formulas, each a function of sizes and the cluster (Cluster.h), the same
// constants for every model:
//   matrix product   2MNK FLOPs at peak x efficiency(M, N, K) (GemmEfficiency), plus a kernel
//   other ops        roofline: the longer of bytes / (bandwidth x memory efficiency) and FLOPs
//                    at the element-wise rate (the fp32 peak unless the device gives one),
//                    plus a kernel start
//   collectives      alpha-beta on the link level the group spans: a ring of n ranks sends
//                    2(n-1)/n of the buffer in 2(n-1) steps for all-reduce, (n-1)/n in n-1 for
//                    reduce-scatter and all-gather; a group spanning nodes either rings over
//                    the slower link or goes hierarchically (reduce-scatter inside each node,
//                    all-reduce of the node's share between nodes, all-gather inside), the
//                    faster of the two
//   transfers        alpha + bytes / bandwidth
//   pipeline bubble  (p-1) stage-steps of forward and backward for GPipe and 1F1B, (p-1)/v of
//                    them interleaved
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_COST_COSTFORMULAS_H
#define SHARDC_COST_COSTFORMULAS_H

#include "shardc/Cost/Cluster.h"

#include <cstdint>

namespace shardc::cost {

enum class MatmulPrecision { F32, Bf16 };

double gemmEfficiency(const DeviceSpec &device, double m, double n, double k);
// Seconds of an M x K by K x N product (with `batch` such products, as a batched matmul).
double gemmSeconds(const DeviceSpec &device, MatmulPrecision precision, double m, double n,
                   double k, double batch = 1);
// Seconds of an op that moves `bytes` and computes `flops` (not a matrix product).
double memoryBoundSeconds(const DeviceSpec &device, double bytes, double flops);

enum class CollectiveKind { AllReduce, ReduceScatter, AllGather, AllToAll };

// A ring of n ranks on one link level; `bytes` is one rank's whole buffer (all-reduce's data,
// reduce-scatter's input, all-gather's output).
double ringSeconds(const LinkSpec &link, CollectiveKind kind, double bytes, int64_t n);
// A group of n ranks spread evenly over `nodes` nodes of the cluster: the ring on the slowest
// link it crosses, or (nodes > 1, several ranks per node) hierarchical, whichever is faster.
double collectiveSeconds(const Cluster &cluster, CollectiveKind kind, double bytes, int64_t n,
                         int64_t nodes);
// One point-to-point message, inside a node or between nodes.
double transferSeconds(const Cluster &cluster, double bytes, bool crossesNodes);

// The idle time of a pipeline of p stages whose stage-steps take `forward` and `backward`
// seconds per microbatch (uniform stages): (p-1)(forward + backward), divided by v for the
// interleaved schedule's v chunks per rank. ZB-H1 fills about two thirds of 1F1B's.
double pipelineBubbleSeconds(int64_t p, int64_t v, double forward, double backward,
                             bool zeroBubbleH1 = false);

} // namespace shardc::cost

#endif
