//===- Calibrate.h - `shardc calibrate`: this machine's numbers for --cluster cpu ---------===//
//
// Measures, with one thread per rank as shardrun's ranks run (OpenBLAS on one thread): the
// runtime's CPU matmul kernel on square products of 32 to 1024 (f32, and bf16 operands), the
// add kernel on arrays larger than the caches (memory bandwidth) and on 16 elements (a
// kernel's fixed cost), exp and erf (the rate of element-wise work that computes), add on
// every core at once (the bandwidth a core gets under load), and the local communicator's
// ring all-reduce between 2 ranks
// (threads) of 16 MiB and of 4 bytes (the link's bandwidth and latency). The matmul rates fix
// the fp32 peak and half_dim of the efficiency curve (max = 1: the peak is the fitted one),
// bf16's peak by the measured ratio. A node is this machine: its cores shared by the ranks.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_COST_CALIBRATE_H
#define SHARDC_COST_CALIBRATE_H

#include "shardc/Cost/Cluster.h"

#include <string>
#include <vector>

namespace shardc::cost {

// The measured cluster; `log` gets one line per measurement (progress for the user).
bool calibrateCpu(Cluster &out, std::vector<std::string> &log, std::string &error);

} // namespace shardc::cost

#endif
