//===- ProgramEmitter.cpp ---------------------------------------------------------------===//
#include "shardc/Lowering/ProgramEmitter.h"

#include "shardc/Dialect/Graph/GraphAttrNames.h"
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Lowering/BufferRoles.h"
#include "shardc/Lowering/KernelMapping.h"
#include "shardc/Lowering/MemoryPlanner.h"
#include "shardc/Lowering/MeshGroups.h"
#include "shardc/Lowering/Signature.h"
#include "shardc/Lowering/TensorBytes.h"

#include "runtime/common/planned_memory.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"

#include <algorithm>

using namespace mlir;

namespace shardc {

namespace {

// The name a value is known by: the ONNX node that produced it plus the result number.
std::string valueName(Value v) {
  if (auto nameLoc = dyn_cast<NameLoc>(v.getLoc())) {
    std::string name = nameLoc.getName().str();
    if (auto result = dyn_cast<OpResult>(v); result && result.getOwner()->getNumResults() > 1)
      name += ":" + std::to_string(result.getResultNumber());
    return name;
  }
  return "";
}

std::string opName(Operation *op) {
  if (auto nameLoc = dyn_cast<NameLoc>(op->getLoc()))
    return nameLoc.getName().str();
  return op->getName().getStringRef().str();
}

class Emitter {
public:
  Emitter(func::FuncOp func, const WeightStore &weights) : func_(func), weights_(weights) {}

  FailureOr<EmittedProgram> run() {
    auto arena = func_->getAttrOfType<IntegerAttr>(kArenaBytesAttr);
    if (!arena)
      return func_.emitError("memory is not planned (run --shardc-plan-memory first)");
    out_.program.set_rank(0);
    out_.program.set_world_size(1);
    out_.program.set_arena_bytes(arena.getInt());
    auto workspace = func_->getAttrOfType<IntegerAttr>(kWorkspaceBytesAttr);
    if (!workspace)
      return func_.emitError("the workspace is not planned (run --shardc-plan-memory first)");
    out_.program.set_workspace_bytes(workspace.getInt());
    if (auto comm = func_->getAttrOfType<IntegerAttr>(kCommWorkspaceBytesAttr))
      out_.program.set_comm_workspace_bytes(comm.getInt());
    // A mesh of several axes: its axes (each rank's program adds its coordinate and groups,
    // RankPrograms.h).
    if (auto meshRef = func_->getAttrOfType<FlatSymbolRefAttr>(graph::kMeshAttr))
      if (auto meshOp = SymbolTable::lookupNearestSymbolFrom<mesh::MeshOp>(func_, meshRef);
          meshOp)
        addMeshAxes(out_.program, meshLayoutOf(meshOp));

    Block &body = func_.getBody().front();
    for (BlockArgument arg : body.getArguments())
      if (failed(addArgument(arg)))
        return failure();
    for (Operation &op : body.without_terminator())
      if (failed(addOp(op)))
        return failure();
    setCompletionPoints(body);
    for (auto [i, v] : llvm::enumerate(body.getTerminator()->getOperands())) {
      program::Binding *binding = out_.program.add_outputs();
      binding->set_name(resultName(func_, i));
      binding->set_buffer(buffers_.lookup(v));
      FailureOr<std::optional<llvm::SmallVector<int64_t>>> whole =
          setSharding(binding, func_.getResultAttrDict(i), v.getType(), resultName(func_, i));
      if (failed(whole))
        return failure();
      // An op result returned as the next step's parameter or state holds that (an argument
      // returned as it is keeps its own role).
      // State updated in place: the result's buffer lies over its input's (the plan-memory
      // pass placed them so).
      if (func_.getResultAttr(i, kInPlaceAttr)) {
        binding->set_in_place(true);
        for (program::Binding &input : *out_.program.mutable_inputs())
          if (input.name() == binding->name())
            input.set_in_place(true);
      }
      program::Buffer *buf = out_.program.mutable_buffers(binding->buffer());
      if (std::optional<program::BufferRole> role = resultRole(func_, i);
          role && buf->role() == program::ROLE_ACTIVATION)
        buf->set_role(*role);
    }
    markGradientBuffers(out_.program);
    out_.program.set_weights_bytes(out_.weights.size());
    out_.program.set_planned_peak_bytes(runtime::planPeakMemory(out_.program).total);
    out_.program.set_planned_flops(graph::functionFlops(func_));
    return std::move(out_);
  }

private:
  // An asynchronous collective (the plan-memory pass marked it) completes before the first op
  // that reads its results, at the end of the run when only graph outputs do.
  void setCompletionPoints(Block &body) {
    for (Operation &op : body.without_terminator()) {
      auto emitted = programIndex_.find(&op);
      if (emitted == programIndex_.end() || !op.hasAttr(kAsyncAttr))
        continue;
      int32_t first = out_.program.ops_size();
      for (Value result : op.getResults())
        for (Operation *user : result.getUsers())
          if (auto reader = programIndex_.find(user); reader != programIndex_.end())
            first = std::min(first, reader->second);
      out_.program.mutable_ops(emitted->second)->set_completes_before(first);
    }
  }

  program::Buffer *newBuffer(Value v, std::string name, program::BufferKind kind,
                             program::BufferRole role) {
    auto type = cast<RankedTensorType>(v.getType());
    buffers_[v] = out_.program.buffers_size();
    program::Buffer *buf = out_.program.add_buffers();
    buf->set_name(std::move(name));
    buf->set_dtype(toProgramDType(type.getElementType()));
    for (int64_t d : type.getShape())
      buf->add_shape(d);
    buf->set_kind(kind);
    buf->set_role(role);
    buf->set_size_bytes(type.getNumElements() * runtimeElementSize(type.getElementType()));
    return buf;
  }

  void placeInWeights(program::Buffer *buf, llvm::ArrayRef<char> bytes) {
    buf->set_region(program::WEIGHTS);
    buf->set_offset(out_.weights.append(bytes));
  }

  LogicalResult addArgument(BlockArgument arg) {
    unsigned i = arg.getArgNumber();
    if (std::optional<std::string> input = runtimeInputName(func_, i)) {
      auto offset = func_.getArgAttrOfType<IntegerAttr>(i, kArgOffsetAttr);
      if (!offset)
        return func_.emitError("input '") << *input << "' has no planned offset";
      program::Buffer *buf = newBuffer(arg, *input, program::INPUT, argumentRole(func_, i));
      buf->set_region(program::ARENA);
      buf->set_offset(offset.getInt());
      program::Binding *binding = out_.program.add_inputs();
      binding->set_name(*input);
      binding->set_buffer(buffers_.lookup(arg));
      FailureOr<std::optional<llvm::SmallVector<int64_t>>> wholeShape =
          setSharding(binding, func_.getArgAttrDict(i), arg.getType(), *input);
      if (failed(wholeShape))
        return failure();
      // A trained parameter is fed step after step; its first value ships in the weights.
      if (func_.getArgAttrOfType<StringAttr>(i, graph::kParamAttr))
        return addStateInit(*input, buf->size_bytes(), *wholeShape);
      // The batch's rows are the dimension split on the data-parallel axis (0): dim 1 of a
      // sequence-first model's inputs. The data source cuts them along it.
      if (auto split = func_.getArgAttrOfType<mesh::MeshShardingAttr>(i, graph::kShardingAttr))
        for (auto [d, axes] : llvm::enumerate(split.getSplitAxes()))
          if (llvm::is_contained(axes.asArrayRef(), mesh::MeshAxis(0)))
            binding->set_batch_dim(static_cast<int32_t>(d));
      return success();
    }
    auto param = func_.getArgAttrOfType<StringAttr>(i, graph::kParamAttr);
    if (!param)
      return func_.emitError("argument ") << i << " is neither a graph input nor a parameter";
    program::Buffer *buf = newBuffer(arg, param.str(), program::PARAMETER, program::ROLE_PARAMETER);
    const WeightTensor *w = weights_.find(param.str());
    if (!w || !w->present) {
      // Planning only: reserve the space (without holding it) so the memory plan is still
      // complete.
      buf->set_region(program::WEIGHTS);
      buf->set_offset(out_.weights.reserve(buf->size_bytes(), param.str()));
      return success();
    }
    if (w->bytes.size() != buf->size_bytes())
      return func_.emitError("parameter '") << param.getValue() << "' holds " << w->bytes.size()
                                            << " bytes, its type needs " << buf->size_bytes();
    placeInWeights(buf, w->bytes);
    return success();
  }

  // Records how a sharded binding relates to its whole tensor (program.proto, Sharding): a
  // ZeRO flat shard (#graph.flat_shard, of a tensor-parallel block when its block says so) or
  // a tensor-parallel block (#mesh.shard splitting one dimension on one axis other than the
  // batch's). Returns the whole tensor's shape, nullopt for a binding that is not sharded.
  FailureOr<std::optional<llvm::SmallVector<int64_t>>>
  setSharding(program::Binding *binding, DictionaryAttr attrs, Type type, llvm::StringRef name) {
    Attribute attr = attrs ? attrs.get(graph::kShardingAttr) : Attribute();
    auto local = cast<RankedTensorType>(type);
    program::Sharding sharding;
    llvm::SmallVector<int64_t> whole;
    if (auto flat = dyn_cast_or_null<graph::FlatShardAttr>(attr)) {
      whole.assign(flat.getGlobalShape().begin(), flat.getGlobalShape().end());
      sharding.set_num_shards(static_cast<int32_t>(meshAxisSize(flat.getAxis())));
      sharding.set_shard_axis(static_cast<int32_t>(flat.getAxis()));
      sharding.set_shard_numel(local.getNumElements());
      if (auto block = flat.getBlock()) {
        if (failed(setBlocks(sharding, block, groupsOf(attrs), whole, name)))
          return failure();
      }
    } else if (auto split = dyn_cast_or_null<mesh::MeshShardingAttr>(attr)) {
      whole.assign(local.getShape().begin(), local.getShape().end());
      if (failed(setBlocks(sharding, split, groupsOf(attrs), whole, name)))
        return failure();
      if (!hasBlocks(sharding))
        return std::optional<llvm::SmallVector<int64_t>>();
      sharding.set_num_shards(1);
      sharding.set_shard_numel(local.getNumElements());
    } else {
      return std::optional<llvm::SmallVector<int64_t>>();
    }
    // A dimension padded for its blocks (passes/sharding/TensorParallelPadding.h): the whole
    // tensor is the unpadded one.
    if (auto padding = attrs ? attrs.getAs<DenseI64ArrayAttr>(graph::kTpPaddingAttr) : nullptr) {
      const int64_t dim = padding.size() == 2 ? padding[0] : -1;
      if (dim < 0 || dim != sharding.block_dim() || !hasBlocks(sharding) ||
          static_cast<size_t>(dim) >= whole.size() || padding[1] > whole[dim])
        return func_.emitError("'") << name << "': its padding does not match its blocks";
      sharding.set_padded_dim_size(whole[dim]);
      whole[dim] = padding[1];
    }
    for (int64_t d : whole)
      sharding.add_global_shape(d);
    *binding->mutable_sharding() = std::move(sharding);
    return std::optional<llvm::SmallVector<int64_t>>(whole);
  }

  static bool hasBlocks(const program::Sharding &s) { return s.num_blocks() > 1; }

  // The groups of a strided split, per dimension (graph::kSplitGroupsAttr), if any.
  static DenseI64ArrayAttr groupsOf(DictionaryAttr attrs) {
    return attrs ? attrs.getAs<DenseI64ArrayAttr>(graph::kSplitGroupsAttr) : nullptr;
  }

  // The tensor-parallel blocks of `split` (a sharding of the block's or the whole tensor's
  // dimensions): at most one dimension split, on one mesh axis. `shape` is the block's shape
  // on entry and the whole tensor's on return.
  LogicalResult setBlocks(program::Sharding &sharding, mesh::MeshShardingAttr split,
                          DenseI64ArrayAttr groups, llvm::SmallVector<int64_t> &shape,
                          llvm::StringRef name) {
    for (auto [d, axes] : llvm::enumerate(split.getSplitAxes())) {
      // A graph input's batch split on dp (axis 0) is the program's rows (batch_begin).
      if (axes.empty() || (axes.size() == 1 && axes.asArrayRef()[0] == 0))
        continue;
      if (axes.size() != 1 || hasBlocks(sharding) || d >= shape.size())
        return func_.emitError("'") << name << "': a binding split on more than one dimension "
                                    << "or mesh axis is not supported by the runtime";
      int64_t n = meshAxisSize(axes.asArrayRef()[0]);
      sharding.set_block_dim(static_cast<int32_t>(d));
      sharding.set_num_blocks(static_cast<int32_t>(n));
      sharding.set_block_axis(static_cast<int32_t>(axes.asArrayRef()[0]));
      if (groups && d < groups.size() && groups[d] > 1)
        sharding.set_block_groups(static_cast<int32_t>(groups[d]));
      shape[d] *= n;
    }
    return success();
  }

  int64_t meshAxisSize(int64_t axis) {
    auto meshRef = func_->getAttrOfType<FlatSymbolRefAttr>(graph::kMeshAttr);
    auto meshOp =
        meshRef ? SymbolTable::lookupNearestSymbolFrom<mesh::MeshOp>(func_, meshRef) : nullptr;
    return meshOp && axis < meshOp.getRank() ? meshOp.getShape()[axis] : 1;
  }

  // The whole parameter goes into the initial values; a sharded binding's init covers its first
  // bytes (shardc's per-rank programs point it at their own part, RankPrograms.h).
  LogicalResult addStateInit(const std::string &name, uint64_t sizeBytes,
                             const std::optional<llvm::SmallVector<int64_t>> &wholeShape) {
    const WeightTensor *w = weights_.find(name);
    uint64_t wholeBytes = sizeBytes;
    if (wholeShape) {
      wholeBytes = 4;
      for (int64_t d : *wholeShape)
        wholeBytes *= static_cast<uint64_t>(d);
    }
    if (!w || !w->present) {
      // Planning only: no initial value to ship (the bundle gets no weights file).
      (void)out_.initialValues.reserve(wholeBytes, name);
      return success();
    }
    if (w->bytes.size() != wholeBytes)
      return func_.emitError("parameter '") << name << "' holds " << w->bytes.size()
                                            << " bytes, its type needs " << wholeBytes;
    program::StateInit *init = out_.program.add_state_init();
    init->set_name(name);
    init->set_offset(out_.initialValues.append(w->bytes));
    init->set_size_bytes(std::min(sizeBytes, wholeBytes));
    return success();
  }

  LogicalResult addOp(Operation &op) {
    if (auto constant = dyn_cast<graph::ConstantOp>(op)) {
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!dense)
        return op.emitOpError("constant value is not dense");
      // Stored expanded: a large one-value constant is no longer one by now (it is filled at
      // run time, shardc-fill-large-splats), so what is stored is the model's own bytes or a
      // value the compiler folded (ConstantEvaluator bounds those).
      program::Buffer *buf =
          newBuffer(constant, valueName(constant), program::CONSTANT, program::ROLE_CONSTANT);
      placeInWeights(buf, toRuntimeBytes(dense));
      return success();
    }
    auto offsets = op.getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr);
    if (!offsets || offsets.size() != static_cast<int64_t>(op.getNumResults()))
      return op.emitOpError("has no planned offsets (run --shardc-plan-memory first)");
    for (auto [r, offset] : llvm::zip(op.getResults(), offsets.asArrayRef())) {
      program::Buffer *buf =
          newBuffer(r, valueName(r), program::ACTIVATION, program::ROLE_ACTIVATION);
      buf->set_region(program::ARENA);
      buf->set_offset(offset);
    }
    FailureOr<KernelCall> call = mapToKernel(&op);
    if (failed(call))
      return failure();
    programIndex_[&op] = out_.program.ops_size();
    program::Op *emitted = out_.program.add_ops();
    emitted->set_kernel(call->kernel);
    emitted->set_name(opName(&op));
    if (auto step = op.getAttrOfType<StringAttr>(graph::kPipelineStepAttr))
      emitted->set_pipeline_step(step.getValue().str());
    for (Value v : call->inputs)
      emitted->add_inputs(v ? buffers_.lookup(v) : -1);
    for (Value v : call->outputs)
      emitted->add_outputs(buffers_.lookup(v));
    for (auto &[name, attr] : call->attrs)
      (*emitted->mutable_attrs())[name] = attr;
    return success();
  }

  func::FuncOp func_;
  const WeightStore &weights_;
  EmittedProgram out_;
  llvm::DenseMap<Value, int32_t> buffers_;
  llvm::DenseMap<Operation *, int32_t> programIndex_; // each emitted op's index in the program
};

} // namespace

FailureOr<EmittedProgram> emitProgram(func::FuncOp func, const WeightStore &weights) {
  return Emitter(func, weights).run();
}

std::optional<std::vector<char>> layOutWeightsFile(const WeightsRegion &region,
                                                   const WeightsRegion &initialValues,
                                                   llvm::ArrayRef<program::Program *> programs) {
  const uint64_t start = alignUp(region.size());
  for (program::Program *p : programs) {
    for (program::StateInit &init : *p->mutable_state_init()) {
      init.set_offset(start + init.offset());
      for (uint64_t &block : *init.mutable_block_offsets())
        block += start;
    }
    p->set_weights_bytes(region.size());
    p->set_planned_peak_bytes(runtime::planPeakMemory(*p).total);
  }
  if (!region.complete() || !initialValues.complete())
    return std::nullopt;
  std::vector<char> file = region.bytes();
  file.resize(start, 0);
  file.insert(file.end(), initialValues.bytes().begin(), initialValues.bytes().end());
  return file;
}

} // namespace shardc
