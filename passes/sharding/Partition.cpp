//===- Partition.cpp - global program -> each device's program (SPMD) -------------------===//
//
// After propagation every value says which dimensions the mesh splits. This pass gives each
// value its local type (result types carry Reshape and Expand targets), has an op rewrite what
// else it holds about shapes (its own hooks, ShardingRuleOpInterface's buildLocalForm and
// localizeOp over a LocalShardingContext: Split sizes, Slice ends, constants, a training
// dropout's whole tensor, the gradient norm's sum over devices), tracks which values are pending
// sums (a reduction over a split factor, or a linear op on a pending sum) and all-reduces a
// pending sum before any use that is not linear in it. One rewrite serves every device whose
// blocks have the same extent (all of them when the batch divides evenly).
//
//===-------------------------------------------------------------------------------------===//
#include "passes/sharding/ShardingPasses.h"
#include "passes/sharding/BlockedResharding.h"
#include "passes/sharding/DimensionClasses.h"
#include "passes/sharding/SequenceParallel.h"
#include "passes/sharding/SplitClassesLoss.h"
#include "passes/sharding/ValueSharding.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <tuple>

namespace shardc {
#define GEN_PASS_DEF_PARTITION
#include "passes/sharding/ShardingPasses.h.inc"

namespace {

using namespace mlir;
using sharding::getSharding;
using sharding::nodeName;
using graph::suffixedLoc;

// The ops whose pending sums the data-parallel passes see to: the step's return and the
// optimizer phase.
bool endsInDataParallelPasses(Operation *op) {
  return isa<func::ReturnOp>(op) || op->hasTrait<graph::traits::OptimizerPhase>();
}

// Uses of a pending sum that the data-parallel passes reduce themselves: the loss the step
// returns, and the gradients the optimizer reads (bucketed all-reduce or reduce-scatter).
// (The ops named here are named for that deferral, not for their local form: each op's own
// rewrite is its ShardingRuleOpInterface hooks.)
bool reducedByDataParallelPasses(Operation *user, unsigned operand) {
  if (isa<func::ReturnOp>(user))
    return operand == 0;
  if (user->hasTrait<graph::traits::OptimizerUpdate>())
    return operand == 1;
  if (isa<graph::ScaleByClipOp>(user))
    return operand == 0;
  return isa<graph::GlobalNormOp>(user);
}

// Mesh axes as a bit set (bit a: axis a); axis 0 is dp, axis 1 tp.
using AxisMask = unsigned;

AxisMask maskOf(ArrayRef<mesh::MeshAxis> axes) {
  AxisMask m = 0;
  for (mesh::MeshAxis a : axes)
    m |= 1u << a;
  return m;
}

SmallVector<mesh::MeshAxis> axesOf(AxisMask m) {
  SmallVector<mesh::MeshAxis> axes;
  for (mesh::MeshAxis a = 0; a < 8; ++a)
    if (m & (1u << a))
      axes.push_back(a);
  return axes;
}

Location allReduceLoc(Location loc) { return suffixedLoc(loc, "/all_reduce"); }

// The axes over which `v` is a pending sum.
AxisMask pendingOf(Value v) {
  auto s = getSharding(v);
  return s ? maskOf(s.getPartialAxes()) : 0;
}

// The mesh axes that split each of the op's factors: those of any operand (and, with
// `results`, result) dimension whose major factor it is. A reduction is a factor split in the
// operands that a result lacks; an index block may be split in the result only (the table
// rows a gather's gradient scatters into).
std::vector<AxisMask> axesOfFactors(Operation *op, const graph::OpShardingRule &rule,
                                    bool results) {
  std::vector<AxisMask> axesOfFactor(rule.factors.size(), 0);
  auto mark = [&](Value v, const graph::TensorFactors &tf) {
    auto axes = sharding::splitAxes(v);
    SmallVector<int64_t> groups = sharding::splitGroups(v);
    for (size_t d = 0; d < tf.size() && d < axes.size(); ++d) {
      if (tf[d].empty())
        continue;
      // The factor the split cuts: the last one that starts at or before its groups (a
      // strided split cuts a minor factor, or lies inside one the op does not divide).
      size_t k = 0;
      for (int64_t before = rule.factors[tf[d][0]].size; k + 1 < tf[d].size() &&
                                                         before <= groups[d];
           before *= rule.factors[tf[d][++k]].size)
        ;
      axesOfFactor[tf[d][k]] |= maskOf(axes[d]);
    }
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (i < rule.operands.size())
      mark(v, rule.operands[i]);
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (results && i < rule.results.size())
      mark(v, rule.results[i]);
  return axesOfFactor;
}

// The axes that split some dimension of `v`.
AxisMask splitOf(Value v) {
  AxisMask m = 0;
  for (const auto &axes : sharding::splitAxes(v))
    m |= maskOf(axes);
  return m;
}

struct PartitionPass : impl::PartitionBase<PartitionPass> {
  using PartitionBase::PartitionBase;

  int64_t batch = 0, rows = 0;
  SmallVector<int64_t> meshShape;
  FlatSymbolRefAttr mesh;
  // (pending sum, axes reduced) -> its all-reduce
  DenseMap<std::pair<Value, AxisMask>, Value> reduced;
  // (value, dimension) -> its blocks along the dimension on tp, or the whole of a value split
  // along it (sequence parallelism's entries and exits)
  DenseMap<std::pair<Value, unsigned>, Value> resharded;
  // (value, from * 16 + to) -> the value split along dimension `to` instead of `from` on dp
  // (an all-to-all), both ways
  DenseMap<std::pair<Value, unsigned>, Value> exchanged;
  // Each op's rule, taken from the global program before any type changes.
  DenseMap<Operation *, std::optional<graph::OpShardingRule>> rules;
  // Per resharding point, in program order: how it was resharded and the bytes that sends
  // (the function's graph.resharding, plan.txt's "Resharding").
  SmallVector<std::string> reshardingLines;
  // The bytes one rank sends in the all-gathers and all-to-alls created so far (each once,
  // however many ops read it): what a resharding point adds is the difference.
  int64_t gatherBytesSent = 0, exchangeBytesSent = 0;

  // The local size of a dimension of global size `size` split on `axes`: the batch's rows on
  // dp (axis 0), an even block on any other axis. (A dimension other than the batch's split on
  // dp, where a resharding point is computed in blocks of it, needs an even batch: rows are
  // then batch / devices, and the block is an even one.)
  int64_t localSize(int64_t size, ArrayRef<mesh::MeshAxis> axes) {
    for (mesh::MeshAxis a : axes)
      size = a != 0           ? size / meshShape[a]
             : size % batch ? size / meshShape[0]
                            : size / batch * rows;
    return size;
  }

  RankedTensorType localType(RankedTensorType type,
                             ArrayRef<SmallVector<mesh::MeshAxis>> axes) {
    SmallVector<int64_t> shape(type.getShape());
    for (size_t d = 0; d < shape.size() && d < axes.size(); ++d)
      shape[d] = localSize(shape[d], axes[d]);
    return RankedTensorType::get(shape, type.getElementType());
  }

  void setPending(Value v, AxisMask pending) {
    sharding::setSharding(v, sharding::makeSharding(mesh, sharding::splitAxes(v),
                                                    axesOf(pending)));
  }

  // `v` summed over the axes `axes` of its pending sum: an all-reduce created once, right after
  // its definition; what stays pending is the rest.
  Value allReduced(Value v, AxisMask axes) {
    auto key = std::make_pair(v, axes);
    if (Value r = reduced.lookup(key))
      return r;
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    Location loc = allReduceLoc(v.getDefiningOp() ? v.getDefiningOp()->getLoc() : v.getLoc());
    SmallVector<int16_t> meshAxes;
    for (mesh::MeshAxis a : axesOf(axes))
      meshAxes.push_back(a);
    Value r = b.create<mesh::AllReduceOp>(loc, v.getType(), mesh.getValue(), meshAxes, v);
    // The sum keeps the operand's splits (a resharding point gathers them next).
    sharding::setSharding(r, sharding::makeSharding(mesh, sharding::splitAxes(v),
                                                    axesOf(pendingOf(v) & ~axes)));
    sharding::setSplitGroups(r, sharding::splitGroups(v));
    reduced[key] = r;
    return r;
  }

  // Autodiff accumulates a gradient term by term: ((r + q) + p) + ... . When the terms q, p,
  // ... are pending sums over the same axes and r is not, every step would all-reduce its term;
  // summing the pending terms first, r + (q + p + ...), all-reduces once. At `op` = a + p with
  // a = r + all_reduce(q) (each read only there), it becomes r + (q + p), whose sum the usual
  // rule all-reduces; the next term finds the same shape again. Float sums are reordered, as
  // any all-reduce reorders them.
  void sumPendingTermsFirst(graph::AddOp op) {
    for (unsigned pi = 0; pi < 2; ++pi) {
      Value p = op->getOperand(pi), a = op->getOperand(1 - pi);
      Type type = p.getType();
      AxisMask m = pendingOf(p);
      auto inner = a.getDefiningOp<graph::AddOp>();
      if (!m || pendingOf(a) || !inner || !a.hasOneUse())
        continue;
      for (unsigned ri = 0; ri < 2; ++ri) {
        Value r = inner->getOperand(ri), red = inner->getOperand(1 - ri);
        auto reduce = red.getDefiningOp<mesh::AllReduceOp>();
        if (!reduce || !red.hasOneUse() || red.getType() != type)
          continue;
        Value q = reduce.getInput();
        SmallVector<mesh::MeshAxis> axes(reduce.getMeshAxes().begin(), reduce.getMeshAxes().end());
        if (maskOf(axes) != m || pendingOf(q) != m || pendingOf(r))
          continue;
        OpBuilder b(op);
        auto terms = b.create<graph::AddOp>(op.getLoc(), type, q, p);
        sharding::setSharding(terms.getResult(),
                              sharding::makeSharding(mesh, sharding::splitAxes(op.getResult()),
                                                     axesOf(m)));
        reduced.erase(std::make_pair(q, m));
        op->setOperand(1 - pi, r);
        op->setOperand(pi, terms);
        inner->erase();
        reduce->erase();
        return;
      }
    }
  }

  // A tensor viewed around dimension d: [elements before it, its size, elements after it].
  static std::tuple<int64_t, int64_t, int64_t> aroundDim(RankedTensorType type, unsigned d) {
    int64_t outer = 1, inner = 1;
    for (unsigned i = 0; i < d; ++i)
      outer *= type.getDimSize(i);
    for (unsigned i = d + 1; i < type.getRank(); ++i)
      inner *= type.getDimSize(i);
    return {outer, type.getDimSize(d), inner};
  }

  static Location locOf(Value v) {
    return v.getDefiningOp() ? v.getDefiningOp()->getLoc() : v.getLoc();
  }

  // `x` viewed as `type`: a reshape, unless it has that type already.
  static Value viewAs(OpBuilder &b, Location loc, Value x, RankedTensorType type) {
    return x.getType() == type ? x : b.create<graph::ReshapeOp>(loc, type, x).getResult();
  }

  // The cache key of `v`'s conversion along dimension d on mesh axis `axis`.
  static std::pair<Value, unsigned> reshardKey(Value v, unsigned d, mesh::MeshAxis axis) {
    return {v, d * 16 + static_cast<unsigned>(axis)};
  }

  // `v` (whole along dimension d on mesh axis `axis`) cut into blocks along d, each device
  // keeping its own: sequence parallelism's entry, and the slice of what a resharding point
  // yields whole. A pending sum over the axis is summed as it is cut (a reduce-scatter, in
  // place of an all-reduce); a replicated value is sliced locally. The collectives cut flat
  // tensors into contiguous shards in the order of the axis's coordinate, so the blocks of d
  // are first brought to the front: [outer, t, S/t, inner] -> [t, outer, S/t, inner]. A
  // dimension split in `groups` equal groups (strided rows) is cut within each group: its
  // groups count into `outer`.
  Value blocksAlong(Value v, unsigned d, mesh::MeshAxis axis = 1, int64_t groups = 1) {
    auto key = reshardKey(v, d, axis);
    if (Value r = resharded.lookup(key))
      return r;
    const AxisMask axisBit = 1u << axis;
    bool scatter = pendingOf(v) & axisBit;
    auto type = cast<RankedTensorType>(v.getType());
    auto [outer, size, inner] = aroundDim(type, d);
    outer *= groups;
    size /= groups;
    const int64_t t = meshShape[axis];
    Type f32 = type.getElementType();
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    Location loc = locOf(v);
    Value x = v;
    if (outer > 1) {
      x = b.create<graph::ReshapeOp>(loc, RankedTensorType::get({outer, t, size / t, inner}, f32),
                                     x);
      x = b.create<graph::TransposeOp>(loc, RankedTensorType::get({t, outer, size / t, inner}, f32),
                                       x, b.getDenseI64ArrayAttr({1, 0, 2, 3}));
    }
    x = viewAs(b, loc, x, RankedTensorType::get({type.getNumElements()}, f32));
    auto shardType = RankedTensorType::get({type.getNumElements() / t}, f32);
    DenseI16ArrayAttr meshAxes = b.getDenseI16ArrayAttr({static_cast<int16_t>(axis)});
    StringRef sliceName = axis == 1 && groups == 1 ? "/sequence_slice" : "/reshard_slice";
    Value shard =
        scatter ? b.create<graph::ReduceScatterOp>(suffixedLoc(loc, "/reduce_scatter"),
                                                   TypeRange{shardType}, mesh, ValueRange{x},
                                                   IntegerAttr(), StringAttr(), meshAxes)
                      .getResult(0)
                : b.create<graph::ShardSliceOp>(suffixedLoc(loc, sliceName),
                                                TypeRange{shardType}, mesh, ValueRange{x},
                                                IntegerAttr(), StringAttr(), meshAxes)
                      .getResult(0);
    SmallVector<int64_t> local(type.getShape());
    local[d] = type.getDimSize(d) / t;
    Value r = b.create<graph::ReshapeOp>(loc, RankedTensorType::get(local, f32), shard);
    auto axes = sharding::splitAxes(v);
    axes[d].push_back(axis);
    sharding::setSharding(r, sharding::makeSharding(mesh, axes, axesOf(pendingOf(v) & ~axisBit)));
    if (groups > 1) {
      SmallVector<int64_t> g = sharding::splitGroups(v);
      g[d] = groups;
      sharding::setSplitGroups(r, g);
    }
    resharded[key] = r;
    return r;
  }

  // `v`, split along dimension d on mesh axis `axis`, gathered whole along it: sequence
  // parallelism's exit, and the operands of a resharding point (`forOp`: the all-gather is
  // named for it). A dimension split in groups (strided rows) is gathered within each group.
  Value wholeAlong(Value v, unsigned d, mesh::MeshAxis axis = 1, Operation *forOp = nullptr) {
    auto key = reshardKey(v, d, axis);
    if (Value r = resharded.lookup(key))
      return r;
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> groupsOf = sharding::splitGroups(v);
    const int64_t groups = groupsOf[d];
    auto [outer, block, inner] = aroundDim(type, d);
    outer *= groups;
    block /= groups;
    const int64_t t = meshShape[axis];
    Type f32 = type.getElementType();
    SmallVector<int64_t> whole(type.getShape());
    whole[d] = type.getDimSize(d) * t;
    auto wholeType = RankedTensorType::get(whole, f32);
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    Location loc = locOf(v);
    Value flat = viewAs(b, loc, v, RankedTensorType::get({type.getNumElements()}, f32));
    auto gatheredType =
        outer > 1 ? RankedTensorType::get({t, outer, block, inner}, f32) : wholeType;
    Location gatherLoc = forOp ? suffixedLoc(forOp->getLoc(), "/reshard_all_gather")
                               : suffixedLoc(loc, "/all_gather");
    Value x = b.create<graph::AllGatherOp>(gatherLoc, TypeRange{gatheredType},
                                           mesh, ValueRange{flat}, IntegerAttr(), StringAttr(),
                                           b.getDenseI16ArrayAttr({static_cast<int16_t>(axis)}))
                  .getResult(0);
    gatherBytesSent += type.getNumElements() * sharding::bytesPerElement(type) * (t - 1);
    if (outer > 1) {
      x = b.create<graph::TransposeOp>(loc, RankedTensorType::get({outer, t, block, inner}, f32),
                                       x, b.getDenseI64ArrayAttr({1, 0, 2, 3}));
      x = b.create<graph::ReshapeOp>(loc, wholeType, x);
    }
    auto axes = sharding::splitAxes(v);
    llvm::erase(axes[d], axis);
    sharding::setSharding(x, sharding::makeSharding(mesh, axes, axesOf(pendingOf(v))));
    groupsOf[d] = 1;
    sharding::setSplitGroups(x, groupsOf);
    resharded[key] = x;
    return x;
  }

  static bool isIdentity(ArrayRef<int64_t> perm) {
    return llvm::equal(perm, llvm::seq<int64_t>(0, static_cast<int64_t>(perm.size())));
  }

  // `x` with its dimensions permuted (result dimension i is x's perm[i]): a transpose, unless
  // the permutation is the identity.
  static Value permuted(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> perm) {
    if (isIdentity(perm))
      return x;
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(type.getDimSize(p));
    return b.create<graph::TransposeOp>(loc, RankedTensorType::get(shape, type.getElementType()),
                                        x, b.getDenseI64ArrayAttr(perm));
  }

  // `v`, split along dimension `from` on dp, split along `to` instead: one all-to-all (named for
  // the resharding point `forOp`). A device sends each device its block of `to`, so the blocks
  // of `to` are brought to the front first ([.., T, ..] -> [N, .., T/N, ..]); it receives
  // from device r that one's block of `from` for its own block of `to`, and puts the received
  // blocks back in place ([N, .., S/N, ..] -> [.., N, S/N, ..] = [.., S, ..]).
  Value exchangeAlong(Value v, unsigned from, unsigned to, Operation *forOp) {
    auto key = std::make_pair(v, from * 16 + to);
    if (Value r = exchanged.lookup(key))
      return r;
    auto type = cast<RankedTensorType>(v.getType());
    const int64_t n = meshShape[0];
    const int64_t rank = type.getRank();
    Type element = type.getElementType();
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    Location loc = suffixedLoc(forOp->getLoc(), "/reshard_all_to_all");
    SmallVector<int64_t> cut(type.getShape());
    cut[to] /= n;
    SmallVector<int64_t> split(cut);
    split.insert(split.begin() + to, n);
    SmallVector<int64_t> toFront = {static_cast<int64_t>(to)};
    for (int64_t d = 0; d <= rank; ++d)
      if (d != static_cast<int64_t>(to))
        toFront.push_back(d);
    // (Views between which nothing moves are one view: a reshape is a copy.)
    Value x = v;
    if (!isIdentity(toFront))
      x = permuted(b, loc, viewAs(b, loc, v, RankedTensorType::get(split, element)), toFront);
    auto flatType = RankedTensorType::get({type.getNumElements()}, element);
    x = viewAs(b, loc, x, flatType);
    x = b.create<graph::AllToAllOp>(loc, TypeRange{flatType}, mesh, ValueRange{x}, IntegerAttr(),
                                    StringAttr(), b.getDenseI16ArrayAttr({0}))
            .getResult(0);
    exchangeBytesSent += type.getNumElements() * sharding::bytesPerElement(type) / n * (n - 1);
    SmallVector<int64_t> received(cut);
    received.insert(received.begin(), n);
    SmallVector<int64_t> back;
    for (int64_t d = 0; d <= rank; ++d)
      back.push_back(d < static_cast<int64_t>(from) ? d + 1 : d == from ? 0 : d);
    if (!isIdentity(back))
      x = permuted(b, loc, viewAs(b, loc, x, RankedTensorType::get(received, element)), back);
    SmallVector<int64_t> local(cut);
    local[from] *= n;
    x = viewAs(b, loc, x, RankedTensorType::get(local, element));
    auto axes = sharding::splitAxes(v);
    llvm::erase(axes[from], static_cast<mesh::MeshAxis>(0));
    axes[to].push_back(0);
    sharding::setSharding(x, sharding::makeSharding(mesh, axes));
    exchanged[key] = x;
    exchanged[std::make_pair(x, to * 16 + from)] = v;
    return x;
  }

  // Resharding needs every device's block of the batch to be the same size.
  LogicalResult requireEvenBatch(Operation *op, StringRef why) {
    if (rows * meshShape[0] == batch)
      return success();
    return op->emitError() << nodeName(op) << " needs the batch whole (" << why
                           << "), which is resharded only from an even split: " << batch
                           << " rows do not divide by " << meshShape[0] << " devices";
  }

  // Each result of `op`, which it yields whole, cut to this device's blocks where the program
  // wants it split (a local slice per split dimension, no communication).
  void sliceResults(Operation *op) {
    for (Value r : op->getResults()) {
      auto axes = sharding::splitAxes(r);
      SmallVector<int64_t> groups = sharding::splitGroups(r);
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : r.getUses())
        uses.push_back(&use);
      sharding::setSharding(r, nullptr);
      sharding::setSplitGroups(r, SmallVector<int64_t>(groups.size(), 1));
      Value x = r;
      for (unsigned d = 0; d < axes.size(); ++d)
        for (mesh::MeshAxis a : axes[d])
          x = blocksAlong(x, d, a, groups[d]);
      for (OpOperand *use : uses)
        use->set(x);
    }
  }

  // A resharding point (graph.whole_operands, set by shardc-propagate-sharding: the op needs a
  // split dimension whole): it runs on whole operands, as in the global program. Each operand
  // is summed where it is pending and gathered along every split dimension; each result the
  // program wants split is sliced to this device's blocks after it. The backward pass needs
  // no collective of its own: the gradient ops of such an op are resharding points too (they
  // read the same whole values), and a gradient they yield whole is sliced like any other
  // result.
  // An op computed whole is, where a dimension it treats independently allows it, computed in
  // blocks of that dimension instead (BlockedResharding.h).
  LogicalResult rewriteWholeOperands(Operation *op) {
    const std::string why =
        op->getAttrOfType<StringAttr>(graph::kWholeOperandsAttr).getValue().str();
    if (failed(requireEvenBatch(op, why)))
      return failure();
    FailureOr<bool> blocked = rewriteInBlocks(op, why);
    if (failed(blocked) || *blocked)
      return failure(failed(blocked));
    int64_t gatheredBytes = 0;
    const int64_t sentBefore = gatherBytesSent;
    bool arrivedWhole = true;
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type)
        continue;
      arrivedWhole &= !pendingOf(v) && !splitOf(v);
      if (AxisMask p = pendingOf(v))
        v = allReduced(v, p);
      // A dimension split on several axes holds the minor axis's block inside the major's:
      // gathered minor axis first.
      auto axes = sharding::splitAxes(v);
      for (unsigned d = 0; d < axes.size(); ++d)
        for (mesh::MeshAxis a : llvm::reverse(SmallVector<mesh::MeshAxis>(axes[d])))
          v = wholeAlong(v, d, a, op);
      if (v.getType() != type)
        gatheredBytes += cast<RankedTensorType>(v.getType()).getNumElements() *
                         sharding::bytesPerElement(type);
      use.set(v);
    }
    // (Operands another resharding point yielded whole need nothing.)
    reshardingLines.push_back(
        nodeName(op) + ": " + why + "; " +
        (arrivedWhole ? std::string("its operands are whole already (0 bytes sent per rank)")
                      : std::to_string(gatheredBytes) +
                            " bytes of its operands gathered whole on every rank (" +
                            std::to_string(gatherBytesSent - sentBefore) +
                            " bytes sent per rank)"));
    sliceResults(op);
    return success();
  }

  // The resharding point `op` computed in blocks of one of its factors on dp
  // (BlockedResharding.h): its operands exchanged, sliced or gathered into that layout, the op
  // rewritten as any op whose factor is split, its results exchanged or gathered into the
  // layout the program wants for them. On a dp x tp mesh the operands are first made whole on
  // tp (summed where pending, gathered where split), as for the whole-operand form, and the
  // results cut to their tp blocks after (a local slice). False (nothing changed) where no
  // factor qualifies.
  FailureOr<bool> rewriteInBlocks(Operation *op, StringRef why) {
    auto it = rules.find(op);
    if (it == rules.end() || !it->second)
      return false;
    const graph::OpShardingRule &rule = *it->second;
    const int64_t n = meshShape[0];
    const AxisMask dp = 1u, tp = 2u;
    // The layout each operand has once whole on tp; the results still have their global
    // types. A dimension split on both axes, or a pending sum over the batch, is not taken.
    auto describe = [&](Value v, bool local, sharding::ReshardTensor *t) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || (local && (pendingOf(v) & dp)) || (splitOf(v) & ~(dp | tp)))
        return false;
      t->shape.assign(type.getShape().begin(), type.getShape().end());
      t->elementBytes = sharding::bytesPerElement(type);
      auto axes = sharding::splitAxes(v);
      SmallVector<int64_t> groups = sharding::splitGroups(v);
      for (unsigned d = 0; d < axes.size(); ++d) {
        if (axes[d].size() > 1)
          return false;
        if (axes[d].empty())
          continue;
        if (local)
          t->shape[d] *= meshShape[axes[d].front()];
        if (axes[d].front() == 0) {
          t->splitDim = static_cast<int>(d);
          t->groups = groups[d];
        }
      }
      return true;
    };
    SmallVector<sharding::ReshardTensor> operands(op->getNumOperands()),
        results(op->getNumResults());
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (!describe(v, true, &operands[i]))
        return false;
    for (auto [i, r] : llvm::enumerate(op->getResults()))
      if (!describe(r, false, &results[i]))
        return false;
    std::optional<sharding::BlockedReshard> plan =
        sharding::cheapestBlockedReshard(rule, operands, results, n);
    if (!plan)
      return false;

    const int64_t gatheredBefore = gatherBytesSent, exchangedBefore = exchangeBytesSent;
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      if (AxisMask p = pendingOf(v) & tp)
        v = allReduced(v, p);
      auto axes = sharding::splitAxes(v);
      for (unsigned d = 0; d < axes.size(); ++d)
        if (llvm::is_contained(axes[d], static_cast<mesh::MeshAxis>(1)))
          v = wholeAlong(v, d, 1, op);
      use.set(v);
    }
    // (What either form sends to make the operands whole on tp.)
    const int64_t tpGathered = gatherBytesSent - gatheredBefore;
    for (auto [i, use] : llvm::enumerate(op->getOpOperands())) {
      Value v = use.get();
      const int from = operands[i].splitDim, to = plan->operandDims[i];
      if (to >= 0 && from >= 0 && from != to)
        v = exchangeAlong(v, from, to, op);
      else if (to >= 0 && from < 0)
        v = blocksAlong(v, to, 0);
      else if (to < 0 && from >= 0)
        v = wholeAlong(v, from, 0, op);
      use.set(v);
    }
    // The tensor-parallel blocks the program wants of each result, cut after it.
    SmallVector<SmallVector<std::pair<unsigned, int64_t>>> tpBlocks(op->getNumResults());
    for (auto [i, r] : llvm::enumerate(op->getResults())) {
      auto axes = sharding::splitAxes(r);
      SmallVector<int64_t> groups = sharding::splitGroups(r);
      for (unsigned d = 0; d < axes.size(); ++d)
        if (llvm::is_contained(axes[d], static_cast<mesh::MeshAxis>(1)))
          tpBlocks[i].push_back({d, groups[d]});
    }
    for (auto [i, r] : llvm::enumerate(op->getResults())) {
      SmallVector<SmallVector<mesh::MeshAxis>> axes(results[i].shape.size());
      axes[plan->resultDims[i]].push_back(0);
      sharding::setSharding(r, sharding::makeSharding(mesh, axes));
      sharding::setSplitGroups(r, SmallVector<int64_t>(axes.size(), 1));
    }
    op->removeAttr(graph::kWholeOperandsAttr);
    if (failed(rewrite(op)))
      return failure();
    for (auto [i, r] : llvm::enumerate(op->getResults())) {
      const int want = results[i].splitDim, have = plan->resultDims[i];
      const bool wantedOnDp = want == have && results[i].groups == 1;
      if (wantedOnDp && tpBlocks[i].empty())
        continue;
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : r.getUses())
        uses.push_back(&use);
      Value x = r;
      if (!wantedOnDp && want >= 0 && results[i].groups == 1) {
        x = exchangeAlong(r, have, want, op);
      } else if (!wantedOnDp) {
        x = wholeAlong(r, have, 0, op);
        if (want >= 0)
          x = blocksAlong(x, want, 0, results[i].groups);
      }
      for (auto [d, groups] : tpBlocks[i])
        x = blocksAlong(x, d, 1, groups);
      for (OpOperand *use : uses)
        use->set(x);
    }
    const int64_t exchanged = exchangeBytesSent - exchangedBefore,
                  gathered = gatherBytesSent - gatheredBefore;
    reshardingLines.push_back(
        nodeName(op) + ": " + why.str() + "; computed in blocks of its dimension of " +
        std::to_string(rule.factors[plan->factor].size) + " instead: " +
        std::to_string(exchanged + gathered) + " bytes sent per rank (" +
        std::to_string(exchanged) + " by all-to-all, " + std::to_string(gathered) +
        " by all-gather), where gathering its operands whole would send " +
        std::to_string(tpGathered + sharding::wholeOperandsBytesSent(operands, n)));
    return true;
  }

  // A split constant whose blocks differ between devices (the row offsets of a pooling over
  // the flattened batch, a position table split on tp): one program serves every device, so
  // it is kept whole and each device slices its blocks from it. True when it did so.
  FailureOr<bool> sliceDistinctConstant(graph::ConstantOp op) {
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    auto axes = sharding::splitAxes(op.getResult());
    if (!dense || !splitOf(op.getResult()) ||
        graph::sameBlockOnEveryDevice(
            dense, localType(cast<RankedTensorType>(dense.getType()), axes), axes, batch))
      return false;
    if ((splitOf(op.getResult()) & 1u) &&
        failed(requireEvenBatch(op, "its blocks hold different values")))
      return failure();
    sliceResults(op);
    return true;
  }

  // The dimension of `v` that sequence parallelism split (its producer computes blocks of it:
  // SequenceParallel.h), or -1.
  int sequenceDimOf(Value v) {
    auto result = dyn_cast<OpResult>(v);
    if (!result)
      return -1;
    Operation *producer = result.getOwner();
    auto factor = producer->getAttrOfType<IntegerAttr>(sharding::kSequenceFactorAttr);
    // find, not operator[]: an op created while partitioning has no entry, and inserting one
    // could grow the map under the rule reference rewrite() holds.
    auto it = rules.find(producer);
    if (!factor || it == rules.end() || !it->second)
      return -1;
    const graph::OpShardingRule &rule = *it->second;
    if (result.getResultNumber() >= rule.results.size())
      return -1;
    const graph::TensorFactors &tf = rule.results[result.getResultNumber()];
    for (size_t d = 0; d < tf.size(); ++d)
      if (!tf[d].empty() && tf[d][0] == factor.getInt())
        return static_cast<int>(d);
    return -1;
  }

  // Sequence parallelism: an op that computes blocks along the split dimension gets each
  // operand that holds it in blocks; any other op gets whole what such an op yielded.
  void reshardSequence(Operation *op, const std::optional<graph::OpShardingRule> &rule) {
    auto factor = op->getAttrOfType<IntegerAttr>(sharding::kSequenceFactorAttr);
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      if (!isa<RankedTensorType>(v.getType()))
        continue;
      if (factor && rule) {
        unsigned k = use.getOperandNumber();
        if (k >= rule->operands.size())
          continue;
        const graph::TensorFactors &tf = rule->operands[k];
        for (size_t d = 0; d < tf.size(); ++d)
          if (!tf[d].empty() && tf[d][0] == factor.getInt() &&
              !llvm::is_contained(sharding::splitAxes(v)[d], static_cast<mesh::MeshAxis>(1)))
            use.set(blocksAlong(v, static_cast<unsigned>(d)));
      } else if (int d = sequenceDimOf(v); d >= 0) {
        use.set(wholeAlong(v, static_cast<unsigned>(d)));
      }
    }
  }

  // A local maximum over a block of a factor split on `axes`: the devices' maxima are
  // all-gathered over those axes and the maximum of them taken, so every device holds the
  // whole maximum (no collective reduces by maximum; the gathered maxima are one per row).
  LogicalResult maxOverDevices(Operation *op, Value local, AxisMask axes) {
    if (axes & 1u)
      return op->emitError() << nodeName(op) << ": a maximum over the batch (split across "
                             << "data-parallel devices) is not supported";
    auto type = cast<RankedTensorType>(local.getType());
    int64_t devices = 1;
    SmallVector<int16_t> meshAxes;
    for (mesh::MeshAxis a : axesOf(axes)) {
      devices *= meshShape[a];
      meshAxes.push_back(a);
    }
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    Location loc = op->getLoc();
    auto flatType = RankedTensorType::get({type.getNumElements()}, type.getElementType());
    Value flat = b.create<graph::ReshapeOp>(loc, flatType, local);
    SmallVector<int64_t> gatheredShape = {devices};
    gatheredShape.append(type.getShape().begin(), type.getShape().end());
    auto gathered = b.create<graph::AllGatherOp>(
        allReduceLoc(loc), TypeRange{RankedTensorType::get(gatheredShape, type.getElementType())},
        mesh, ValueRange{flat}, IntegerAttr(), StringAttr(), b.getDenseI16ArrayAttr(meshAxes));
    Value max = b.create<graph::ReduceMaxOp>(loc, gathered.getResult(0),
                                             b.getDenseI64ArrayAttr({0}), false);
    local.replaceAllUsesExcept(max, flat.getDefiningOp());
    setPending(local, 0);
    return success();
  }

  // An op that picks entries of a split dimension by index values (ShardingRule.h: index
  // blocks) records the block: the kernel picks only its device's entries.
  LogicalResult recordIndexBlock(Operation *op, const graph::OpShardingRule &rule,
                                 ArrayRef<AxisMask> axesOfFactor) {
    for (int f : rule.indexedFactors) {
      SmallVector<mesh::MeshAxis> axes = axesOf(axesOfFactor[f]);
      if (axes.empty())
        continue;
      if (axes.size() != 1 || axes[0] == 0)
        return op->emitError() << nodeName(op) << ": picks by index along a dimension split "
                               << "on the batch's mesh axis, which is not supported";
      int64_t whole = rule.factors[f].size;
      op->setAttr(graph::kIndexBlockAttr,
                  OpBuilder(op).getDenseI64ArrayAttr(
                      {static_cast<int64_t>(axes[0]), localSize(whole, axes), whole}));
    }
    return success();
  }

  // What an op's own part of its rewrite may ask (LocalSharding.h), for `op`, the op being
  // rewritten: its result types in the global program are taken when the context is made,
  // before step 3 gives them their local types.
  struct LocalContext final : graph::LocalShardingContext {
    LocalContext(PartitionPass &pass, Operation *op)
        : pass(pass), op(op), globalTypes(op->getResultTypes()) {}

    Type globalType(OpResult result) const override {
      assert(result.getOwner() == op && "a result of the op being rewritten");
      return globalTypes[result.getResultNumber()];
    }
    SmallVector<SmallVector<mesh::MeshAxis>> splitAxes(Value v) const override {
      return sharding::splitAxes(v);
    }
    SmallVector<int64_t> splitGroups(Value v) const override { return sharding::splitGroups(v); }
    SmallVector<mesh::MeshAxis> axesSplitting(Value v) const override {
      return axesOf(splitOf(v));
    }
    int64_t localSize(int64_t size, ArrayRef<mesh::MeshAxis> axes) const override {
      return pass.localSize(size, axes);
    }
    int64_t batchSize() const override { return pass.batch; }
    Value buildAllReduce(OpBuilder &b, Location loc, Value v,
                         ArrayRef<mesh::MeshAxis> axes) override {
      return b.create<mesh::AllReduceOp>(allReduceLoc(loc), v.getType(), pass.mesh.getValue(),
                                         axes, v);
    }

    PartitionPass &pass;
    Operation *op;
    SmallVector<Type> globalTypes;
  };

  LogicalResult rewrite(Operation *op) {
    if (op->hasAttr(graph::kWholeOperandsAttr))
      return rewriteWholeOperands(op);
    if (auto constant = dyn_cast<graph::ConstantOp>(op)) {
      FailureOr<bool> sliced = sliceDistinctConstant(constant);
      if (failed(sliced) || *sliced)
        return failure(failed(sliced));
    }
    // Every op of the function got its entry before rewriting started.
    const std::optional<graph::OpShardingRule> &rule = rules.find(op)->second;
    if (meshShape.size() > 1)
      reshardSequence(op, rule);
    // (Not a local form of add: how pending sums meet across the ops of a gradient's sum.)
    if (auto add = dyn_cast<graph::AddOp>(op))
      sumPendingTermsFirst(add);
    // 1. Pending sums among the operands. An op passes on a pending sum over an axis only
    // where it is linear in it and splits nothing along that axis (a device's block times its
    // partial sum is not its block of the sum); everything else is all-reduced first.
    AxisMask splitHere = 0;
    for (Value v : op->getOperands())
      if (isa<RankedTensorType>(v.getType()))
        splitHere |= splitOf(v);
    for (Value v : op->getResults())
      splitHere |= splitOf(v);
    SmallVector<AxisMask> pending;
    for (Value v : op->getOperands())
      pending.push_back(pendingOf(v));
    SmallVector<AxisMask> keep(op->getNumOperands(), 0);
    bool deferredOp = endsInDataParallelPasses(op);
    if (deferredOp) {
      // The data-parallel passes reduce the loss and the gradients over dp themselves.
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        if (reducedByDataParallelPasses(op, i))
          keep[i] = pending[i] & 1u;
    } else if (rule && rule->sumsOperands) {
      AxisMask common = ~0u;
      for (AxisMask m : pending)
        common &= m;
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        keep[i] = common & ~splitHere;
    } else if (rule) {
      // One linear operand may keep its pending sum (when no other operand has one left).
      for (unsigned i = 0; i < op->getNumOperands(); ++i) {
        if (pending[i] && i < rule->linear.size() && rule->linear[i]) {
          keep[i] = pending[i] & ~splitHere;
          break;
        }
        if ((pending[i] & 1u) && i < rule->linearOverBatch.size() && rule->linearOverBatch[i]) {
          keep[i] = pending[i] & 1u & ~splitHere;
          break;
        }
      }
    }
    // A pending sum that several ops read is summed once, where it is defined: passed on
    // along each reader, it would need an all-reduce per path (as in a norm's backward,
    // where the incoming gradient feeds several products). The batch's pending sums are the
    // data-parallel passes' to bucket and are left alone.
    // Likewise a pending sum is summed before an op that makes it larger (a gather's
    // gradient scattering rows into a whole sequence): the all-reduce moves the smaller one.
    auto elements = [](Value v) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      return t ? t.getNumElements() : 0;
    };
    int64_t resultElements = 0; // of the local results (their types are still global here)
    for (Value r : op->getResults())
      if (auto t = dyn_cast<RankedTensorType>(r.getType()))
        resultElements =
            std::max(resultElements, localType(t, sharding::splitAxes(r)).getNumElements());
    // (Not in a sum: an operand as large as the result would be all-reduced there anyway,
    // and the smaller one rides along in it.)
    bool sums = rule && rule->sumsOperands;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      if (!deferredOp && (!op->getOperand(i).hasOneUse() ||
                          (!sums && resultElements > elements(op->getOperand(i)))))
        keep[i] &= 1u;
    // A sum passes on only the pending sums every operand keeps (a + p with only p pending
    // would add a to every device's partial sum).
    if (!deferredOp && sums) {
      AxisMask common = ~0u;
      for (AxisMask m : keep)
        common &= m;
      for (AxisMask &m : keep)
        m = common;
    }
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      if (AxisMask reduce = pending[i] & ~keep[i])
        op->setOperand(i, allReduced(op->getOperand(i), reduce));
    AxisMask passed = 0;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      passed |= keep[i];
    if (isa<func::ReturnOp>(op) || !rule)
      return success();

    // 2. The op's own local form, when it is other ops (ShardingRuleOpInterface's
    // buildLocalForm: the gradient norm of split gradients); the rewrite ends there.
    auto shardable = cast<graph::ShardingRuleOpInterface>(op);
    LocalContext context(*this, op);
    FailureOr<bool> built = shardable.buildLocalForm(context);
    if (failed(built))
      return failure();
    if (*built)
      return success();

    // 3. Local result types.
    for (Value r : op->getResults())
      if (auto t = dyn_cast<RankedTensorType>(r.getType()))
        r.setType(localType(t, sharding::splitAxes(r)));

    // 4. The mesh axes of each of the op's factors.
    std::vector<AxisMask> factorAxes = axesOfFactors(op, *rule, /*results=*/false);

    // 5. A result that lacks a split factor is a pending reduction over the factor's axes. The
    // optimizer's results are whole values again (the data-parallel passes make them so).
    for (auto [i, r] : llvm::enumerate(op->getResults())) {
      if (i >= rule->results.size())
        break;
      std::vector<bool> present(rule->factors.size(), false);
      for (const graph::DimFactors &dim : rule->results[i])
        for (int f : dim)
          present[f] = true;
      AxisMask resultPending = deferredOp ? 0 : passed, maxAxes = 0;
      double weight = 1.0;
      for (size_t f = 0; f < factorAxes.size(); ++f) {
        if (!factorAxes[f] || present[f])
          continue;
        switch (rule->factors[f].partial) {
        case graph::PartialKind::Norm:
          return op->emitError() << nodeName(op) << ": a norm over a split dimension is "
                                 << "combined only for graph.global_norm";
        case graph::PartialKind::Max:
          maxAxes |= factorAxes[f];
          break;
        case graph::PartialKind::Mean: {
          int64_t size = rule->factors[f].size;
          SmallVector<mesh::MeshAxis> axes = axesOf(factorAxes[f]);
          weight *= static_cast<double>(localSize(size, axes)) / static_cast<double>(size);
          [[fallthrough]];
        }
        case graph::PartialKind::Sum:
          resultPending |= factorAxes[f];
          break;
        }
      }
      setPending(r, resultPending);
      if (maxAxes && failed(maxOverDevices(op, r, maxAxes | resultPending)))
        return failure();
      if (weight != 1.0) {
        // The local mean covers a block of the factor: weight it by its share before summing.
        OpBuilder b(op->getContext());
        b.setInsertionPointAfter(op);
        auto type = cast<RankedTensorType>(r.getType());
        auto scalar = RankedTensorType::get({}, type.getElementType());
        Value factor = b.create<graph::ConstantOp>(
            op->getLoc(),
            DenseElementsAttr::get(scalar, llvm::ArrayRef(static_cast<float>(weight))));
        auto scaled = b.create<graph::MulOp>(op->getLoc(), type, r, factor);
        r.replaceAllUsesExcept(scaled, scaled);
        setPending(scaled, resultPending);
        setPending(r, 0);
      }
    }

    // 6. Where a split indexed factor's block lies, then what the op holds about shapes
    // (ShardingRuleOpInterface's localizeOp: split sizes, slice ends, constants, a training
    // dropout's whole tensor).
    if (failed(recordIndexBlock(op, *rule, axesOfFactors(op, *rule, /*results=*/true))))
      return failure();
    return shardable.localizeOp(context);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("train_step");
    if (!func)
      func = module.lookupSymbol<func::FuncOp>("forward");
    if (!func)
      return;
    auto batchAttr = func->getAttrOfType<IntegerAttr>(graph::kBatchSizeAttr);
    if (!batchAttr)
      return; // nothing is split
    batch = batchAttr.getInt();
    // The mesh: the one the shardings name.
    for (BlockArgument arg : func.getArguments())
      if (auto s = getSharding(arg))
        mesh = s.getMesh();
    auto meshOp = mesh ? module.lookupSymbol<mesh::MeshOp>(mesh.getAttr()) : nullptr;
    if (!meshOp || meshOp.getRank() < 1 || meshOp.getRank() > 2) {
      func.emitError("the batch's sharding names no mesh.mesh of 1 (dp) or 2 (dp, tp) axes");
      return signalPassFailure();
    }
    meshShape.assign(meshOp.getShape().begin(), meshOp.getShape().end());
    int64_t ranks = meshShape[0];
    rows = localRows;
    if (rows == 0) {
      if (batch % ranks) {
        func.emitError("the batch of ") << batch << " rows does not divide evenly across "
                                        << ranks << " devices; give local-rows";
        return signalPassFailure();
      }
      rows = batch / ranks;
    }
    if (rows < 1 || rows > batch) {
      func.emitError("local-rows ") << static_cast<int64_t>(rows) << " is not in [1, " << batch
                                    << "]";
      return signalPassFailure();
    }

    sharding::decomposeSplitClassesLosses(func);
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front()) {
      ops.push_back(&op);
      auto iface = dyn_cast<graph::ShardingRuleOpInterface>(&op);
      rules[&op] = iface ? iface.getShardingRule() : std::nullopt;
    }
    for (BlockArgument arg : func.getArguments())
      if (auto t = dyn_cast<RankedTensorType>(arg.getType()))
        arg.setType(localType(t, sharding::splitAxes(arg)));
    for (Operation *op : ops)
      if (failed(rewrite(op)))
        return signalPassFailure();
    if (!reshardingLines.empty()) {
      SmallVector<StringRef> refs(reshardingLines.begin(), reshardingLines.end());
      func->setAttr(graph::kReshardingAttr, OpBuilder(func).getStrArrayAttr(refs));
    }
    Block &body = func.getBody().front();
    func.setFunctionType(FunctionType::get(&getContext(), body.getArgumentTypes(),
                                           body.getTerminator()->getOperandTypes()));
  }
};

} // namespace
} // namespace shardc
