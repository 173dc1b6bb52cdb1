//===- MicroBatches.cpp - a device's batch run as K microbatches, gradients accumulated --===//
//
// Gradient accumulation as a transformation of the partitioned step. shardc-partition has
// written @train_step for one microbatch (local-rows = the device's rows / K): every value
// that depends on the batch is either split along it (a microbatch's rows) or a pending sum
// over it (the loss, the gradients, a label count), and the collectives that sum over the
// batch are `mesh.all_reduce`s on the dp axis. Running the device's rows as K microbatches is
// then the same as putting the K microbatches on K more devices of the dp axis and running
// them one after another: the ops that depend on the batch (the loop body) are cloned once per
// microbatch, each clone reading its slice of the device's inputs, and every sum over the batch
// (a dp all-reduce, the loss and the gradients the optimizer reads) first adds up the K
// clones' values in microbatch order. Ops that do not depend on the batch (a weight's cast or
// transpose, the optimizer) run once. The math is the whole batch's: a BatchNorm's statistics
// or a count of labels cover all K microbatches, by the same rules that make them cover all
// ranks.
//
// The order is the microbatch loop: each phase (the ops between two sums over the batch that
// later ops need, such as the label count a mean loss divides by) runs for microbatch 0, then 1,
// ..., and each op sits in the latest phase its users allow, so one microbatch's forward and
// backward run back to back and its activations die before the next one starts. Gradients are
// accumulated right after each microbatch computes its own. Pipeline schedules reorder the
// same clones across stages.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/microbatch/MicroBatchPasses.h"
#include "passes/sharding/ValueSharding.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <string>

namespace shardc {
#define GEN_PASS_DEF_MICROBATCHES
#include "passes/microbatch/MicroBatchPasses.h.inc"

using namespace mlir;

namespace {

enum class Role { Invariant, Body, Combine, Optimizer };

// Errors name the op's kind; the diagnostic's location names its node.
std::string kindOf(Operation *op) { return op->getName().getStringRef().str(); }

bool isOptimizerOp(Operation *op) {
  return op->hasTrait<graph::traits::OptimizerPhase>() || isa<func::ReturnOp>(op);
}

// A collective over the batch's mesh axis (dp, axis 0); collectives on the tp axis alone
// work within one microbatch's rows and are cloned with it.
bool onBatchAxis(Operation *op) {
  auto axes = op->getAttrOfType<DenseI16ArrayAttr>("mesh_axes");
  return !axes || llvm::is_contained(axes.asArrayRef(), 0);
}

// The devices an all-reduce spans: the product of its mesh axes' sizes.
int64_t devicesOf(mesh::AllReduceOp op) {
  auto meshOp = SymbolTable::lookupNearestSymbolFrom<mesh::MeshOp>(op, op.getMeshAttr());
  if (!meshOp)
    return -1;
  int64_t n = 1;
  for (mesh::MeshAxis a : op.getMeshAxes())
    n *= meshOp.getShape()[a];
  return n;
}

struct MicroBatchesPass : impl::MicroBatchesBase<MicroBatchesPass> {
  using MicroBatchesBase::MicroBatchesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("train_step");
    if (!func) {
      module.emitError("--micro-batches needs a training step (@train_step)");
      return signalPassFailure();
    }
    if (microBatches < 1) {
      func.emitError("--micro-batches must be at least 1, got ")
          << static_cast<int64_t>(microBatches);
      return signalPassFailure();
    }
    if (microBatches == 1)
      return;
    if (failed(unroll(func)))
      signalPassFailure();
  }

  // The graph inputs split along the batch, each with its batch dimension.
  LogicalResult findBatchInputs(func::FuncOp func,
                                llvm::MapVector<BlockArgument, int64_t> &inputs) {
    for (BlockArgument arg : func.getArguments()) {
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::kInputAttr);
      if (!name)
        continue;
      auto axes = sharding::splitAxes(arg);
      for (auto [d, a] : llvm::enumerate(axes)) {
        if (!llvm::is_contained(a, 0))
          continue;
        if (sharding::splitGroups(arg)[d] > 1)
          return func.emitError("--micro-batches: input '")
                 << name.getValue() << "' holds the batch in groups along dim " << d
                 << " (its rows are not contiguous), which cannot be cut into microbatches";
        inputs[arg] = static_cast<int64_t>(d);
      }
    }
    if (inputs.empty())
      return func.emitError("--micro-batches ")
             << static_cast<int64_t>(microBatches)
             << ": no graph input is split along a batch dimension, so the "
             << "batch cannot be cut into microbatches";
    return success();
  }

  LogicalResult unroll(func::FuncOp func) {
    const int64_t K = microBatches;
    llvm::MapVector<BlockArgument, int64_t> batchInputs;
    if (failed(findBatchInputs(func, batchInputs)))
      return failure();
    Block &block = func.getBody().front();
    Operation *ret = block.getTerminator();

    // 1. Roles. A value varies with the microbatch when it depends on a batch input; a sum over
    // the batch (dp all-reduce) of such a value does not, nor does what the optimizer computes
    // from the summed gradients.
    llvm::DenseSet<Value> varying;
    for (auto &[arg, dim] : batchInputs)
      varying.insert(arg);
    SmallVector<Operation *> ops;
    llvm::DenseMap<Operation *, Role> role;
    llvm::SetVector<Value> terminals; // sums over the batch the optimizer or the return reads
    for (Operation &op : block) {
      bool reads = llvm::any_of(op.getOperands(), [&](Value v) { return varying.count(v); });
      Role r = Role::Invariant;
      if (reads) {
        if (isOptimizerOp(&op)) {
          r = Role::Optimizer;
          for (Value v : op.getOperands())
            if (varying.count(v))
              terminals.insert(v);
        } else if (isa<mesh::AllReduceOp>(op) && onBatchAxis(&op)) {
          r = Role::Combine;
        } else if ((isa<mesh::MeshDialect>(op.getDialect()) ||
                    isa<graph::AllReduceOp, graph::ReduceScatterOp, graph::AllGatherOp,
                        graph::AllToAllOp, graph::ShardSliceOp>(op)) &&
                   onBatchAxis(&op)) {
          return op.emitError() << kindOf(&op) << " over the dp axis of values that depend on "
                                << "the batch: --micro-batches can only add up sums over it";
        } else {
          r = Role::Body;
          for (Value res : op.getResults())
            varying.insert(res);
        }
      }
      role[&op] = r;
      if (&op != ret)
        ops.push_back(&op);
    }
    // A copy in another layout or type of a value that does not vary (a weight's transpose or
    // cast), read only by the loop, is redone per microbatch: kept once, it would stay alive
    // across the whole loop, where the step without microbatches frees it after its last use.
    for (Operation *op : llvm::reverse(ops)) {
      if (role[op] != Role::Invariant ||
          !isa<graph::TransposeOp, graph::ReshapeOp, graph::CastOp, graph::ExpandOp>(op) ||
          op->use_empty() ||
          !llvm::all_of(op->getUsers(), [&](Operation *u) { return role.lookup(u) == Role::Body; }))
        continue;
      role[op] = Role::Body;
    }
    for (Value t : terminals) {
      mesh::MeshShardingAttr s = sharding::getSharding(t);
      if (isa<BlockArgument>(t) || !s || !llvm::is_contained(s.getPartialAxes(), 0)) {
        Operation *user = *llvm::find_if(
            t.getUsers(), [&](Operation *u) { return role.lookup(u) == Role::Optimizer; });
        return user->emitError()
               << kindOf(user) << " reads a value that depends on the batch but is not a sum "
               << "over it (a gradient or the loss), so it cannot be accumulated over "
               << "microbatches";
      }
    }

    // 2. Phases. A sum over the batch that later body ops read splits the loop: its operands
    // are complete only after every microbatch ran. asap: the phase of each value (a sum's
    // result is available from the phase after its operand's); each body op then runs in the
    // latest phase its users allow.
    llvm::DenseMap<Value, int> asap;
    auto levelOf = [&](Value v) { return asap.lookup(v); };
    llvm::DenseMap<Operation *, int> combinePhase, phase;
    int lastPhase = 0;
    for (Operation *op : ops) {
      int level = 0;
      for (Value v : op->getOperands())
        level = std::max(level, levelOf(v));
      if (role[op] == Role::Combine) {
        combinePhase[op] = level;
        asap[op->getResult(0)] = level + 1;
        continue;
      }
      for (Value r : op->getResults())
        asap[r] = level;
      if (role[op] == Role::Body)
        lastPhase = std::max(lastPhase, level);
    }
    for (Operation *op : llvm::reverse(ops)) {
      if (role[op] != Role::Body)
        continue;
      int p = lastPhase;
      for (Operation *user : op->getUsers()) {
        if (role.lookup(user) == Role::Body)
          p = std::min(p, phase.lookup(user));
        else if (role.lookup(user) == Role::Combine)
          p = std::min(p, combinePhase.lookup(user));
      }
      phase[op] = p;
    }

    // 3. The loop, rebuilt in front of the return: per phase, microbatch after microbatch the
    // body ops of the phase (cloned), then the phase's sums over the batch. Ops that do not
    // vary are moved in just before their first reader.
    llvm::DenseSet<Value> accumulated; // values summed over the microbatches
    for (Operation *op : ops)
      if (role[op] == Role::Combine)
        accumulated.insert(op->getOperand(0));
    for (Value t : terminals)
      accumulated.insert(t);
    llvm::DenseMap<Value, Value> sumOf;
    llvm::DenseSet<Operation *> placed;
    OpBuilder b(ret);
    std::function<void(Value)> placeDefinition = [&](Value v) {
      Operation *def = v.getDefiningOp();
      // Body ops are cloned; sums over the batch were placed at the end of an earlier phase;
      // ops made here (clones, sums) are in place already.
      auto it = def ? role.find(def) : role.end();
      if (it == role.end() || it->second != Role::Invariant || placed.count(def))
        return;
      for (Value operand : def->getOperands())
        placeDefinition(operand);
      def->moveBefore(ret);
      placed.insert(def);
    };

    std::vector<IRMapping> mbMap(K); // per microbatch: input slices and body values' clones
    for (int p = 0; p <= lastPhase; ++p) {
      for (int64_t k = 0; k < K; ++k) {
        for (Operation *op : ops) {
          if (role[op] != Role::Body || phase[op] != p)
            continue;
          for (Value operand : op->getOperands()) {
            auto arg = dyn_cast<BlockArgument>(operand);
            if (arg && batchInputs.count(arg) && !mbMap[k].contains(arg))
              mbMap[k].map(arg, sliceOfInput(b, arg, batchInputs[arg], k));
            else
              placeDefinition(operand);
          }
          Operation *clone = b.clone(*op, mbMap[k]);
          clone->setLoc(graph::suffixedLoc(op->getLoc(), "/mb" + std::to_string(k)));
          clone->setAttr(graph::kMicroBatchAttr, b.getI64IntegerAttr(k));
          if (auto dropout = dyn_cast<graph::DropoutOp>(clone))
            markMicroBatchBlock(dropout, k);
          for (auto [orig, copy] : llvm::zip(op->getResults(), clone->getResults())) {
            if (!accumulated.count(orig))
              continue;
            if (k == 0) {
              sumOf[orig] = copy;
              continue;
            }
            auto add = b.create<graph::AddOp>(graph::suffixedLoc(op->getLoc(), "/microbatch_sum"),
                                              copy.getType(), sumOf[orig], copy);
            if (auto s = sharding::getSharding(orig))
              sharding::setSharding(add, s);
            sumOf[orig] = add;
          }
        }
      }
      for (Operation *op : ops)
        if (role[op] == Role::Combine && combinePhase[op] == p) {
          Value operand = op->getOperand(0);
          if (!sumOf.count(operand))
            return op->emitError() << "--micro-batches: the all-reduce sums a batch input itself, "
                                   << "not a value computed from it";
          op->setOperand(0, sumOf[operand]);
          op->moveBefore(ret);
          placed.insert(op);
          // On a mesh axis of one device (--gpus 1) the sum over the microbatches is the sum.
          if (devicesOf(cast<mesh::AllReduceOp>(op)) == 1) {
            op->getResult(0).replaceAllUsesWith(op->getOperand(0));
            op->erase();
          }
        }
    }
    // What remains runs once after the loop, in its order: the optimizer on the summed
    // gradients and the ops it alone reads.
    for (Operation *op : ops) {
      if (role[op] == Role::Body || placed.count(op))
        continue;
      op->moveBefore(ret);
      placed.insert(op);
    }
    for (Value t : terminals)
      t.replaceUsesWithIf(
          sumOf[t], [&](OpOperand &use) { return role.lookup(use.getOwner()) == Role::Optimizer; });
    for (Operation *op : llvm::reverse(ops))
      if (role[op] == Role::Body) {
        if (!op->use_empty())
          return op->emitError() << kindOf(op) << ": --micro-batches left a use of it outside "
                                 << "the microbatch loop";
        op->erase();
      }

    // 4. The device's inputs hold all K microbatches' rows.
    for (auto &[arg, dim] : batchInputs) {
      auto t = cast<RankedTensorType>(arg.getType());
      SmallVector<int64_t> shape(t.getShape());
      shape[dim] *= K;
      arg.setType(RankedTensorType::get(shape, t.getElementType()));
    }
    func.setType(
        FunctionType::get(func.getContext(), block.getArgumentTypes(), ret->getOperandTypes()));
    func->setAttr(graph::kMicroBatchesAttr, b.getI64IntegerAttr(K));
    return success();
  }

  // Microbatch k's rows of a batch input (its local type is one microbatch's).
  Value sliceOfInput(OpBuilder &b, BlockArgument arg, int64_t dim, int64_t k) {
    auto t = cast<RankedTensorType>(arg.getType());
    SmallVector<int64_t> starts(t.getRank(), 0), ends(t.getShape()), steps(t.getRank(), 1);
    starts[dim] = k * t.getDimSize(dim);
    ends[dim] = (k + 1) * t.getDimSize(dim);
    auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::kInputAttr);
    Location loc = NameLoc::get(b.getStringAttr(name.getValue() + "/mb" + std::to_string(k)));
    auto slice =
        b.create<graph::SliceOp>(loc, t, arg, b.getDenseI64ArrayAttr(starts),
                                 b.getDenseI64ArrayAttr(ends), b.getDenseI64ArrayAttr(steps));
    if (auto s = sharding::getSharding(arg))
      sharding::setSharding(slice, s);
    return slice;
  }

  // A training dropout keys its mask on the whole tensor's indices: microbatch k's block starts
  // k blocks further along the dimension split with the batch.
  void markMicroBatchBlock(graph::DropoutOp dropout, int64_t k) {
    auto dim = dropout->getAttrOfType<IntegerAttr>(graph::kDropoutSplitDimAttr);
    if (!dim)
      return;
    auto t = cast<RankedTensorType>(dropout.getOutput().getType());
    OpBuilder b(dropout);
    dropout->setAttr(graph::kDropoutSplitFirstAttr,
                     b.getI64IntegerAttr(k * t.getDimSize(dim.getInt())));
  }
};

} // namespace
} // namespace shardc
