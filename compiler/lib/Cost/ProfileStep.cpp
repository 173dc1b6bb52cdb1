//===- ProfileStep.cpp ------------------------------------------------------------------===//
#include "shardc/Cost/ProfileStep.h"

#include "shardc/Dialect/Graph/ForwardPass.h"
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/GraphTraits.h"
#include "shardc/Dialect/Graph/ModuleUnit.h"
#include "shardc/Lowering/TensorBytes.h"

#include "passes/sharding/ValueSharding.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <cmath>
#include <map>

namespace shardc::cost {

using namespace mlir;

namespace {

double bytesOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return 0;
  return static_cast<double>(t.getNumElements()) *
         static_cast<double>(runtimeElementSize(t.getElementType()));
}

bool isRecomputed(Operation *op) {
  return graph::nodeNameOf(op).find("/remat") != std::string::npos;
}

// Whether the op is a product whose FLOPs CostOpInterface counts itself.
bool isProduct(Operation *op) {
  return isa<graph::MatMulOp, graph::GemmOp, graph::ConvOp, graph::ConvGradInputOp,
             graph::ConvGradWeightOp, graph::AttentionOp, graph::AttentionGradOp>(op);
}

bool splitOn(mesh::MeshShardingAttr s, int64_t dim, int axis) {
  if (!s || dim < 0 || dim >= static_cast<int64_t>(s.getSplitAxes().size()))
    return false;
  for (auto a : s.getSplitAxes()[dim].asArrayRef())
    if (a == axis)
      return true;
  return false;
}

bool pendingOn(mesh::MeshShardingAttr s, int axis) {
  if (!s)
    return false;
  for (auto a : s.getPartialAxes())
    if (a == axis)
      return true;
  return false;
}

// The kind of a collective op, and whether it is one.
bool collectiveKind(Operation *op, CollectiveKind &kind) {
  llvm::StringRef name = op->getName().getStringRef();
  if (name == "mesh.all_reduce")
    kind = CollectiveKind::AllReduce;
  else if (name == "mesh.reduce_scatter")
    kind = CollectiveKind::ReduceScatter;
  else if (name == "mesh.all_gather" || name == "graph.all_gather")
    kind = CollectiveKind::AllGather;
  else if (name == "mesh.all_to_all" || name == "graph.all_to_all")
    kind = CollectiveKind::AllToAll;
  else
    return false;
  return true;
}

std::vector<int> meshAxesOf(Operation *op) {
  std::vector<int> axes;
  if (auto dense = op->getAttrOfType<DenseI16ArrayAttr>("mesh_axes"))
    for (int16_t a : dense.asArrayRef())
      axes.push_back(a);
  return axes;
}

void gemmDims(Operation *op, ProfiledOp &p, int dpAxis) {
  auto shapeOf = [](Value v) { return cast<RankedTensorType>(v.getType()).getShape(); };
  mesh::MeshShardingAttr result = sharding::getSharding(op->getResult(0));
  const auto out = shapeOf(op->getResult(0));
  const int64_t rank = static_cast<int64_t>(out.size());
  if (auto mm = dyn_cast<graph::MatMulOp>(op)) {
    p.k = static_cast<double>(mm.contractedSize());
    p.m = rank >= 2 ? static_cast<double>(out[rank - 2]) : 1;
    p.n = rank >= 1 ? static_cast<double>(out[rank - 1]) : 1;
    p.batch = 1;
    for (int64_t d = 0; d + 2 < rank; ++d) {
      p.batch *= static_cast<double>(out[d]);
      p.batchRows = p.batchRows || splitOn(result, d, dpAxis);
    }
    p.mRows = rank >= 2 && splitOn(result, rank - 2, dpAxis);
    p.nRows = rank >= 1 && splitOn(result, rank - 1, dpAxis);
  } else if (auto gemm = dyn_cast<graph::GemmOp>(op)) {
    const auto a = shapeOf(gemm.getOperand(0));
    p.k = static_cast<double>(gemm.getTransA() ? a[0] : a[1]);
    p.m = static_cast<double>(out[0]);
    p.n = static_cast<double>(out[1]);
    p.mRows = splitOn(result, 0, dpAxis);
    p.nRows = splitOn(result, 1, dpAxis);
  } else {
    // A convolution or a fused attention: a product of the same FLOPs with equal sides, its
    // work growing with the rows.
    const double side = std::cbrt(std::max(p.flops, 2.0) / 2);
    p.m = p.n = p.k = side;
    p.batchRows = true;
    return;
  }
  p.kRows = pendingOn(result, dpAxis);
  if (!p.mRows && !p.nRows && !p.kRows && !p.batchRows)
    p.mRows = true; // no sharding to go by: the rows run down M, as in a linear layer
}

} // namespace

FailureOr<StepProfile> profileStep(func::FuncOp func, int dpAxis, int tpAxis) {
  Block &body = func.getBody().front();
  StepProfile profile;

  // Per microbatch: what depends on a batch input, but the optimizer's updates.
  llvm::DenseSet<Value> varying;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, graph::kInputAttr))
      varying.insert(func.getArgument(i));
  llvm::DenseSet<Operation *> perMicrobatch;
  for (Operation &op : body.without_terminator()) {
    if (op.hasTrait<graph::traits::OptimizerUpdate>())
      continue;
    if (llvm::any_of(op.getOperands(), [&](Value v) { return varying.count(v); })) {
      perMicrobatch.insert(&op);
      varying.insert(op.result_begin(), op.result_end());
    }
  }
  // The forward pass: what the graph outputs (the loss) depend on.
  const llvm::DenseSet<Operation *> forward = graph::forwardPassOps(func);

  // Units in the order the forward pass meets them; an op outside every unit goes before the
  // first (the embedding) or after the last (the head), as the forward op of its name does.
  std::map<std::string, int> unitIndex;
  std::map<std::string, int> placeOfName; // node name -> unit or -1 / -2
  llvm::DenseMap<Operation *, int> unitOf;
  bool seenUnit = false;
  for (Operation &op : body.without_terminator()) {
    if (!forward.count(&op) || !perMicrobatch.count(&op))
      continue;
    std::string unit = graph::moduleUnitOf(&op);
    int place = -1;
    if (!unit.empty()) {
      auto [it, added] = unitIndex.try_emplace(unit, static_cast<int>(profile.units.size()));
      if (added)
        profile.units.push_back(unit);
      place = it->second;
      seenUnit = true;
    } else {
      place = seenUnit ? -2 : -1;
    }
    unitOf[&op] = place;
    placeOfName.emplace(graph::nodeNameOf(&op), place);
  }
  for (Operation &op : body.without_terminator()) {
    if (unitOf.count(&op))
      continue;
    std::string unit = graph::moduleUnitOf(&op);
    if (auto it = unitIndex.find(unit); !unit.empty() && it != unitIndex.end()) {
      unitOf[&op] = it->second;
      continue;
    }
    std::string name = graph::nodeNameOf(&op);
    if (auto r = name.find("/remat"); r != std::string::npos)
      name = name.substr(0, r);
    auto it = placeOfName.find(name);
    unitOf[&op] = it != placeOfName.end() ? it->second : -2;
  }

  const size_t numUnits = profile.units.size();
  profile.unitParamBytes.assign(numUnits, 0);
  profile.unitStashBytes.assign(numUnits, 0);
  profile.unitInputBytes.assign(numUnits, 0);
  profile.unitFrozenBytes.assign(numUnits, 0);
  if (auto ws = func->getAttrOfType<IntegerAttr>("shardc.workspace_bytes"))
    profile.workspaceBytes = static_cast<double>(ws.getInt());
  auto addTo = [&](int place, std::vector<double> &perUnit, double &before, double &after,
                   double bytes) {
    if (place >= 0)
      perUnit[static_cast<size_t>(place)] += bytes;
    else if (place == -1)
      before += bytes;
    else
      after += bytes;
  };

  // Trained parameters: with the unit of their first forward reader.
  llvm::DenseMap<Value, int> paramPlace;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (!func.getArgAttr(i, graph::kParamAttr))
      continue;
    Value arg = func.getArgument(i);
    int place = -2;
    for (Operation *user : arg.getUsers())
      if (forward.count(user) && unitOf.count(user)) {
        place = unitOf[user];
        break;
      }
    if (func.getArgAttr(i, graph::kNotTrainableAttr) || func.getArgAttr(i, graph::kBufferAttr)) {
      addTo(place, profile.unitFrozenBytes, profile.beforeFrozenBytes, profile.afterFrozenBytes,
            bytesOf(arg));
      continue;
    }
    double bytes = bytesOf(arg);
    // Master weights and gradients are fp32 whatever the storage.
    if (auto t = dyn_cast<RankedTensorType>(arg.getType()); t && t.hasStaticShape())
      bytes = static_cast<double>(t.getNumElements()) * 4;
    addTo(place, profile.unitParamBytes, profile.beforeParamBytes, profile.afterParamBytes,
          bytes);
    paramPlace[arg] = place;
  }

  // The forward values the backward pass reads (kept for it per microbatch), and what enters
  // each unit from outside it.
  for (Operation &op : body.without_terminator()) {
    if (!forward.count(&op) || !perMicrobatch.count(&op))
      continue;
    const int place = unitOf[&op];
    for (Value r : op.getResults()) {
      bool readBackward = llvm::any_of(r.getUsers(), [&](Operation *u) {
        return perMicrobatch.count(u) && !forward.count(u);
      });
      if (readBackward)
        addTo(place, profile.unitStashBytes, profile.beforeStashBytes, profile.afterStashBytes,
              bytesOf(r));
    }
    if (place < 0)
      continue;
    llvm::DenseSet<Value> counted;
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def || !perMicrobatch.count(def) || unitOf[def] == place || !counted.insert(v).second)
        continue;
      profile.unitInputBytes[static_cast<size_t>(place)] += bytesOf(v);
    }
  }

  for (Operation &op : body.without_terminator()) {
    ProfiledOp p;
    p.unit = unitOf[&op];
    p.recomputed = isRecomputed(&op);
    p.phase = !perMicrobatch.count(&op) ? ProfiledOp::Phase::Step
              : forward.count(&op)      ? ProfiledOp::Phase::Forward
                                        : ProfiledOp::Phase::Backward;
    // A once-per-step op (an optimizer update) goes with the parameter it reads.
    if (p.phase == ProfiledOp::Phase::Step)
      for (Value v : op.getOperands())
        if (auto it = paramPlace.find(v); it != paramPlace.end()) {
          p.unit = it->second;
          break;
        }
    CollectiveKind kind;
    if (collectiveKind(&op, kind)) {
      const std::vector<int> axes = meshAxesOf(&op);
      if (tpAxis < 0 || axes.size() != 1 || axes.front() != tpAxis)
        continue; // dp's reductions come from the parameters
      p.kind = ProfiledOp::Kind::TpCollective;
      p.collective = kind;
      p.bytes = kind == CollectiveKind::AllGather ? bytesOf(op.getResult(0))
                                                  : bytesOf(op.getOperand(0));
      profile.ops.push_back(p);
      continue;
    }
    auto cost = dyn_cast<graph::CostOpInterface>(&op);
    if (!cost)
      continue;
    p.flops = static_cast<double>(cost.getFlops());
    p.bytes = static_cast<double>(cost.getBytesAccessed());
    if (isProduct(&op) && p.flops > 0) {
      p.kind = ProfiledOp::Kind::Gemm;
      gemmDims(&op, p, dpAxis);
    } else if (p.flops == 0 && p.bytes == 0) {
      continue;
    }
    profile.ops.push_back(p);
  }
  return profile;
}

double modelProductFlops(func::FuncOp func, const std::map<std::string, int64_t> &repeats) {
  Block &body = func.getBody().front();
  llvm::DenseSet<Value> varying;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, graph::kInputAttr))
      varying.insert(func.getArgument(i));
  double total = 0;
  for (Operation &op : body.without_terminator()) {
    if (op.hasTrait<graph::traits::OptimizerUpdate>() ||
        !llvm::any_of(op.getOperands(), [&](Value v) { return varying.count(v); }))
      continue;
    varying.insert(op.result_begin(), op.result_end());
    if (isProduct(&op) && !isRecomputed(&op)) {
      auto it = repeats.empty() ? repeats.end() : repeats.find(graph::moduleUnitOf(&op));
      const double times = it != repeats.end() ? static_cast<double>(it->second) : 1.0;
      total += times * static_cast<double>(cast<graph::CostOpInterface>(&op).getFlops());
    }
  }
  return total;
}

} // namespace shardc::cost
