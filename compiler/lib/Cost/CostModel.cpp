//===- CostModel.cpp --------------------------------------------------------------------===//
#include "shardc/Cost/CostModel.h"

#include "shardc/Cost/CostFormulas.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

namespace shardc::cost {

namespace {

// Per placement: 0 the embedding side, 1..U the units, U+1 the head side.
size_t placeOf(int unit, size_t units) {
  if (unit == -1)
    return 0;
  if (unit < 0)
    return units + 1;
  return static_cast<size_t>(unit) + 1;
}

// Costs per placement.
struct Placed {
  std::vector<double> forward, backward, tpForward, tpBackward, recompute, step;
  explicit Placed(size_t n)
      : forward(n, 0), backward(n, 0), tpForward(n, 0), tpBackward(n, 0), recompute(n, 0),
        step(n, 0) {}
};

// The first unit of each of `chunks` contiguous chunks of the units, cut where the running
// cost is nearest each k / chunks of the total (every chunk at least one unit); first[chunks]
// = units.
std::vector<size_t> balancedCuts(const std::vector<double> &cost, size_t chunks) {
  const size_t units = cost.size();
  std::vector<size_t> first(chunks + 1, units);
  first[0] = 0;
  const double total = std::accumulate(cost.begin(), cost.end(), 0.0);
  double running = 0;
  size_t next = 1;
  for (size_t u = 0; u < units && next < chunks; ++u) {
    const double before = running;
    running += cost[u];
    const double target = total * static_cast<double>(next) / static_cast<double>(chunks);
    // Cut before u+1 when that is nearer the target than cutting before u, leaving room.
    const size_t remainingUnits = units - (u + 1);
    const size_t remainingChunks = chunks - next;
    if (remainingUnits < remainingChunks) {
      first[next++] = u + 1;
      continue;
    }
    if (running >= target || remainingUnits == remainingChunks) {
      const bool earlier = u > first[next - 1] && target - before < running - target;
      first[next++] = earlier ? u : u + 1;
      if (earlier) {
        // Re-examine u as the start of the new chunk.
        running = before;
        --u;
      }
    }
  }
  return first;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string seconds(double s) {
  if (s >= 1)
    return fixed(s, 3) + " s";
  if (s >= 1e-3)
    return fixed(s * 1e3, 2) + " ms";
  return fixed(s * 1e6, 1) + " us";
}

} // namespace

std::string Candidate::text() const {
  // The strategy as --strategy spells it (ParallelStrategy::canonical), then the rest.
  std::string t = "dp=" + std::to_string(dp) + (tp > 1 ? ",tp=" + std::to_string(tp) : "");
  if (sequenceParallel)
    t += ",sp=1";
  if (pp > 1)
    t += ",pp=" + std::to_string(pp);
  t += ",zero=" + std::to_string(zero) + " mb=" + std::to_string(microBatches);
  if (pp > 1)
    t += " " + schedule + (virtualStages > 1 ? " v=" + std::to_string(virtualStages) : "");
  if (remat != "none")
    t += " remat=" + remat;
  return t;
}

bool predictStep(const StepProfile &profile, const Cluster &cluster, const Candidate &c,
                 Prediction &out, std::string &why) {
  out = Prediction();
  const DeviceSpec &dev = cluster.device;
  if (c.dp < 1 || c.tp < 1 || c.pp < 1 || c.microBatches < 1 || c.virtualStages < 1) {
    why = "every axis and the microbatches must be at least 1";
    return false;
  }
  if (profile.globalRows % c.dp != 0 || (profile.globalRows / c.dp) % c.microBatches != 0) {
    why = "the global batch's " + std::to_string(profile.globalRows) + " rows do not split into " +
          std::to_string(c.dp) + " replicas of " + std::to_string(c.microBatches) +
          " microbatches";
    return false;
  }
  const double microRows =
      static_cast<double>(profile.globalRows / c.dp / c.microBatches);
  const double s = microRows / static_cast<double>(std::max<int64_t>(profile.rows, 1));
  const size_t profiled = profile.units.size();
  // The model's units: each profiled one as many times as it stands for.
  std::vector<size_t> source;
  for (size_t u = 0; u < profiled; ++u)
    for (int64_t i = 0; i < (profile.unitRepeats.empty() ? 1 : profile.unitRepeats[u]); ++i)
      source.push_back(u);
  const size_t U = source.size();
  const int64_t V = c.pp * c.virtualStages;
  if (c.pp > 1 && static_cast<int64_t>(U) < V) {
    why = std::to_string(V) + " pipeline chunks need as many repeated layers; the model has " +
          std::to_string(U);
    return false;
  }
  const MatmulPrecision precision = profile.bf16 ? MatmulPrecision::Bf16 : MatmulPrecision::F32;
  const int64_t perNode = cluster.devicesPerNode;
  auto nodesSpanned = [&](int64_t n, int64_t stride) -> int64_t {
    // n ranks `stride` apart (tp innermost, then pp, then dp).
    if (stride >= perNode)
      return n;
    // A group of consecutive blocks that does not tile a node straddles two of them.
    if (n * stride < perNode && perNode % (n * stride) != 0)
      return 2;
    const int64_t onOneNode = std::max<int64_t>(1, perNode / stride);
    return (n + onOneNode - 1) / onOneNode;
  };
  const int64_t tpNodes = nodesSpanned(c.tp, 1);
  // Ranks that share a node's cores (the CPU) take turns: the step is at least the node's
  // work over its cores (below), and their communication is work of those cores too, which
  // hides behind nothing.
  const bool sharedCores = cluster.coresPerNode > 0;

  // Ranks that run at once on a node share its memory bandwidth (the CPU's cores).
  DeviceSpec loadedDevice = dev;
  if (cluster.coresPerNode > 0 && dev.loadedMemoryBandwidth > 0) {
    const double busy = static_cast<double>(
        std::min<int64_t>(std::min<int64_t>(c.devices(), perNode), cluster.coresPerNode));
    const double share = (busy - 1) / std::max(1.0, cluster.coresPerNode - 1.0);
    loadedDevice.memoryBandwidth =
        dev.memoryBandwidth + share * (dev.loadedMemoryBandwidth - dev.memoryBandwidth);
  }
  // 1. Every op on the candidate's rows, per placement (of the profiled units).
  Placed placed(profiled + 2);
  for (const ProfiledOp &op : profile.ops) {
    const bool scaled = op.phase != ProfiledOp::Phase::Step;
    const double f = scaled ? s : 1.0;
    double t = 0;
    switch (op.kind) {
    case ProfiledOp::Kind::Gemm:
      t = gemmSeconds(dev, precision, op.m * (op.mRows ? f : 1), op.n * (op.nRows ? f : 1),
                      op.k * (op.kRows ? f : 1), op.batch * (op.batchRows ? f : 1));
      break;
    case ProfiledOp::Kind::Other:
      t = memoryBoundSeconds(loadedDevice, op.bytes * f, op.flops * f);
      break;
    case ProfiledOp::Kind::TpCollective:
      t = collectiveSeconds(cluster, op.collective, op.bytes * f, c.tp, tpNodes);
      break;
    }
    const size_t at = placeOf(op.unit, profiled);
    if (op.phase == ProfiledOp::Phase::Step) {
      placed.step[at] += t;
      continue;
    }
    const bool fwd = op.phase == ProfiledOp::Phase::Forward;
    if (op.kind == ProfiledOp::Kind::TpCollective)
      (fwd ? placed.tpForward : placed.tpBackward)[at] += t;
    else
      (fwd ? placed.forward : placed.backward)[at] += t;
    if (op.recomputed)
      placed.recompute[at] += t;
  }

  // 2. Chunks of units, and each rank's share.
  const size_t chunks = static_cast<size_t>(c.pp > 1 ? V : 1);
  std::vector<size_t> first;
  if (chunks == 1) {
    first = {0, U};
  } else {
    std::vector<double> unitCost(U);
    for (size_t u = 0; u < U; ++u) {
      const size_t at = source[u] + 1;
      unitCost[u] = placed.forward[at] + placed.backward[at] + placed.tpForward[at] +
                    placed.tpBackward[at];
    }
    first = balancedCuts(unitCost, chunks);
  }
  struct Chunk {
    double forward = 0, backward = 0, tp = 0, tpForward = 0, recompute = 0, step = 0,
           params = 0, stash = 0, input = 0;
  };
  std::vector<Chunk> chunk(chunks);
  auto addPlace = [&](Chunk &ch, size_t at) {
    ch.forward += placed.forward[at] + placed.tpForward[at];
    ch.backward += placed.backward[at] + placed.tpBackward[at];
    ch.tp += placed.tpForward[at] + placed.tpBackward[at];
    ch.tpForward += placed.tpForward[at];
    ch.recompute += placed.recompute[at];
    ch.step += placed.step[at];
  };
  for (size_t q = 0; q < chunks; ++q) {
    for (size_t u = first[q]; u < first[q + 1]; ++u) {
      addPlace(chunk[q], source[u] + 1);
      chunk[q].params += profile.unitParamBytes[source[u]];
      chunk[q].stash += profile.unitStashBytes[source[u]] * s;
    }
    if (first[q] < U)
      chunk[q].input = profile.unitInputBytes[source[first[q]]] * s;
  }
  addPlace(chunk.front(), 0);
  addPlace(chunk.back(), profiled + 1);
  chunk.front().params += profile.beforeParamBytes;
  chunk.back().params += profile.afterParamBytes;
  chunk.front().stash += profile.beforeStashBytes * s;
  chunk.back().stash += profile.afterStashBytes * s;

  // Point-to-point: a chunk receives its input forward and its output's gradient backward.
  const bool ppCrossesNodes = c.tp * c.pp > perNode;
  std::vector<double> p2p(chunks, 0), transferIn(chunks, 0);
  for (size_t q = 1; q < chunks; ++q) {
    const double t = transferSeconds(cluster, chunk[q].input, ppCrossesNodes);
    transferIn[q] = t;
    p2p[q] += t;     // the activations into chunk q
    p2p[q - 1] += t; // their gradient back into chunk q-1
  }

  const size_t P = static_cast<size_t>(c.pp);
  out.chunks.assign(P, {});
  for (size_t q = 0; q < chunks; ++q) {
    Prediction::ChunkSeconds cs;
    cs.forward = chunk[q].forward;
    cs.backward = chunk[q].backward;
    cs.tpForward = chunk[q].tpForward;
    cs.tpBackward = chunk[q].tp - chunk[q].tpForward;
    cs.recompute = chunk[q].recompute;
    cs.transferIn = transferIn[q];
    out.chunks[q % P].push_back(cs);
  }
  out.rankReduceSeconds.assign(P, 0);
  out.rankExposedSeconds.assign(P, 0);
  out.rankUpdateSeconds.assign(P, 0);
  struct Rank {
    double forward = 0, backward = 0, tp = 0, p2p = 0, recompute = 0, step = 0, params = 0,
           stash = 0;
  };
  std::vector<Rank> rank(P);
  for (size_t q = 0; q < chunks; ++q) {
    Rank &r = rank[q % P];
    r.forward += chunk[q].forward + p2p[q] / 2;
    r.backward += chunk[q].backward + p2p[q] / 2;
    r.tp += chunk[q].tp;
    r.p2p += p2p[q];
    r.recompute += chunk[q].recompute;
    r.step += chunk[q].step;
    r.params += chunk[q].params;
    r.stash += chunk[q].stash;
  }

  // 3. The schedule.
  const double m = static_cast<double>(c.microBatches);
  size_t slowest = 0;
  double sumS = 0, maxChunk = 0, maxForward = 0;
  for (size_t r = 0; r < P; ++r) {
    const double S = rank[r].forward + rank[r].backward;
    sumS += S;
    if (S > rank[slowest].forward + rank[slowest].backward)
      slowest = r;
    maxForward = std::max(maxForward, rank[r].forward);
  }
  for (size_t q = 0; q < chunks; ++q)
    maxChunk = std::max(maxChunk, chunk[q].forward + chunk[q].backward + p2p[q]);
  const double maxS = rank[slowest].forward + rank[slowest].backward;
  double pipeline = m * maxS;
  if (c.pp > 1) {
    const double p1 = static_cast<double>(c.pp - 1);
    if (c.schedule == "naive")
      pipeline = sumS * m;
    else if (c.schedule == "interleaved")
      pipeline = m * maxS + p1 * maxChunk;
    else if (c.schedule == "zb-h1")
      pipeline = m * maxS + p1 * maxForward;
    else // gpipe, 1f1b
      pipeline = (m - 1) * maxS + sumS;
  }

  // 4. Data parallelism, ZeRO and the optimizer, per rank.
  const int64_t dpNodes = nodesSpanned(c.dp, c.tp * c.pp);
  double dpExposed = 0, optimizer = 0;
  uint64_t peak = 0;
  // Every rank holds all frozen initializers (the weights region is shared by the stages) and
  // the largest workspace of an op.
  double frozen = profile.beforeFrozenBytes + profile.afterFrozenBytes;
  for (size_t u = 0; u < U; ++u)
    frozen += profile.unitFrozenBytes.empty() ? 0 : profile.unitFrozenBytes[source[u]];
  // The op workspaces grow with the rows; ZeRO-3 also gathers a unit's parameters whole.
  const double workspace = profile.workspaceBytes * s;
  double largestUnit = 0;
  for (size_t u = 0; u < profiled; ++u)
    largestUnit = std::max(largestUnit, profile.unitParamBytes[u]);
  const double zeroShare = c.dp > 1 ? 1.0 / static_cast<double>(c.dp) : 1.0;
  double nodeWork = 0; // one replica's stages' busy time: every rank's, over pp
  for (size_t r = 0; r < P; ++r) {
    const Rank &rk = rank[r];
    double exposed = 0;
    if (c.dp > 1) {
      // Overlaps the last microbatch's backward pass (its buckets go as they fill). ZeRO
      // reduce-scatters instead, and gathers the updated parameters after the optimizer, in
      // the open (stages 1 and 2; stage 3 gathers them where they are read).
      const double reduce =
          c.zero == 0
              ? collectiveSeconds(cluster, CollectiveKind::AllReduce, rk.params, c.dp, dpNodes)
              : collectiveSeconds(cluster, CollectiveKind::ReduceScatter, rk.params, c.dp,
                                  dpNodes);
      out.rankReduceSeconds[r] = reduce;
      exposed = sharedCores ? reduce : std::max(0.0, reduce - rk.backward);
      if (c.zero == 1 || c.zero == 2)
        exposed += collectiveSeconds(cluster, CollectiveKind::AllGather,
                                     rk.params * (profile.bf16 ? 0.5 : 1.0), c.dp, dpNodes);
      if (c.zero == 3) {
        const double gather = collectiveSeconds(cluster, CollectiveKind::AllGather,
                                                rk.params * (profile.bf16 ? 0.5 : 1.0), c.dp,
                                                dpNodes);
        exposed += sharedCores ? 2 * m * gather
                               : std::max(0.0, 2 * m * gather - m * (rk.forward + rk.backward));
      }
    }
    dpExposed = std::max(dpExposed, exposed);
    const double update = rk.step * (c.zero >= 1 ? zeroShare : 1.0);
    out.rankExposedSeconds[r] = exposed;
    out.rankUpdateSeconds[r] = update;
    optimizer = std::max(optimizer, update);
    nodeWork += m * (rk.forward + rk.backward) + exposed + update;
    // Memory.
    // The gradients are whole until the backward pass ends (the reduction, or ZeRO's
    // reduce-scatter, comes after it), whatever the stage.
    const double params = rk.params;
    double bytes = params * (c.zero >= 3 ? zeroShare : 1.0) + params +
                   params * profile.stateBytesPerParamByte * (c.zero >= 1 ? zeroShare : 1.0) +
                   frozen + workspace + (c.zero >= 3 ? largestUnit : 0.0);
    if (profile.bf16)
      bytes += params / 2 * (c.zero >= 3 ? zeroShare : 1.0);
    double inFlight = 1;
    const double pd = static_cast<double>(c.pp), rd = static_cast<double>(r);
    if (c.pp > 1) {
      if (c.schedule == "gpipe")
        inFlight = m;
      else if (c.schedule == "interleaved") {
        const double v = static_cast<double>(c.virtualStages);
        inFlight = std::min(m * v, 2 * (pd - rd - 1) + (v - 1) * pd + 1) / v;
      } else if (c.schedule != "naive")
        inFlight = std::min(m, pd - rd);
    }
    bytes += rk.stash * inFlight;
    peak = std::max(peak, static_cast<uint64_t>(bytes));
  }

  out.stepSeconds = pipeline + dpExposed + optimizer;
  if (sharedCores) {
    // A work-conserving scheduler: the node's ranks' busy time over its cores, when more.
    const double ranksOnNode =
        static_cast<double>(std::min<int64_t>(c.devices(), perNode));
    const double shared = nodeWork * ranksOnNode / static_cast<double>(c.pp) /
                          static_cast<double>(cluster.coresPerNode);
    out.stepSeconds = std::max(out.stepSeconds, shared);
  }
  const Rank &sr = rank[slowest];
  out.computeSeconds = m * (maxS - sr.tp - sr.p2p);
  out.tpCommSeconds = m * sr.tp;
  out.ppCommSeconds = m * sr.p2p;
  out.bubbleSeconds = pipeline - m * maxS;
  out.dpCommSeconds = dpExposed;
  out.optimizerSeconds = optimizer;
  out.recomputeSeconds = m * sr.recompute;
  out.exposedCommSeconds = out.tpCommSeconds + out.ppCommSeconds + out.dpCommSeconds;
  out.bubbleFraction = out.stepSeconds > 0 ? out.bubbleSeconds / out.stepSeconds : 0;
  const double devices = static_cast<double>(c.devices());
  out.tokensPerSecond =
      static_cast<double>(profile.globalRows * profile.tokensPerRow) / out.stepSeconds;
  out.modelFlopsPerDevice = profile.modelFlops / out.stepSeconds / devices;
  out.mfu = out.modelFlopsPerDevice /
            (precision == MatmulPrecision::Bf16 ? dev.peakFlopsBf16 : dev.peakFlopsF32);
  out.peakBytes = peak;
  return true;
}

std::string predictionText(const Prediction &p) {
  const double gib = 1024.0 * 1024 * 1024;
  return "step " + seconds(p.stepSeconds) + ", " + fixed(p.tokensPerSecond, 0) + " tokens/s, " +
         fixed(p.modelFlopsPerDevice / 1e12, 2) + " TFLOP/s per device (" +
         fixed(100 * p.mfu, 1) + "% MFU): compute " + seconds(p.computeSeconds) + ", bubble " +
         seconds(p.bubbleSeconds) + " (" + fixed(100 * p.bubbleFraction, 1) + "%), tp " +
         seconds(p.tpCommSeconds) + ", pp " + seconds(p.ppCommSeconds) + ", dp exposed " +
         seconds(p.dpCommSeconds) + ", recompute " + seconds(p.recomputeSeconds) +
         " (within compute), optimizer " + seconds(p.optimizerSeconds) + "; peak " +
         (static_cast<double>(p.peakBytes) >= gib
              ? fixed(static_cast<double>(p.peakBytes) / gib, 2) + " GiB"
              : fixed(static_cast<double>(p.peakBytes) / (1024.0 * 1024), 2) + " MiB") +
         " per device (analytic)";
}

} // namespace shardc::cost
