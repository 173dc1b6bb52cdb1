//===- SplitStages.cpp - one pipeline stage's step, its transfers placed by the schedule -===//
//
// Every stage compiles the same module with this pass and keeps its own part, so the
// analysis (which values cross which cut, for which microbatch, in which order) is the same
// on every stage and the transfers pair up: stage s's k-th message to t holds the same
// tensors, in the same order, as t's k-th receive from s.
//
// Ops fall into three kinds here:
//   replicable  pure ops of constants and non-trained inputs alone (masks, position ids, label
//               counts, step + 1), and of the gradient norm (the clip's scale): every stage
//               that reads one computes it
//   step ops    of one microbatch, in its forward (F: the loss depends on it) or backward step
//   floating    the rest (a gradient's sum over microbatches, the optimizer, casts of weights):
//               after the step their operands come from, else just before their first reader
//
//===-------------------------------------------------------------------------------------===//
#include "passes/pipeline/PipelinePasses.h"
#include "passes/pipeline/PipelineSchedule.h"
#include "passes/sharding/ValueSharding.h"

#include "shardc/Autodiff/TrainStep.h"
#include "shardc/Dialect/Graph/ForwardPass.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/GraphTraits.h"
#include "shardc/Dialect/Graph/ModuleUnit.h"
#include "shardc/Dialect/Graph/OpCost.h"
#include "shardc/Lowering/TensorBytes.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace shardc {
#define GEN_PASS_DEF_SPLITSTAGES
#include "passes/pipeline/PipelinePasses.h.inc"

using namespace mlir;
using pipeline::Step;
using pipeline::StepKind;

using graph::kPipelineCutsAttr;
using graph::kPipelineScheduleAttr;

namespace {

uint64_t valueBytes(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return 0;
  return static_cast<uint64_t>(t.getNumElements()) * runtimeElementSize(t.getElementType());
}

uint64_t flopsOf(Operation *op) {
  auto cost = dyn_cast<graph::CostOpInterface>(op);
  return cost ? cost.getFlops() : 0;
}

std::string nameOf(Operation *op) {
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    return loc.getName().str();
  return op->getName().getStringRef().str();
}

std::string valueName(Value v) {
  if (Operation *def = v.getDefiningOp()) {
    std::string name = nameOf(def);
    if (def->getNumResults() > 1)
      name += "#" + std::to_string(cast<OpResult>(v).getResultNumber());
    return name;
  }
  return "argument " + std::to_string(cast<BlockArgument>(v).getArgNumber());
}

// An argument every stage keeps even when it reads none: what the runtime feeds every
// training program (the step count, the learning rate, the seed).
bool isRunArgument(func::FuncOp func, unsigned i) {
  return func.getArgAttr(i, kStepAttr) || func.getArgAttr(i, kLrAttr) ||
         func.getArgAttr(i, kSeedAttr);
}

// A trained parameter or optimizer state: its value is one stage's.
bool isStateArgument(func::FuncOp func, unsigned i) {
  if (func.getArgAttr(i, kStateAttr))
    return true;
  return func.getArgAttr(i, graph::kParamAttr) && !func.getArgAttr(i, graph::kNotTrainableAttr) &&
         !func.getArgAttr(i, graph::kBufferAttr);
}

struct SplitStagesPass : impl::SplitStagesBase<SplitStagesPass> {
  using SplitStagesBase::SplitStagesBase;

  // What crosses cut c (between stage c and c + 1) for microbatch m: forwards after F(m),
  // backwards after B(m). In the order of their producers in the block.
  using CutSets = std::vector<std::vector<llvm::SetVector<Value>>>;

  void runOnOperation() override {
    if (stages <= 1)
      return;
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("train_step");
    if (!func) {
      module.emitError("pipeline stages need a training step (@train_step)");
      return signalPassFailure();
    }
    if (stage < 0 || stage >= stages) {
      func.emitError("pipeline stage ")
          << static_cast<int64_t>(stage) << " of " << static_cast<int64_t>(stages)
          << " does not exist";
      return signalPassFailure();
    }
    if (failed(split(module, func)))
      signalPassFailure();
  }

  LogicalResult split(ModuleOp module, func::FuncOp func) {
    Block &body = func.getBody().front();
    Operation *ret = body.getTerminator();
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto name = func.getArgAttrOfType<StringAttr>(i, kStateAttr);
          name && isLossScaleState(name.getValue()))
        return func.emitError("--strategy pp: dynamic loss scaling is not supported with "
                              "pipeline stages yet (use --precision bf16)");
    std::vector<Operation *> ops;
    llvm::DenseMap<Operation *, size_t> index;
    for (Operation &op : body.without_terminator()) {
      index[&op] = ops.size();
      ops.push_back(&op);
    }
    const size_t n = ops.size();
    auto producer = [&](Value v) -> int64_t {
      Operation *def = v.getDefiningOp();
      auto it = def ? index.find(def) : index.end();
      return it == index.end() ? -1 : static_cast<int64_t>(it->second);
    };

    // 1. Replicable values: constants, and pure ops of them and of arguments that are not a
    // trained parameter or state.
    llvm::DenseSet<Value> replicableValue;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (!isStateArgument(func, i))
        replicableValue.insert(func.getArgument(i));
    std::vector<bool> replicable(n, false);
    for (size_t i = 0; i < n; ++i) {
      Operation *op = ops[i];
      if (op->getNumResults() == 0 || !isPure(op) || op->getNumRegions() != 0 ||
          !llvm::all_of(op->getOperands(), [&](Value v) { return replicableValue.count(v); }))
        continue;
      replicable[i] = true;
      for (Value r : op->getResults())
        replicableValue.insert(r);
    }

    // 2. The microbatch of each op, and whether it is in the forward pass.
    const bool unrolled = func->hasAttr(graph::kMicroBatchesAttr);
    int64_t microBatches = 1;
    if (auto k = func->getAttrOfType<IntegerAttr>(graph::kMicroBatchesAttr))
      microBatches = k.getInt();
    std::vector<int64_t> microBatch(n, -1);
    {
      // One microbatch (no shardc-micro-batches): the ops that depend on a batch input, as
      // that pass would have cloned them, but the optimizer's.
      llvm::DenseSet<Value> varying;
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        if (func.getArgAttr(i, graph::kInputAttr))
          varying.insert(func.getArgument(i));
      for (size_t i = 0; i < n; ++i) {
        if (auto m = ops[i]->getAttrOfType<IntegerAttr>(graph::kMicroBatchAttr))
          microBatch[i] = m.getInt();
        bool reads = llvm::any_of(ops[i]->getOperands(),
                                  [&](Value v) { return varying.count(v); });
        if (!reads || ops[i]->hasTrait<graph::traits::OptimizerUpdate>())
          continue;
        for (Value r : ops[i]->getResults())
          varying.insert(r);
        if (!unrolled)
          microBatch[i] = 0;
      }
    }
    llvm::DenseSet<Operation *> forward = graph::forwardPassOps(func);
    std::vector<bool> isNorm(n, false);
    for (size_t i = 0; i < n; ++i)
      isNorm[i] = isa<graph::GlobalNormOp>(ops[i]);
    {
      // Every stage has the gradient norm (its own gradients' part, summed over the stages), so
      // the pure ops of the norm alone (the clip's scale) are computed by every stage too, as
      // the replicable ones are: no stage sends them.
      llvm::DenseSet<Value> everyStage = replicableValue;
      for (size_t i = 0; i < n; ++i) {
        Operation *op = ops[i];
        if (isNorm[i]) {
          everyStage.insert(op->result_begin(), op->result_end());
          continue;
        }
        if (replicable[i] || op->getNumResults() == 0 || !isPure(op) ||
            op->getNumRegions() != 0 ||
            !llvm::all_of(op->getOperands(), [&](Value v) { return everyStage.count(v); }))
          continue;
        replicable[i] = true;
        everyStage.insert(op->result_begin(), op->result_end());
      }
    }
    auto isStepOp = [&](size_t i) { return !replicable[i] && !isNorm[i] && microBatch[i] >= 0; };

    // 3. Stages: the op's own (the forward ops' cut, inherited by their gradients), else its
    // latest operand's, else its earliest reader's. With interleaving these are virtual
    // stages (V = pp · v of them), q on rank q % pp as its chunk q / pp.
    const int64_t V = stages * virtualStages;
    std::vector<int64_t> stageOf(n, -1);
    for (size_t i = 0; i < n; ++i) {
      if (auto s = ops[i]->getAttrOfType<IntegerAttr>(graph::kStageAttr)) {
        stageOf[i] = s.getInt();
        continue;
      }
      // The gradient norm is every stage's: a clip of a gradient by it takes the gradient's.
      for (Value v : ops[i]->getOperands())
        if (int64_t p = producer(v); p >= 0 && !isNorm[static_cast<size_t>(p)])
          stageOf[i] = std::max(stageOf[i], stageOf[static_cast<size_t>(p)]);
    }
    for (size_t i = n; i-- > 0;) {
      if (stageOf[i] >= 0)
        continue;
      for (Operation *user : ops[i]->getUsers())
        if (auto it = index.find(user); it != index.end() && stageOf[it->second] >= 0)
          stageOf[i] = stageOf[i] < 0 ? stageOf[it->second]
                                      : std::min(stageOf[i], stageOf[it->second]);
      if (stageOf[i] < 0)
        stageOf[i] = V - 1;
    }
    for (size_t i = 0; i < n; ++i)
      if (stageOf[i] >= V)
        return ops[i]->emitError("pipeline stage ")
               << stageOf[i] << " of an op, but the step has " << V << " stages";

    // 4. The schedule.
    std::vector<std::vector<Step>> steps;
    if (auto error =
            pipeline::scheduleSteps(schedule, stages, microBatches, steps, virtualStages))
      return func.emitError(*error);
    // The virtual stage of each op (stageOf becomes the rank's, below, once the cuts are known).
    const std::vector<int64_t> virtualStage = stageOf;
    // Under a schedule that splits them, the backward ops no transfer waits for (weight
    // gradients) run in their microbatch's W step (set once the cuts are known, below).
    std::vector<bool> weightGradient(n, false);
    auto stepIndexOf = [&](int64_t s, size_t i) -> int64_t {
      Step want{forward.count(ops[i])  ? StepKind::Forward
                : weightGradient[i]    ? StepKind::Weight
                                       : StepKind::Backward,
                microBatch[i], virtualStage[i] / stages};
      const auto &list = steps[static_cast<size_t>(s)];
      auto it = std::find(list.begin(), list.end(), want);
      return it == list.end() ? -1 : static_cast<int64_t>(it - list.begin());
    };

    // 5. Values crossing the cuts.
    const size_t P = static_cast<size_t>(stages), K = static_cast<size_t>(microBatches);
    CutSets forwardCuts(static_cast<size_t>(V), std::vector<llvm::SetVector<Value>>(K)),
        backwardCuts(static_cast<size_t>(V), std::vector<llvm::SetVector<Value>>(K));
    for (size_t i = 0; i < n; ++i) {
      if (replicable[i] || isNorm[i])
        continue;
      for (Value r : ops[i]->getResults())
        for (OpOperand &use : r.getUses()) {
          Operation *user = use.getOwner();
          auto it = index.find(user);
          if (it == index.end() || isNorm[it->second] || stageOf[it->second] == stageOf[i])
            continue;
          const size_t j = it->second;
          const int64_t a = stageOf[i], b = stageOf[j];
          if (!isStepOp(i))
            return user->emitError("--strategy pp: reads '")
                   << valueName(r) << "' of stage " << a << ", which is computed once for "
                   << "all microbatches (a parameter read on several stages, such as a tied "
                   << "embedding, is not supported yet)";
          if (!isStepOp(j) || microBatch[j] != microBatch[i])
            return user->emitError("--strategy pp: on stage ")
                   << b << ", reads '" << valueName(r) << "' of microbatch " << microBatch[i]
                   << " from stage " << a << " outside that microbatch's steps";
          const size_t m = static_cast<size_t>(microBatch[i]);
          if (a < b) {
            if (!forward.count(ops[i]))
              return user->emitError("--strategy pp: a backward value '")
                     << valueName(r) << "' of stage " << a << " is read by stage " << b;
          } else if (forward.count(user)) {
            return user->emitError("--strategy pp: the forward op reads '")
                   << valueName(r) << "' of the later stage " << a;
          }
          // A later chunk of the same rank (interleaved) reads it where it is: its step runs
          // after the producer's (forward chunks in order, backward ones in reverse).
          if (a % stages == b % stages)
            continue;
          for (int64_t c = std::min(a, b); c < std::max(a, b); ++c)
            (a < b ? forwardCuts : backwardCuts)[static_cast<size_t>(c)][m].insert(r);
        }
    }
    auto byProducer = [&](llvm::SetVector<Value> &set) {
      SmallVector<Value> sorted(set.begin(), set.end());
      llvm::stable_sort(sorted, [&](Value x, Value y) {
        auto key = [&](Value v) {
          return std::make_pair(producer(v), cast<OpResult>(v).getResultNumber());
        };
        return key(x) < key(y);
      });
      set.clear();
      set.insert(sorted.begin(), sorted.end());
    };
    for (CutSets *cuts : {&forwardCuts, &backwardCuts})
      for (auto &perCut : *cuts)
        for (auto &set : perCut)
          byProducer(set);

    // The B of a microbatch: the backward ops the gradients sent to the stage before depend
    // on; W: its other backward ops (the weight gradients, and all of the first stage's).
    if (pipeline::splitsWeightGradients(schedule.getValue())) {
      std::vector<bool> feedsTransfer(n, false);
      SmallVector<Value> need;
      for (const auto &perCut : backwardCuts)
        for (const auto &set : perCut)
          need.append(set.begin(), set.end());
      while (!need.empty()) {
        int64_t p = producer(need.pop_back_val());
        if (p < 0 || feedsTransfer[static_cast<size_t>(p)] || !isStepOp(static_cast<size_t>(p)) ||
            forward.count(ops[static_cast<size_t>(p)]))
          continue;
        feedsTransfer[static_cast<size_t>(p)] = true;
        need.append(ops[static_cast<size_t>(p)]->operand_begin(),
                    ops[static_cast<size_t>(p)]->operand_end());
      }
      for (size_t i = 0; i < n; ++i)
        weightGradient[i] = isStepOp(i) && !forward.count(ops[i]) && !feedsTransfer[i];
    }

    // 6. Each stage's transfers: before its first step, and after each step (what the step
    // sends, with what the next step receives).
    struct Transfer {
      int64_t sendTo = -1, recvFrom = -1;
      SmallVector<Value> send, recv; // the values (global names) sent and received
    };
    // A step of rank s runs virtual stage q = chunk · pp + s; its neighbours q - 1 and q + 1
    // are on ranks s - 1 and s + 1 (around the ring between chunks).
    auto values = [](const llvm::SetVector<Value> &set) {
      return SmallVector<Value>(set.begin(), set.end());
    };
    auto rankOf = [&](int64_t q) { return q % stages; };
    auto incoming = [&](int64_t s, const Step &st) -> std::pair<int64_t, SmallVector<Value>> {
      const size_t m = static_cast<size_t>(st.microBatch);
      const int64_t q = st.chunk * stages + s;
      if (st.kind == StepKind::Forward && q > 0)
        return {rankOf(q - 1), values(forwardCuts[static_cast<size_t>(q - 1)][m])};
      if (st.kind == StepKind::Backward && q + 1 < V)
        return {rankOf(q + 1), values(backwardCuts[static_cast<size_t>(q)][m])};
      return {-1, {}};
    };
    auto outgoing = [&](int64_t s, const Step &st) -> std::pair<int64_t, SmallVector<Value>> {
      const size_t m = static_cast<size_t>(st.microBatch);
      const int64_t q = st.chunk * stages + s;
      if (st.kind == StepKind::Forward && q + 1 < V)
        return {rankOf(q + 1), values(forwardCuts[static_cast<size_t>(q)][m])};
      if (st.kind == StepKind::Backward && q > 0)
        return {rankOf(q - 1), values(backwardCuts[static_cast<size_t>(q - 1)][m])};
      return {-1, {}};
    };
    // transfers[s][j]: the transfer after step j - 1 (j = 0: before the first step).
    std::vector<std::vector<Transfer>> transfers(P);
    for (int64_t s = 0; s < stages; ++s) {
      const auto &list = steps[static_cast<size_t>(s)];
      for (size_t j = 0; j <= list.size(); ++j) {
        Transfer t;
        if (j > 0) {
          auto [to, values] = outgoing(s, list[j - 1]);
          if (!values.empty()) {
            t.sendTo = to;
            t.send = values;
          }
        }
        if (j < list.size()) {
          auto [from, values] = incoming(s, list[j]);
          if (!values.empty()) {
            t.recvFrom = from;
            t.recv = values;
          }
        }
        transfers[static_cast<size_t>(s)].push_back(t);
      }
    }

    // From here on an op's stage is its rank's place on the pp axis.
    for (size_t i = 0; i < n; ++i)
      stageOf[i] = rankOf(virtualStage[i]);

    // 7. The schedule simulated with each step's FLOPs as its duration: it must finish (the
    // transfers pair up without a cycle of waits), and its idle share is the bubble.
    std::vector<std::vector<uint64_t>> stepFlops(P);
    for (int64_t s = 0; s < stages; ++s)
      stepFlops[static_cast<size_t>(s)].assign(steps[static_cast<size_t>(s)].size(), 0);
    for (size_t i = 0; i < n; ++i)
      if (isStepOp(i)) {
        int64_t j = stepIndexOf(stageOf[i], i);
        if (j < 0)
          return ops[i]->emitError("--strategy pp: microbatch ")
                 << microBatch[i] << " has no step in the schedule";
        stepFlops[static_cast<size_t>(stageOf[i])][static_cast<size_t>(j)] += flopsOf(ops[i]);
      }
    std::vector<std::vector<pipeline::TimelineEntry>> lists(P);
    for (size_t s = 0; s < P; ++s)
      for (size_t j = 0; j <= steps[s].size(); ++j) {
        const Transfer &t = transfers[s][j];
        if (t.sendTo >= 0 || t.recvFrom >= 0) {
          pipeline::TimelineEntry e;
          e.isTransfer = true;
          e.sendTo = t.sendTo;
          e.recvFrom = t.recvFrom;
          lists[s].push_back(e);
        }
        if (j < steps[s].size()) {
          pipeline::TimelineEntry e;
          e.seconds = static_cast<double>(stepFlops[s][j]);
          e.stepIndex = static_cast<int64_t>(j);
          lists[s].push_back(e);
        }
      }
    // Every transfer a rendezvous (--comm-overlap off) and sends on the communication thread
    // (on, the default, whose timeline the plan shows): both must finish. Where either would
    // wait forever (the interleaved schedule with more microbatches than stages: every rank
    // sends before it receives around the ring), the sends are posted instead, as Megatron's
    // batched isend: they never wait for their receivers, so only the receives order the
    // ranks, and that run must finish.
    std::vector<std::vector<pipeline::SimulatedEntry>> times;
    std::string stuck;
    bool posted = false;
    for (bool asyncSends : {false, true})
      if (!posted && !pipeline::simulate(lists, times, stuck, asyncSends)) {
        std::string postedStuck;
        if (!pipeline::simulatePostedSends(lists, times, postedStuck))
          return func.emitError("--schedule ")
                 << schedule.getValue() << ": the stages' transfers do not pair up (" << stuck
                 << (asyncSends ? ", sends overlapping compute" : "")
                 << "; with posted sends " << postedStuck << ")";
        posted = true;
      }
    // What each stage holds: its layers, trained parameters and FLOPs per microbatch.
    std::vector<std::string> held(P);
    {
      std::vector<std::string> firstUnit(static_cast<size_t>(V)), lastUnit(static_cast<size_t>(V));
      std::vector<uint64_t> fwd(P, 0), bwd(P, 0), paramBytes(P, 0);
      std::vector<int64_t> params(P, 0);
      for (size_t i = 0; i < n; ++i) {
        if (!isStepOp(i) || microBatch[i] != 0)
          continue;
        const size_t st = static_cast<size_t>(stageOf[i]);
        const size_t q = static_cast<size_t>(virtualStage[i]);
        (forward.count(ops[i]) ? fwd : bwd)[st] += flopsOf(ops[i]);
        std::string unit = graph::moduleUnitOf(ops[i]);
        if (!unit.empty() && forward.count(ops[i])) {
          if (firstUnit[q].empty())
            firstUnit[q] = unit;
          lastUnit[q] = unit;
        }
      }
      for (unsigned a = 0; a < func.getNumArguments(); ++a) {
        if (!isStateArgument(func, a) || func.getArgAttr(a, kStateAttr))
          continue;
        std::set<int64_t> readers;
        for (Operation *user : func.getArgument(a).getUsers())
          if (auto it = index.find(user); it != index.end() && !replicable[it->second])
            readers.insert(stageOf[it->second]);
        for (int64_t r : readers) {
          ++params[static_cast<size_t>(r)];
          paramBytes[static_cast<size_t>(r)] += valueBytes(func.getArgument(a));
        }
      }
      for (size_t st = 0; st < P; ++st) {
        // Its chunks' layers: "layers /h.0 .. /h.1" (and ", chunk 1: /h.4 .. /h.5").
        std::string layers;
        for (size_t q = st; q < static_cast<size_t>(V); q += P) {
          if (firstUnit[q].empty())
            continue;
          layers += (layers.empty() ? "layers " : ", chunk " + std::to_string(q / P) + ": ") +
                    firstUnit[q] + (lastUnit[q] == firstUnit[q] ? "" : " .. " + lastUnit[q]);
        }
        held[st] = (layers.empty() ? std::string("no repeated layer") : layers) +
                   ", " + std::to_string(params[st]) + " parameters (" +
                   std::to_string(paramBytes[st]) + " B on this rank), " + graph::flopsText(fwd[st]) +
                   " forward + " + graph::flopsText(bwd[st]) + " backward per microbatch";
      }
    }
    recordPlan(func, steps, lists, times, forwardCuts, backwardCuts, held, posted);

    // 8. This stage's part.
    if (failed(keepStage(module, func, ops, index, replicable, microBatch, isNorm, stageOf,
                         stepIndexOf, isStepOp, steps[static_cast<size_t>(stage)],
                         transfers[static_cast<size_t>(stage)])))
      return failure();
    // Posted or not, every transfer of the program alike: a pair's messages are one sequence
    // (and the nccl backend carries posted ones apart from its own).
    if (posted)
      func.walk([&](graph::SendRecvOp op) { op.setPosted(true); });
    return success();
  }

  // The simulated step as a Chrome trace (Perfetto opens it beside shardrun --trace's): per
  // stage a process with its steps (thread 0, named as plan.txt names them) and its transfers
  // (thread 1). The simulation's durations are FLOPs: 1 us of the trace is 1000 FLOP, a device
  // running 1 GFLOP/s; the schedule's shape, not its seconds.
  std::string predictedTrace(const std::vector<std::vector<Step>> &steps,
                             const std::vector<std::vector<pipeline::TimelineEntry>> &lists,
                             const std::vector<std::vector<pipeline::SimulatedEntry>> &times) {
    llvm::json::Array events;
    auto meta = [&](const char *what, size_t pid, int tid, std::string name) {
      events.push_back(llvm::json::Object{{"name", what},
                                          {"ph", "M"},
                                          {"pid", static_cast<int64_t>(pid)},
                                          {"tid", tid},
                                          {"args", llvm::json::Object{{"name", std::move(name)}}}});
    };
    for (size_t s = 0; s < lists.size(); ++s) {
      meta("process_name", s, 0, "stage " + std::to_string(s) + " (predicted)");
      meta("process_sort_index", s, 0, std::to_string(s));
      meta("thread_name", s, 0, "pipeline steps");
      meta("thread_name", s, 1, "transfers");
      for (size_t e = 0; e < lists[s].size(); ++e) {
        const pipeline::TimelineEntry &entry = lists[s][e];
        std::string name;
        if (entry.isTransfer) {
          name = entry.sendTo >= 0 ? "send to stage " + std::to_string(entry.sendTo) : "";
          if (entry.recvFrom >= 0)
            name += (name.empty() ? "" : ", ") + std::string("receive from stage ") +
                    std::to_string(entry.recvFrom);
        } else {
          name = pipeline::stepsText({steps[s][static_cast<size_t>(entry.stepIndex)]},
                                     virtualStages > 1);
        }
        events.push_back(llvm::json::Object{
            {"name", name},
            {"cat", entry.isTransfer ? "transfer" : "pipeline step"},
            {"ph", "X"},
            {"pid", static_cast<int64_t>(s)},
            {"tid", entry.isTransfer ? 1 : 0},
            {"ts", times[s][e].start / 1000.0},
            {"dur", std::max(0.0, times[s][e].end - times[s][e].start) / 1000.0}});
      }
    }
    llvm::json::Object trace{
        {"displayTimeUnit", "ms"},
        {"otherData",
         llvm::json::Object{{"schedule", schedule.getValue()},
                            {"time", "predicted from each step's FLOPs: 1 us = 1000 FLOP"}}},
        {"traceEvents", std::move(events)}};
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::json::Value(std::move(trace));
    return text;
  }

  void recordPlan(func::FuncOp func, const std::vector<std::vector<Step>> &steps,
                  const std::vector<std::vector<pipeline::TimelineEntry>> &lists,
                  const std::vector<std::vector<pipeline::SimulatedEntry>> &times,
                  const CutSets &forwardCuts, const CutSets &backwardCuts,
                  const std::vector<std::string> &held, bool posted) {
    Builder b(func.getContext());
    double makespan = 0;
    for (const auto &stageTimes : times)
      for (const pipeline::SimulatedEntry &t : stageTimes)
        makespan = std::max(makespan, t.end);
    const double p = static_cast<double>(lists.size());
    const double idle = pipeline::idleShare(lists, times);
    const bool splitsW = pipeline::splitsWeightGradients(schedule.getValue());
    const double v = static_cast<double>(virtualStages);
    const double m = static_cast<double>(llvm::count_if(
                         steps.front(), [](const Step &st) { return st.kind == StepKind::Forward; })) /
                     v;
    char line[320];
    SmallVector<Attribute> lines;
    if (virtualStages > 1)
      // Each chunk-step is 1/v of a stage's: the bubble is (p-1) of them.
      std::snprintf(line, sizeof line,
                    "schedule %s, %lld stages of %lld chunks, %lld microbatches: predicted idle "
                    "%.1f%% of the step (uniform stages: (p-1)/(v*m+p-1) = %.1f%%; 1F1B: "
                    "(p-1)/(m+p-1) = %.1f%%)",
                    schedule.getValue().c_str(), static_cast<long long>(stages),
                    static_cast<long long>(virtualStages), static_cast<long long>(m),
                    100.0 * idle, 100.0 * (p - 1) / (v * m + p - 1),
                    100.0 * (p - 1) / (m + p - 1));
    else if (splitsW)
      // With F = B = W the bubble is (p-1) steps of the 3m each stage runs.
      std::snprintf(line, sizeof line,
                    "schedule %s, %lld stages, %lld microbatches: predicted idle %.1f%% of the "
                    "step (uniform stages, F = B = W: (p-1)/(3m+p-1) = %.1f%%, a third of "
                    "1F1B's bubble; 1F1B: (p-1)/(m+p-1) = %.1f%%)",
                    schedule.getValue().c_str(), static_cast<long long>(stages),
                    static_cast<long long>(m), 100.0 * idle,
                    100.0 * (p - 1) / (3 * m + p - 1), 100.0 * (p - 1) / (m + p - 1));
    else
      std::snprintf(line, sizeof line,
                    "schedule %s, %lld stages, %lld microbatches: predicted idle %.1f%% of the "
                    "step (uniform stages: (p-1)/(m+p-1) = %.1f%%; bubble/compute (p-1)/m = "
                    "%.2f)",
                    schedule.getValue().c_str(), static_cast<long long>(stages),
                    static_cast<long long>(m), 100.0 * idle, 100.0 * (p - 1) / (m + p - 1),
                    (p - 1) / m);
    lines.push_back(b.getStringAttr(line));
    if (posted)
      lines.push_back(b.getStringAttr(
          "transfers posted: a send does not wait for its receiver (as Megatron's batched "
          "isend), since waiting ones would stall around the ring; the messages in flight are "
          "copies held by the communicator"));
    for (size_t s = 0; s < steps.size(); ++s) {
      // Live forward activations: the most F steps run before the step that releases them
      // (B, or W where the schedule splits it off: the weight gradients read them).
      int64_t live = 0, most = 0;
      for (const Step &st : steps[s]) {
        live += st.kind == StepKind::Forward                    ? 1
                : (st.kind == StepKind::Weight) == splitsW      ? -1
                                                                : 0;
        most = std::max(most, live);
      }
      lines.push_back(b.getStringAttr(
          "stage " + std::to_string(s) + ": " + held[s] + "; steps " +
          pipeline::stepsText(steps[s], virtualStages > 1) + " (activations of at most " + std::to_string(most) +
          (virtualStages > 1 ? " microbatch-chunks" : most == 1 ? " microbatch" : " microbatches") +
          " held)"));
    }
    // The timeline as text: one row per stage, two characters for the shortest step; a step
    // is its letter and microbatch, then its letter in lower case ("F3fff"), idle time '.'.
    double unit = 0;
    for (const auto &list : lists)
      for (const auto &e : list)
        if (!e.isTransfer && e.seconds > 0)
          unit = unit == 0 ? e.seconds : std::min(unit, e.seconds);
    unit /= 2;
    if (unit > 0 && makespan / unit <= 480) {
      for (size_t s = 0; s < lists.size(); ++s) {
        std::string row(static_cast<size_t>(makespan / unit + 0.5), '.');
        for (size_t e = 0; e < lists[s].size(); ++e) {
          if (lists[s][e].isTransfer || lists[s][e].stepIndex < 0)
            continue;
          const Step &st = steps[s][static_cast<size_t>(lists[s][e].stepIndex)];
          size_t from = static_cast<size_t>(times[s][e].start / unit + 0.5);
          size_t to = static_cast<size_t>(times[s][e].end / unit + 0.5);
          const char letter = st.kind == StepKind::Forward    ? 'F'
                              : st.kind == StepKind::Backward ? 'B'
                                                              : 'W';
          for (size_t c = from; c < to && c < row.size(); ++c)
            row[c] = c == from       ? letter
                     : c == from + 1 ? static_cast<char>('0' + st.microBatch % 10)
                                     : static_cast<char>(letter - 'A' + 'a');
        }
        lines.push_back(b.getStringAttr("  timeline stage " + std::to_string(s) + " |" + row +
                                        "|"));
      }
    }
    func->setAttr(kPipelineScheduleAttr, b.getArrayAttr(lines));
    func->setAttr(graph::kPipelineTraceAttr,
                  b.getStringAttr(predictedTrace(steps, lists, times)));

    SmallVector<Attribute> cuts;
    for (size_t c = 0; c + 1 < forwardCuts.size(); ++c) {
      uint64_t fwd = 0, bwd = 0;
      std::string names;
      for (Value v : forwardCuts[c].front()) {
        fwd += valueBytes(v);
        names += (names.empty() ? "" : ", ") + valueName(v) + " (" +
                 std::to_string(valueBytes(v)) + " B)";
      }
      for (Value v : backwardCuts[c].front())
        bwd += valueBytes(v);
      cuts.push_back(b.getStringAttr(
          "cut " + std::to_string(c) + "|" + std::to_string(c + 1) + ": per microbatch " +
          std::to_string(forwardCuts[c].front().size()) + " value(s), " + std::to_string(fwd) +
          " B forward, " + std::to_string(backwardCuts[c].front().size()) + " gradient(s), " +
          std::to_string(bwd) + " B backward: " + names));
    }
    func->setAttr(kPipelineCutsAttr, b.getArrayAttr(cuts));
  }

  // The mesh with a pp axis appended (a 1-device dp mesh made when the step has none);
  // returns the pp axis.
  FailureOr<std::pair<mesh::MeshOp, int16_t>> meshWithStages(ModuleOp module) {
    SmallVector<mesh::MeshOp> meshes(module.getOps<mesh::MeshOp>());
    if (meshes.size() > 1)
      return module.emitError("pipeline stages: the module has ") << meshes.size() << " meshes";
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    mesh::MeshOp meshOp;
    SmallVector<Attribute> names;
    if (meshes.empty()) {
      meshOp = b.create<mesh::MeshOp>(module.getLoc(), "dp", ArrayRef<int64_t>{1});
      names.push_back(b.getStringAttr("dp"));
    } else {
      meshOp = meshes.front();
      if (auto given = meshOp->getAttrOfType<ArrayAttr>("graph.axis_names"))
        names.assign(given.begin(), given.end());
      for (int64_t a = static_cast<int64_t>(names.size()); a < meshOp.getRank(); ++a)
        names.push_back(b.getStringAttr("axis" + std::to_string(a)));
    }
    SmallVector<int64_t> shape(meshOp.getShape());
    const auto axis = static_cast<int16_t>(shape.size());
    shape.push_back(stages);
    names.push_back(b.getStringAttr("pp"));
    meshOp.setShape(shape);
    meshOp->setAttr("graph.axis_names", b.getArrayAttr(names));
    return std::make_pair(meshOp, axis);
  }

  template <typename StepIndexOf, typename IsStepOp, typename TransferList>
  LogicalResult keepStage(ModuleOp module, func::FuncOp func, std::vector<Operation *> &ops,
                          llvm::DenseMap<Operation *, size_t> &index,
                          const std::vector<bool> &replicable,
                          const std::vector<int64_t> &microBatch,
                          const std::vector<bool> &isNorm, const std::vector<int64_t> &stageOf,
                          StepIndexOf stepIndexOf, IsStepOp isStepOp,
                          const std::vector<Step> &mySteps, const TransferList &myTransfers) {
    const size_t n = ops.size();
    Block &body = func.getBody().front();
    Operation *ret = body.getTerminator();
    const int64_t s = stage;
    FailureOr<std::pair<mesh::MeshOp, int16_t>> meshAxis = meshWithStages(module);
    if (failed(meshAxis))
      return failure();
    auto [meshOp, ppAxis] = *meshAxis;
    const auto meshName = meshOp.getSymName();

    // The results this stage returns: its parameters' and state's, and the graph outputs
    // (summed over the stages).
    llvm::BitVector dropResult(func.getNumResults());
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      if (func.getResultAttr(i, graph::kOutputAttr))
        continue;
      Value v = ret->getOperand(i);
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        dropResult[i] = isStateArgument(func, arg.getArgNumber()) &&
                        llvm::none_of(arg.getUsers(), [&](Operation *u) {
                          auto it = index.find(u);
                          return it != index.end() && stageOf[it->second] == s;
                        });
        continue;
      }
      auto it = index.find(v.getDefiningOp());
      dropResult[i] = it != index.end() && !replicable[it->second] && stageOf[it->second] != s;
    }

    // Kept ops: this stage's, the norm, and the replicable ops something kept reads.
    std::vector<bool> kept(n, false);
    for (size_t i = 0; i < n; ++i)
      kept[i] = isNorm[i] || (!replicable[i] && stageOf[i] == s);
    {
      SmallVector<Value> need;
      for (size_t i = 0; i < n; ++i)
        if (kept[i])
          need.append(ops[i]->operand_begin(), ops[i]->operand_end());
      for (unsigned i = 0; i < func.getNumResults(); ++i)
        if (!dropResult[i])
          need.push_back(ret->getOperand(i));
      while (!need.empty()) {
        Value v = need.pop_back_val();
        auto it = v.getDefiningOp() ? index.find(v.getDefiningOp()) : index.end();
        if (it == index.end() || kept[it->second] || !replicable[it->second])
          continue;
        kept[it->second] = true;
        need.append(ops[it->second]->operand_begin(), ops[it->second]->operand_end());
      }
    }

    // Keys: before step j 4j, step j 4j+1, the transfer after it 4j+2, after it 4j+3; the
    // transfer before the first step -1; the end 4S. Floating ops that depend on a step go
    // after their latest operand, the others just before their first reader. The loss's sum
    // over the stages goes after the last transfer (4S-2 + a half), before the optimizer.
    const double S = static_cast<double>(mySteps.size());
    const double end = 4 * S;
    std::vector<double> key(n, -2);
    std::vector<bool> dependsOnStep(n, false);
    for (size_t i = 0; i < n; ++i) {
      if (!kept[i])
        continue;
      if (isStepOp(i) && stageOf[i] == s) {
        key[i] = 4.0 * static_cast<double>(stepIndexOf(s, i)) + 1;
        dependsOnStep[i] = true;
        continue;
      }
      double latest = -2;
      for (Value v : ops[i]->getOperands()) {
        auto it = v.getDefiningOp() ? index.find(v.getDefiningOp()) : index.end();
        if (it == index.end() || !kept[it->second] || !dependsOnStep[it->second])
          continue;
        const size_t p = it->second;
        dependsOnStep[i] = true;
        latest = std::max(latest, isStepOp(p) && stageOf[p] == s ? key[p] + 2 : key[p]);
      }
      if (dependsOnStep[i])
        // The optimizer updates go after the loss's sum over the stages (4S-1.5): the step's
        // loss is complete before the first state write (shardrun's non-finite gate reads it
        // there, and hoist-loss then has nothing to move across the transfers).
        key[i] = isNorm[i] ? std::max(latest, end)
                 : ops[i]->hasTrait<graph::traits::OptimizerUpdate>() ? std::max(latest, end - 1)
                                                                      : latest;
    }
    for (size_t i = n; i-- > 0;) {
      if (!kept[i] || dependsOnStep[i])
        continue;
      double first = end;
      for (Operation *user : ops[i]->getUsers()) {
        auto it = index.find(user);
        if (it == index.end() || !kept[it->second])
          continue;
        const size_t u = it->second;
        first = std::min(first, isStepOp(u) && stageOf[u] == s ? key[u] - 1 : key[u]);
      }
      key[i] = first;
    }

    // The transfers, created in order (a value passed along is received before it is sent).
    OpBuilder b(ret);
    llvm::DenseMap<Value, Value> received;
    std::vector<std::pair<double, Operation *>> placed;
    for (size_t j = 0; j < myTransfers.size(); ++j) {
      const auto &t = myTransfers[j];
      if (t.sendTo < 0 && t.recvFrom < 0)
        continue;
      SmallVector<Value> operands;
      for (Value v : t.send) {
        auto it = v.getDefiningOp() ? index.find(v.getDefiningOp()) : index.end();
        const bool local = it != index.end() && stageOf[it->second] == s;
        Value r = local ? v : received.lookup(v);
        if (!r)
          return func.emitError("pipeline stage ")
                 << s << " passes on '" << valueName(v) << "' before receiving it";
        operands.push_back(r);
      }
      SmallVector<Type> types;
      for (Value v : t.recv)
        types.push_back(v.getType());
      Location loc = NameLoc::get(
          b.getStringAttr("pipeline/" + std::string(j == 0 ? "start" : "after_") +
                          (j == 0 ? "" : pipeline::stepsText({mySteps[j - 1]}))),
          func.getLoc());
      auto op = b.create<graph::SendRecvOp>(
          loc, types, FlatSymbolRefAttr::get(meshOp.getSymNameAttr()), operands,
          t.sendTo >= 0 ? b.getI64IntegerAttr(t.sendTo) : IntegerAttr(),
          t.recvFrom >= 0 ? b.getI64IntegerAttr(t.recvFrom) : IntegerAttr(),
          b.getDenseI16ArrayAttr({ppAxis}), /*posted=*/UnitAttr());
      // A value made on this rank (in another chunk) and passed around the ring comes back:
      // its readers here keep the value itself.
      for (auto [v, r] : llvm::zip(t.recv, op.getResults()))
        if (auto it = v.getDefiningOp() ? index.find(v.getDefiningOp()) : index.end();
            it == index.end() || stageOf[it->second] != s)
          received[v] = r;
      placed.push_back({j == 0 ? -1.0 : 4.0 * static_cast<double>(j - 1) + 2, op});
    }
    llvm::DenseSet<Operation *> keptOps;
    for (size_t i = 0; i < n; ++i)
      if (kept[i]) {
        keptOps.insert(ops[i]);
        if (!isNorm[i])
          placed.push_back({key[i], ops[i]});
        // The step it runs in, for the trace (Op.pipeline_step).
        if (isStepOp(i) && stageOf[i] == s)
          if (int64_t j = stepIndexOf(s, i); j >= 0)
            ops[i]->setAttr(graph::kPipelineStepAttr,
                            b.getStringAttr(pipeline::stepsText(
                                {mySteps[static_cast<size_t>(j)]}, virtualStages > 1)));
      }
    for (auto &[v, r] : received)
      v.replaceUsesWithIf(r, [&](OpOperand &use) { return keptOps.contains(use.getOwner()); });

    // The gradient norm: this stage's gradients' squared norm, summed over the stages.
    for (size_t i = 0; i < n; ++i) {
      if (!isNorm[i])
        continue;
      auto norm = cast<graph::GlobalNormOp>(ops[i]);
      SmallVector<Value> local;
      for (Value g : norm.getInputs())
        if (auto it = g.getDefiningOp() ? index.find(g.getDefiningOp()) : index.end();
            it == index.end() || stageOf[it->second] == s)
          local.push_back(g);
      OpBuilder nb(norm);
      Location loc = norm.getLoc();
      Type scalar = norm.getNorm().getType();
      Value part = local.empty()
                       ? Value(nb.create<graph::ConstantOp>(
                             loc, DenseElementsAttr::get(cast<ShapedType>(scalar), 0.0f)))
                       : Value(nb.create<graph::GlobalNormOp>(loc, scalar, local));
      Value square = nb.create<graph::MulOp>(loc, scalar, part, part);
      Value total = nb.create<mesh::AllReduceOp>(loc, scalar, meshName, ArrayRef<int16_t>{ppAxis},
                                                 square);
      Value whole = nb.create<graph::SqrtOp>(loc, scalar, total);
      norm.getNorm().replaceAllUsesWith(whole);
      for (Operation *made = part.getDefiningOp(); made != norm; made = made->getNextNode())
        placed.push_back({key[i], made});
      keptOps.erase(norm);
      kept[i] = false;
      norm.erase();
    }

    // The graph outputs: the stage that computes one sends it, the others add zeros.
    const double lossKey = 4 * S - 1.5;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      if (!func.getResultAttr(i, graph::kOutputAttr))
        continue;
      Value v = ret->getOperand(i);
      auto it = v.getDefiningOp() ? index.find(v.getDefiningOp()) : index.end();
      // A value every stage has (an argument, a replicable op's) counts once: the last stage's.
      const bool mine = it == index.end() || replicable[it->second] ? s == stages - 1
                                                                    : stageOf[it->second] == s;
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || !type.getElementType().isF32())
        return func.emitError("--strategy pp: graph output ")
               << i << " is not f32 and cannot be summed over the pipeline stages";
      Location loc = NameLoc::get(b.getStringAttr("pipeline/output_sum"), func.getLoc());
      Value local = mine ? v
                         : Value(b.create<graph::ConstantOp>(
                               loc, DenseElementsAttr::get(type, 0.0f)));
      if (!mine)
        placed.push_back({lossKey, local.getDefiningOp()});
      auto sum = b.create<mesh::AllReduceOp>(loc, type, meshName, ArrayRef<int16_t>{ppAxis},
                                             local);
      // Still the value it was over the other axes (a pending sum over dp stays pending: the
      // data-parallel passes add it up).
      if (mesh::MeshShardingAttr sharding = sharding::getSharding(v))
        sharding::setSharding(sum.getResult(), sharding);
      placed.push_back({lossKey, sum});
      ret->setOperand(i, sum);
    }

    // A parameter read on several stages (a tied embedding: the input embedding on the first,
    // the output projection on the last) is updated where its gradient is summed; that stage
    // then sends the new value to every other stage that reads it, which returns it as its own.
    // One transfer per reader, after everything else, in result order on every stage.
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto name = func.getResultAttrOfType<StringAttr>(i, graph::kParamAttr);
      Value v = ret->getOperand(i);
      auto it = v.getDefiningOp() ? index.find(v.getDefiningOp()) : index.end();
      if (!name || it == index.end() || replicable[it->second])
        continue;
      const int64_t owner = stageOf[it->second];
      BlockArgument arg;
      for (unsigned a = 0; a < func.getNumArguments(); ++a)
        if (auto argName = func.getArgAttrOfType<StringAttr>(a, graph::kParamAttr);
            argName && argName == name)
          arg = func.getArgument(a);
      if (!arg)
        continue;
      std::set<int64_t> readers;
      for (Operation *user : arg.getUsers())
        if (auto u = index.find(user); u != index.end() && !replicable[u->second])
          readers.insert(stageOf[u->second]);
      readers.erase(owner);
      for (int64_t reader : readers) {
        if (s != owner && s != reader)
          continue;
        Location loc = NameLoc::get(b.getStringAttr("pipeline/tied/" + name.getValue().str()),
                                    func.getLoc());
        auto op = b.create<graph::SendRecvOp>(
            loc, s == reader ? TypeRange{v.getType()} : TypeRange{},
            FlatSymbolRefAttr::get(meshOp.getSymNameAttr()),
            s == owner ? ValueRange{v} : ValueRange{},
            s == owner ? b.getI64IntegerAttr(reader) : IntegerAttr(),
            s == reader ? b.getI64IntegerAttr(owner) : IntegerAttr(),
            b.getDenseI16ArrayAttr({ppAxis}), /*posted=*/UnitAttr());
        placed.push_back({end + 1, op});
        if (s == reader) {
          ret->setOperand(i, op.getResult(0));
          dropResult[i] = false;
          func.setResultAttr(i, graph::kPipelineCopyAttr, b.getI64IntegerAttr(owner));
          func.setArgAttr(arg.getArgNumber(), graph::kPipelineCopyAttr,
                          b.getI64IntegerAttr(owner));
        }
      }
    }

    // Order: by key, then as the block had them (new ops after the old at a key).
    llvm::DenseMap<Operation *, size_t> blockOrder;
    {
      size_t k = 0;
      for (Operation &op : body)
        blockOrder[&op] = k++;
    }
    std::stable_sort(placed.begin(), placed.end(), [&](const auto &x, const auto &y) {
      if (x.first != y.first)
        return x.first < y.first;
      return blockOrder.lookup(x.second) < blockOrder.lookup(y.second);
    });
    for (auto &[k, op] : placed)
      op->moveBefore(ret);

    // Drop the other stages' results, then their ops, then the arguments nobody reads.
    for (unsigned i = func.getNumResults(); i-- > 0;)
      if (dropResult[i])
        ret->eraseOperand(i);
    func.eraseResults(dropResult);
    for (size_t i = n; i-- > 0;)
      if (!kept[i] && !isNorm[i]) {
        if (!ops[i]->use_empty())
          return ops[i]->emitError("pipeline stage ")
                 << s << " still reads this op of stage " << stageOf[i];
        ops[i]->erase();
      }
    llvm::BitVector dropArg(func.getNumArguments());
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      dropArg[i] = func.getArgument(i).use_empty() && !isRunArgument(func, i);
    func.eraseArguments(dropArg);

    // Every operand defined before its reader (the schedule respects the dependencies).
    for (Operation &op : body)
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp(); def && !def->isBeforeInBlock(&op))
          return op.emitError("--schedule ")
                 << schedule.getValue() << ": on stage " << s << ", runs before '"
                 << nameOf(def) << "', which it reads (a sum over microbatches read inside "
                 << "the loop cannot be pipelined)";
    func->setAttr(graph::kStageAttr, b.getI64IntegerAttr(s));
    return success();
  }
};

} // namespace
} // namespace shardc
