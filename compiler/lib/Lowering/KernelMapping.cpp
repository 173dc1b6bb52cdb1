//===- KernelMapping.cpp - graph op -> runtime kernel call (docs/kernels.md) ------------===//
#include "shardc/Lowering/KernelMapping.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Lowering/MeshGroups.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace shardc::graph;

namespace shardc {

program::DType toProgramDType(Type elementType) {
  if (elementType.isF32())
    return program::F32;
  if (elementType.isInteger(64))
    return program::I64;
  if (elementType.isInteger(32))
    return program::I32;
  if (elementType.isInteger(1))
    return program::BOOL;
  if (elementType.isBF16())
    return program::BF16;
  if (elementType.isF16())
    return program::F16;
  return program::DTYPE_UNSPECIFIED;
}

namespace {

program::Attribute intAttr(int64_t v) {
  program::Attribute a;
  a.set_i(v);
  return a;
}
program::Attribute floatAttr(float v) {
  program::Attribute a;
  a.set_f(v);
  return a;
}
program::Attribute doubleAttr(double v) {
  program::Attribute a;
  a.set_d(v);
  return a;
}
program::Attribute stringAttr(llvm::StringRef v) {
  program::Attribute a;
  a.set_s(v.str());
  return a;
}
program::Attribute intsAttr(llvm::ArrayRef<int64_t> v) {
  program::Attribute a;
  for (int64_t x : v)
    a.mutable_ints()->add_values(x);
  return a;
}

// A call whose operands and results are the op's own, in order.
KernelCall direct(Operation *op, llvm::StringRef kernel) {
  KernelCall call;
  call.kernel = kernel.str();
  call.inputs.assign(op->operand_begin(), op->operand_end());
  call.outputs.assign(op->result_begin(), op->result_end());
  return call;
}

// The attributes both loss kernels share.
template <typename LossOp> void addLossAttrs(LossOp op, KernelCall &call) {
  call.attrs["reduction"] = stringAttr(op.getReduction());
  call.attrs["has_ignore_index"] = intAttr(op.getIgnoreIndex().has_value() ? 1 : 0);
  call.attrs["ignore_index"] =
      intAttr(static_cast<int64_t>(op.getIgnoreIndex().value_or(0)));
}

const char *collectiveKernelName(AllReduceOp) { return "all_reduce"; }
const char *collectiveKernelName(ReduceScatterOp) { return "reduce_scatter"; }
const char *collectiveKernelName(AllGatherOp) { return "all_gather"; }
const char *collectiveKernelName(ShardSliceOp) { return "shard_slice"; }

// Collectives (GraphCollectiveOps.td, upstream mesh.all_reduce; runtime/comm): the rank count
// travels with the call so the runtime checks it against its communicator and sizes the
// workspace; on a mesh of several axes, a collective over one axis names its group
// (MeshGroups.h). False when the mesh does not resolve or no group covers the axes.
bool setCollectiveGroup(Operation *op, FlatSymbolRefAttr meshRef, llvm::ArrayRef<int16_t> axes,
                        KernelCall &call) {
  auto meshOp = SymbolTable::lookupNearestSymbolFrom<mesh::MeshOp>(op, meshRef);
  if (!meshOp)
    return false;
  CollectiveGroup group = collectiveGroupOf(meshLayoutOf(meshOp), axes);
  if (!group.supported)
    return false;
  call.attrs["num_ranks"] = intAttr(group.ranks);
  if (group.group)
    call.attrs["group"] = intAttr(*group.group);
  return true;
}

} // namespace

FailureOr<KernelCall> mapToKernel(Operation *op) {
  if (auto d = dyn_cast<DropoutOp>(op); d && d.isRandom() && d.getKey().empty())
    return op->emitOpError("is a training dropout without its (seed, step) key: it can only "
                           "run inside a training step");
  std::optional<KernelCall> call =
      llvm::TypeSwitch<Operation *, std::optional<KernelCall>>(op)
          // Element order is unchanged by these; the runtime copies the bytes.
          .Case<IdentityOp, ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(
              [&](Operation *o) { return direct(o, "copy"); })
          .Case([&](NegOp o) { return direct(o, "neg"); })
          .Case([&](AbsOp o) { return direct(o, "abs"); })
          .Case([&](ReluOp o) { return direct(o, "relu"); })
          .Case([&](SqrtOp o) { return direct(o, "sqrt"); })
          .Case([&](ReciprocalOp o) { return direct(o, "reciprocal"); })
          .Case([&](ExpOp o) { return direct(o, "exp"); })
          .Case([&](LogOp o) { return direct(o, "log"); })
          .Case([&](TanhOp o) { return direct(o, "tanh"); })
          .Case([&](ErfOp o) { return direct(o, "erf"); })
          .Case([&](SinOp o) { return direct(o, "sin"); })
          .Case([&](CosOp o) { return direct(o, "cos"); })
          .Case([&](SigmoidOp o) { return direct(o, "sigmoid"); })
          .Case([&](SoftplusOp o) { return direct(o, "softplus"); })
          .Case([&](NotOp o) { return direct(o, "not"); })
          .Case([&](GeluOp o) {
            KernelCall c = direct(o, "gelu");
            c.attrs["approximate"] = stringAttr(o.getApproximate());
            return c;
          })
          .Case([&](AddOp o) { return direct(o, "add"); })
          .Case([&](SubOp o) { return direct(o, "sub"); })
          .Case([&](MulOp o) { return direct(o, "mul"); })
          .Case([&](DivOp o) { return direct(o, "div"); })
          .Case([&](ModOp o) {
            KernelCall c = direct(o, "mod");
            c.attrs["fmod"] = intAttr(o.getFmod());
            return c;
          })
          .Case([&](PowOp o) { return direct(o, "pow"); })
          .Case([&](MaxOp o) { return direct(o, "max"); })
          .Case([&](MinOp o) { return direct(o, "min"); })
          .Case([&](EqualOp o) { return direct(o, "equal"); })
          .Case([&](LessOp o) { return direct(o, "less"); })
          .Case([&](GreaterOp o) { return direct(o, "greater"); })
          .Case([&](AndOp o) { return direct(o, "and"); })
          .Case([&](OrOp o) { return direct(o, "or"); })
          .Case([&](WhereOp o) { return direct(o, "where"); })
          .Case([&](ClipOp o) { return direct(o, "clip"); })
          .Case([&](CastOp o) {
            KernelCall c = direct(o, "cast");
            c.attrs["to"] = intAttr(toProgramDType(o.getTo()));
            return c;
          })
          .Case([&](MatMulOp o) { return direct(o, "matmul"); })
          .Case([&](GemmOp o) {
            KernelCall c = direct(o, "gemm");
            if (!o.getC())
              c.inputs.push_back(Value());
            c.attrs["alpha"] = floatAttr(o.getAlpha().convertToFloat());
            c.attrs["beta"] = floatAttr(o.getBeta().convertToFloat());
            c.attrs["trans_a"] = intAttr(o.getTransA());
            c.attrs["trans_b"] = intAttr(o.getTransB());
            return c;
          })
          .Case([&](LayerNormOp o) {
            KernelCall c = direct(o, "layer_norm");
            if (!o.getBias())
              c.inputs.push_back(Value());
            c.attrs["axis"] = intAttr(static_cast<int64_t>(o.getAxis()));
            c.attrs["epsilon"] = floatAttr(o.getEpsilon().convertToFloat());
            return c;
          })
          .Case([&](AttentionOp o) {
            // The kernel's operands are positional: an absent mask is an absent input.
            KernelCall c;
            c.kernel = "attention";
            c.inputs = {o.getQ(), o.getK(), o.getV(), o.getMask()};
            c.outputs = {o.getOutput(), o.getLse()};
            c.attrs["scale"] = floatAttr(o.getScale().convertToFloat());
            c.attrs["causal"] = intAttr(o.getCausal() ? 1 : 0);
            return c;
          })
          .Case([&](AttentionGradOp o) {
            KernelCall c;
            c.kernel = "attention_grad";
            c.inputs = {o.getQ(), o.getK(), o.getV(), o.getMask(), o.getOutput(), o.getLse(),
                        o.getDout()};
            c.outputs = {o.getDq(), o.getDk(), o.getDv()};
            c.attrs["scale"] = floatAttr(o.getScale().convertToFloat());
            c.attrs["causal"] = intAttr(o.getCausal() ? 1 : 0);
            return c;
          })
          .Case([&](SoftmaxOp o) {
            KernelCall c = direct(o, "softmax");
            c.attrs["axis"] = intAttr(static_cast<int64_t>(o.getAxis()));
            return c;
          })
          .Case([&](LogSoftmaxOp o) {
            KernelCall c = direct(o, "log_softmax");
            c.attrs["axis"] = intAttr(static_cast<int64_t>(o.getAxis()));
            return c;
          })
          .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](auto o) {
            llvm::StringRef name = isa<ReduceSumOp>(o)    ? "reduce_sum"
                                   : isa<ReduceMeanOp>(o) ? "reduce_mean"
                                                          : "reduce_max";
            KernelCall c = direct(o, name);
            c.attrs["axes"] = intsAttr(o.getAxes());
            c.attrs["keepdims"] = intAttr(o.getKeepdims());
            return c;
          })
          .Case([&](ArgMaxOp o) {
            KernelCall c = direct(o, "arg_max");
            c.attrs["axis"] = intAttr(static_cast<int64_t>(o.getAxis()));
            c.attrs["keepdims"] = intAttr(o.getKeepdims());
            c.attrs["select_last_index"] = intAttr(o.getSelectLastIndex());
            return c;
          })
          .Case([&](TransposeOp o) {
            KernelCall c = direct(o, "transpose");
            c.attrs["perm"] = intsAttr(o.getPerm());
            return c;
          })
          .Case([&](ConcatOp o) {
            KernelCall c = direct(o, "concat");
            c.attrs["axis"] = intAttr(static_cast<int64_t>(o.getAxis()));
            return c;
          })
          .Case([&](SplitOp o) {
            KernelCall c = direct(o, "split");
            c.attrs["axis"] = intAttr(static_cast<int64_t>(o.getAxis()));
            c.attrs["sizes"] = intsAttr(o.getSizes());
            return c;
          })
          .Case<ConvOp, ConvGradInputOp, ConvGradWeightOp>([&](auto o) {
            KernelCall c = direct(o, o->getName().stripDialect());
            c.attrs["strides"] = intsAttr(o.getStrides());
            c.attrs["pads"] = intsAttr(o.getPads());
            c.attrs["dilations"] = intsAttr(o.getDilations());
            c.attrs["group"] = intAttr(static_cast<int64_t>(o.getGroup()));
            return c;
          })
          .Case<MaxPoolOp, MaxPoolGradOp>([&](auto o) {
            // ceil_mode only sized the output; the kernels read the extents from it.
            KernelCall c = direct(o, o->getName().stripDialect());
            c.attrs["kernel_shape"] = intsAttr(o.getKernelShape());
            c.attrs["strides"] = intsAttr(o.getStrides());
            c.attrs["pads"] = intsAttr(o.getPads());
            c.attrs["dilations"] = intsAttr(o.getDilations());
            return c;
          })
          .Case<AvgPoolOp, AvgPoolGradOp>([&](auto o) {
            KernelCall c = direct(o, o->getName().stripDialect());
            c.attrs["kernel_shape"] = intsAttr(o.getKernelShape());
            c.attrs["strides"] = intsAttr(o.getStrides());
            c.attrs["pads"] = intsAttr(o.getPads());
            c.attrs["count_include_pad"] = intAttr(o.getCountIncludePad() ? 1 : 0);
            return c;
          })
          .Case([&](CumSumOp o) {
            KernelCall c = direct(o, "cum_sum");
            c.attrs["axis"] = intAttr(static_cast<int64_t>(o.getAxis()));
            c.attrs["exclusive"] = intAttr(o.getExclusive() ? 1 : 0);
            c.attrs["reverse"] = intAttr(o.getReverse() ? 1 : 0);
            return c;
          })
          .Case([&](ScatterNDOp o) {
            KernelCall c = direct(o, "scatter_nd");
            c.attrs["reduction"] = stringAttr(o.getReduction());
            return c;
          })
          .Case([&](PadOp o) {
            KernelCall c = direct(o, "pad");
            c.attrs["pads"] = intsAttr(o.getPads());
            c.attrs["value"] = doubleAttr(o.getValue().convertToDouble());
            return c;
          })
          .Case([&](SliceOp o) {
            KernelCall c = direct(o, "slice");
            c.attrs["starts"] = intsAttr(o.getStarts());
            c.attrs["steps"] = intsAttr(o.getSteps());
            return c;
          })
          .Case([&](GatherOp o) {
            KernelCall c = direct(o, "gather");
            c.attrs["axis"] = intAttr(static_cast<int64_t>(o.getAxis()));
            return c;
          })
          .Case([&](ExpandOp o) { return direct(o, "expand"); })
          .Case([&](TriluOp o) {
            KernelCall c = direct(o, "trilu");
            c.attrs["upper"] = intAttr(o.getUpper());
            c.attrs["k"] = intAttr(static_cast<int64_t>(o.getK()));
            return c;
          })
          .Case([&](SoftmaxCrossEntropyLossOp o) {
            KernelCall c = direct(o, "softmax_cross_entropy_loss");
            if (!o.getWeights())
              c.inputs.push_back(Value());
            addLossAttrs(o, c);
            return c;
          })
          .Case([&](NegativeLogLikelihoodLossOp o) {
            KernelCall c = direct(o, "nll_loss");
            if (!o.getWeight())
              c.inputs.push_back(Value());
            addLossAttrs(o, c);
            return c;
          })
          // Backward ops.
          .Case([&](LayerNormGradOp o) {
            KernelCall c = direct(o, "layer_norm_grad");
            c.attrs["axis"] = intAttr(static_cast<int64_t>(o.getAxis()));
            return c;
          })
          .Case([&](SoftmaxGradOp o) {
            KernelCall c = direct(o, "softmax_grad");
            c.attrs["axis"] = intAttr(static_cast<int64_t>(o.getAxis()));
            return c;
          })
          .Case([&](LogSoftmaxGradOp o) {
            KernelCall c = direct(o, "log_softmax_grad");
            c.attrs["axis"] = intAttr(static_cast<int64_t>(o.getAxis()));
            return c;
          })
          .Case([&](GeluGradOp o) {
            KernelCall c = direct(o, "gelu_grad");
            c.attrs["approximate"] = stringAttr(o.getApproximate());
            return c;
          })
          .Case([&](SoftmaxCrossEntropyLossGradOp o) {
            KernelCall c = direct(o, "softmax_cross_entropy_loss_grad");
            if (!o.getWeights())
              c.inputs.push_back(Value());
            addLossAttrs(o, c);
            return c;
          })
          .Case([&](NegativeLogLikelihoodLossGradOp o) {
            KernelCall c = direct(o, "nll_loss_grad");
            if (!o.getWeight())
              c.inputs.push_back(Value());
            addLossAttrs(o, c);
            return c;
          })
          .Case([&](GatherGradOp o) {
            KernelCall c = direct(o, "gather_grad");
            c.attrs["axis"] = intAttr(static_cast<int64_t>(o.getAxis()));
            return c;
          })
          .Case([&](ReduceMaxGradOp o) {
            KernelCall c = direct(o, "reduce_max_grad");
            c.attrs["axes"] = intsAttr(o.getAxes());
            c.attrs["keepdims"] = intAttr(o.getKeepdims());
            return c;
          })
          .Case([&](SliceGradOp o) {
            KernelCall c = direct(o, "pad_for_slice");
            c.attrs["starts"] = intsAttr(o.getStarts());
            c.attrs["steps"] = intsAttr(o.getSteps());
            return c;
          })
          .Case([&](DropoutOp o) -> std::optional<KernelCall> {
            if (!o.isRandom())
              return std::nullopt; // the identity: folded before lowering
            KernelCall c = direct(o, "dropout");
            c.attrs["ratio"] = floatAttr(o.getRatio().convertToFloat());
            c.attrs["stream"] = intAttr(o.getStream());
            // A device's block of a split tensor (passes/sharding/Partition): the whole shape,
            // the dim split along the batch and the one split on another mesh axis; each
            // rank's offsets are set by the runtime (runtime/program/rank_program.h, from its
            // first batch row and its mesh coordinate).
            if (auto global = o->getAttrOfType<DenseI64ArrayAttr>(kDropoutGlobalShapeAttr))
              c.attrs["global_shape"] = intsAttr(global.asArrayRef());
            if (auto dim = o->getAttrOfType<IntegerAttr>(kDropoutSplitDimAttr)) {
              auto unit = o->getAttrOfType<IntegerAttr>(kDropoutSplitUnitAttr);
              if (!unit)
                return std::nullopt;
              // A microbatch's block starts split_first further (passes/pipeline/MicroBatches).
              auto first = o->getAttrOfType<IntegerAttr>(kDropoutSplitFirstAttr);
              int64_t firstValue = first ? first.getInt() : 0;
              c.attrs["split_dim"] = intAttr(dim.getInt());
              c.attrs["split_unit"] = intAttr(unit.getInt());
              if (first)
                c.attrs["split_first"] = intAttr(firstValue);
              c.attrs["split_offset"] = intAttr(firstValue);
            }
            if (auto block = o->getAttrOfType<DenseI64ArrayAttr>(kDropoutBlockAttr)) {
              if (block.size() != 3)
                return std::nullopt;
              c.attrs["block_dim"] = intAttr(block[0]);
              c.attrs["block_axis"] = intAttr(block[1]);
              c.attrs["block_size"] = intAttr(block[2]);
              c.attrs["block_offset"] = intAttr(0);
            }
            return c;
          })
          // Optimizer updates.
          .Case([&](AdamWUpdateOp o) {
            KernelCall c = direct(o, "adamw_update");
            c.attrs["beta1"] = doubleAttr(o.getBeta1().convertToDouble());
            c.attrs["beta2"] = doubleAttr(o.getBeta2().convertToDouble());
            c.attrs["eps"] = doubleAttr(o.getEps().convertToDouble());
            c.attrs["weight_decay"] = doubleAttr(o.getWeightDecay().convertToDouble());
            return c;
          })
          .Case([&](SGDUpdateOp o) {
            KernelCall c = direct(o, "sgd_update");
            c.attrs["momentum"] = doubleAttr(o.getMomentum().convertToDouble());
            c.attrs["dampening"] = doubleAttr(o.getDampening().convertToDouble());
            c.attrs["weight_decay"] = doubleAttr(o.getWeightDecay().convertToDouble());
            c.attrs["nesterov"] = intAttr(o.getNesterov());
            return c;
          })
          .Case([&](GlobalNormOp o) { return direct(o, "global_norm"); })
          .Case([&](ScaleByClipOp o) {
            KernelCall c = direct(o, "scale_by_clip");
            c.attrs["max_norm"] = floatAttr(o.getMaxNorm().convertToFloat());
            return c;
          })
          // Collectives: setCollectiveGroup.
          .Case<AllReduceOp, ReduceScatterOp, AllGatherOp, ShardSliceOp>(
              [&](auto o) -> std::optional<KernelCall> {
                KernelCall c = direct(o, collectiveKernelName(o));
                if (!setCollectiveGroup(o, o.getMeshAttr(),
                                        o.getMeshAxes().value_or(llvm::ArrayRef<int16_t>()), c))
                  return std::nullopt;
                if (o.getBucket())
                  c.attrs["bucket"] = intAttr(static_cast<int64_t>(*o.getBucket()));
                if (o.getUnit())
                  c.attrs["unit"] = stringAttr(*o.getUnit());
                return c;
              })
          .Case([&](mesh::AllReduceOp o) -> std::optional<KernelCall> {
            if (o.getReduction() != mesh::ReductionKind::Sum)
              return std::nullopt;
            KernelCall c = direct(o, "all_reduce");
            if (!setCollectiveGroup(o, o.getMeshAttr(), o.getMeshAxes(), c))
              return std::nullopt;
            return c;
          })
          .Default([](Operation *) { return std::nullopt; });
  if (!call)
    return op->emitOpError("has no runtime kernel (it must be folded to a constant before "
                           "lowering)");
  // A device's block of a dimension picked by index (passes/sharding/Partition): its mesh
  // axis, its size and the whole size; the runtime sets each rank's index_offset from its
  // coordinate (runtime/program/rank_program.h).
  if (auto block = op->getAttrOfType<DenseI64ArrayAttr>(kIndexBlockAttr)) {
    if (block.size() != 3)
      return op->emitOpError("has a malformed ") << kIndexBlockAttr.str();
    call->attrs["index_block_axis"] = intAttr(block[0]);
    call->attrs["index_block_size"] = intAttr(block[1]);
    call->attrs["index_size"] = intAttr(block[2]);
    call->attrs["index_offset"] = intAttr(0);
  }
  return *call;
}

} // namespace shardc
