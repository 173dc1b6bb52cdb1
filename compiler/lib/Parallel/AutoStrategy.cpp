//===- AutoStrategy.cpp -----------------------------------------------------------------===//
#include "shardc/Parallel/AutoStrategy.h"

#include "shardc/Support/Diagnostics.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

namespace shardc {

namespace {

// "512.00 MiB"; below 1 MiB in bytes, so that a small --gpu-memory never prints as 0.00 MiB.
std::string mib(uint64_t bytes) {
  if (bytes < 1024 * 1024)
    return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

// "zero1" for the data-parallel family, the canonical spelling otherwise.
std::string candidateName(const ParallelStrategy &c) {
  static const char *names[] = {"dp", "zero1", "zero2", "zero3"};
  if (c.tp == 1 && c.pp == 1)
    return names[c.zero];
  return c.canonical();
}

std::string scoreText(const PlannedStepCost &cost) {
  return "peak " + mib(cost.peakBytes) + " per rank, sends " + std::to_string(cost.commBytes) +
         " bytes per rank per step";
}

struct Scored {
  ParallelStrategy candidate;
  PlannedStepCost cost;
  int order = 0; // position in the order of candidates
};

class Chooser {
public:
  Chooser(const CompileOptions &opts, CandidateCompiler &compiler,
          std::vector<std::string> &decision)
      : opts_(opts), compiler_(compiler), decision_(decision),
        limit_(opts.gpuMemoryBytes ? mib(opts.gpuMemoryBytes) : "unlimited") {}

  bool run(ParallelStrategy &chosen, DataParallelBundle &out) {
    decision_.push_back(
        "auto: candidates on " + std::to_string(opts_.gpus) +
        " ranks in order of cost: dp, zero1, zero2, zero3, then (only if none fits) "
        "tensor parallelism, fewest tp devices first, with and without sp and ZeRO, the fewest "
        "bytes sent first, then (only if none fits) pipeline stages, fewest first, with the "
        "fewest tp devices and ZeRO stages that fit; each scored from its partitioned, memory-planned step (not lowered); "
        "--gpu-memory " + limit_);
    // 1. Data parallelism on every device, in order.
    for (int stage = 0; stage <= 3; ++stage) {
      ParallelStrategy c;
      c.dp = opts_.gpus;
      c.zero = stage;
      std::optional<Scored> s = scoreOne(c);
      if (s && fits(*s)) {
        int result = compileChosen(*s, chosen, out);
        if (result >= 0)
          return result == 1;
      }
    }
    // 2. Tensor parallelism, fewest tp devices first.
    for (int tp = 2; tp <= opts_.gpus; ++tp) {
      if (opts_.gpus % tp)
        continue;
      std::vector<Scored> fitting;
      for (int sp = 0; sp <= 1; ++sp)
        for (int stage = 0; stage <= (opts_.gpus / tp > 1 ? 3 : 0); ++stage) {
          ParallelStrategy c;
          c.dp = opts_.gpus / tp;
          c.tp = tp;
          c.sequenceParallel = sp == 1;
          c.zero = stage;
          if (std::optional<Scored> s = scoreOne(c); s && fits(*s))
            fitting.push_back(*s);
        }
      if (int result = chooseAmong(fitting, chosen, out); result >= 0)
        return result == 1;
    }
    // 3. Pipeline stages (memory-fit: the largest stage's peak), fewest stages first, then the
    // fewest tp devices beside them.
    for (int pp = 2; pp <= opts_.gpus; ++pp) {
      if (opts_.gpus % pp)
        continue;
      for (int tp = 1; tp <= opts_.gpus / pp; ++tp) {
        if ((opts_.gpus / pp) % tp)
          continue;
        const int dp = opts_.gpus / (pp * tp);
        std::vector<Scored> fitting;
        for (int stage = 0; stage <= (dp > 1 ? 3 : 0); ++stage) {
          ParallelStrategy c;
          c.dp = dp;
          c.tp = tp;
          c.pp = pp;
          c.zero = stage;
          if (std::optional<Scored> s = scoreOne(c); s && fits(*s))
            fitting.push_back(*s);
        }
        if (int result = chooseAmong(fitting, chosen, out); result >= 0)
          return result == 1;
      }
    }
    if (!smallest_) {
      // Nothing could be scored: the first refusal (data parallelism's) says why.
      printError(opts_.model + ": --strategy auto: the compiler refused every candidate on " +
                 std::to_string(opts_.gpus) + " ranks; " + firstRefusal_);
      return false;
    }
    printError(opts_.model + ": --strategy auto: no strategy fits in --gpu-memory " + limit_ +
               " on " + std::to_string(opts_.gpus) + " ranks; the smallest, " +
               candidateName(smallest_->candidate) + ", needs " +
               mib(smallest_->cost.peakBytes) + " per rank");
    return false;
  }

private:
  // Compiles the one of `fitting` that sends the fewest bytes (ties keep their order) and
  // records why the others were passed over: 1 chosen, 0 failed, -1 none of them fit lowered.
  int chooseAmong(std::vector<Scored> &fitting, ParallelStrategy &chosen,
                  DataParallelBundle &out) {
    std::sort(fitting.begin(), fitting.end(), [](const Scored &a, const Scored &b) {
      return std::tie(a.cost.commBytes, a.order) < std::tie(b.cost.commBytes, b.order);
    });
    for (size_t i = 0; i < fitting.size(); ++i) {
      int result = compileChosen(fitting[i], chosen, out);
      if (result < 0)
        continue;
      for (size_t j = i + 1; j < fitting.size(); ++j)
        decision_.push_back("passed over " + candidateName(fitting[j].candidate) + ": " +
                            scoreText(fitting[j].cost) + "; fits, but sends " +
                            (fitting[j].cost.commBytes > fitting[i].cost.commBytes
                                 ? "more bytes"
                                 : "as many bytes and comes later in the order"));
      return result;
    }
    return -1;
  }

  bool fits(const Scored &s) const {
    return !opts_.gpuMemoryBytes || s.cost.peakBytes <= opts_.gpuMemoryBytes;
  }

  // Scores `c`; records its rejection when it is refused or does not fit. A mesh the compiler
  // refuses is recorded once, for all its candidates.
  std::optional<Scored> scoreOne(const ParallelStrategy &c) {
    ParallelStrategy mesh = c;
    mesh.zero = 0;
    std::string key = mesh.canonical();
    if (auto it = refusedMeshes_.find(key); it != refusedMeshes_.end())
      return std::nullopt;
    if (std::optional<std::string> refusal = compiler_.meshRefusal(c)) {
      refusedMeshes_.insert(key);
      std::string name = key.substr(0, key.rfind(",zero="));
      decision_.push_back("rejected " + name + (c.dp > 1 ? " (every ZeRO stage)" : "") + ": " +
                          withoutModelName(*refusal));
      if (firstRefusal_.empty())
        firstRefusal_ = name + ": " + withoutModelName(*refusal);
      return std::nullopt;
    }
    std::string refusal;
    std::optional<PlannedStepCost> cost = compiler_.score(c, refusal);
    if (!cost) {
      decision_.push_back("rejected " + candidateName(c) + ": " + withoutModelName(refusal));
      if (firstRefusal_.empty())
        firstRefusal_ = candidateName(c) + ": " + withoutModelName(refusal);
      return std::nullopt;
    }
    Scored s{c, *cost, scored_++};
    if (!smallest_ || s.cost.peakBytes < smallest_->cost.peakBytes)
      smallest_ = s;
    if (!fits(s))
      decision_.push_back("rejected " + candidateName(c) + ": " + scoreText(s.cost) +
                          "; does not fit in " + limit_);
    return s;
  }

  // The compiler's errors start with the model's path, which plan.txt already names.
  std::string withoutModelName(const std::string &message) const {
    std::string prefix = opts_.model + ": ";
    return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
  }

  // 1: compiled and chosen; 0: compilation failed (error printed); -1: its lowered peak does
  // not fit after all (recorded; the next candidate is tried).
  int compileChosen(const Scored &s, ParallelStrategy &chosen, DataParallelBundle &out) {
    DataParallelBundle compiled;
    if (!compiler_.compile(s.candidate, compiled))
      return 0;
    uint64_t lowered = largestPlannedPeak(compiled.programs);
    if (opts_.gpuMemoryBytes && lowered > opts_.gpuMemoryBytes) {
      decision_.push_back("rejected " + candidateName(s.candidate) + ": its lowered programs' " +
                          "peak is " + mib(lowered) + " per rank (scored " +
                          mib(s.cost.peakBytes) + "); does not fit in " + limit_);
      return -1;
    }
    std::string why = s.candidate.pp > 1
                          ? "no data- or tensor-parallel candidate fits; the fewest pipeline "
                            "stages (pp=" + std::to_string(s.candidate.pp) +
                                ") whose largest stage fits, the fewest bytes sent among them"
                      : s.candidate.tp == 1
                          ? (s.candidate.zero == 3
                                 ? "the cheapest candidate that fits"
                                 : "the cheapest candidate that fits; the higher ZeRO stages "
                                   "were not needed (more work per step, and zero3 sends about "
                                   "1.5x the bytes)")
                          : "no data-parallel candidate fits; of the tp=" +
                                std::to_string(s.candidate.tp) +
                                " candidates that fit, the one sending the fewest bytes";
    std::string name = candidateName(s.candidate);
    if (name != s.candidate.canonical())
      name += " (" + s.candidate.canonical() + ")";
    // The lowered peak: with several programs sharing one weights file (pipeline stages) a
    // program's weights region can hold more than its step's own constants.
    PlannedStepCost lowCost = s.cost;
    lowCost.peakBytes = lowered;
    decision_.push_back("chose " + name + ": " + scoreText(lowCost) + "; " + why);
    chosen = s.candidate;
    out = std::move(compiled);
    return 1;
  }

  const CompileOptions &opts_;
  CandidateCompiler &compiler_;
  std::vector<std::string> &decision_;
  std::string limit_;
  std::optional<Scored> smallest_;
  int scored_ = 0;
  std::set<std::string> refusedMeshes_; // canonical spellings at zero=0
  std::string firstRefusal_;             // "MESH: why", for the error when nothing scores
};

} // namespace

bool chooseStrategy(const CompileOptions &opts, CandidateCompiler &compiler,
                    ParallelStrategy &chosen, DataParallelBundle &out,
                    std::vector<std::string> &decision) {
  return Chooser(opts, compiler, decision).run(chosen, out);
}

} // namespace shardc
