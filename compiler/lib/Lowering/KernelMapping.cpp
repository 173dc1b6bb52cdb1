//===- KernelMapping.cpp - graph op -> runtime kernel call (docs/kernels.md) ------------===//
#include "shardc/Lowering/KernelMapping.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Lowering/MeshGroups.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/SymbolTable.h"

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
  if (elementType.isUnsignedInteger(8))
    return program::U8;
  if (elementType.isSignlessInteger(8))
    return program::I8;
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

// Collectives (GraphCollectiveOps.td, upstream mesh.all_reduce; runtime/comm): the rank count
// travels with the call so the runtime checks it against its communicator and sizes the
// workspace; on a mesh of several axes, a collective over one axis names its group
// (MeshGroups.h). False when the mesh does not resolve or no group covers the axes.
bool resolveCollectiveGroup(Operation *op, FlatSymbolRefAttr meshRef,
                            llvm::ArrayRef<int16_t> axes, KernelCall &call) {
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

// What a graph op writes into its call (KernelOpInterface::buildKernelCall), in the
// program's encoding.
class ProgramKernelCallBuilder final : public KernelCallBuilder {
public:
  ProgramKernelCallBuilder(Operation *op, KernelCall &call) : op(op), call(call) {}

  void setInt(llvm::StringRef name, int64_t value) override {
    call.attrs[name.str()] = intAttr(value);
  }
  void setFloat(llvm::StringRef name, float value) override {
    call.attrs[name.str()] = floatAttr(value);
  }
  void setDouble(llvm::StringRef name, double value) override {
    call.attrs[name.str()] = doubleAttr(value);
  }
  void setString(llvm::StringRef name, llvm::StringRef value) override {
    call.attrs[name.str()] = stringAttr(value);
  }
  void setInts(llvm::StringRef name, llvm::ArrayRef<int64_t> values) override {
    call.attrs[name.str()] = intsAttr(values);
  }
  void setDType(llvm::StringRef name, Type elementType) override {
    call.attrs[name.str()] = intAttr(toProgramDType(elementType));
  }
  void addAbsentInput() override { call.inputs.push_back(Value()); }
  void setOperands(llvm::ArrayRef<Value> inputs, llvm::ArrayRef<Value> outputs) override {
    call.inputs.assign(inputs.begin(), inputs.end());
    call.outputs.assign(outputs.begin(), outputs.end());
  }
  LogicalResult setCollectiveGroup(FlatSymbolRefAttr mesh,
                                   llvm::ArrayRef<int16_t> axes) override {
    return success(resolveCollectiveGroup(op, mesh, axes, call));
  }

private:
  Operation *op;
  KernelCall &call;
};

// The call of `op`, or std::nullopt when it has none as it stands.
std::optional<KernelCall> kernelCallOf(Operation *op) {
  // The upstream all-reduce (a sum only) has no kernel interface of ours.
  if (auto allReduce = dyn_cast<mesh::AllReduceOp>(op)) {
    if (allReduce.getReduction() != mesh::ReductionKind::Sum)
      return std::nullopt;
    KernelCall c = direct(op, "all_reduce");
    if (!resolveCollectiveGroup(op, allReduce.getMeshAttr(), allReduce.getMeshAxes(), c))
      return std::nullopt;
    return c;
  }
  auto kernelOp = dyn_cast<KernelOpInterface>(op);
  if (!kernelOp)
    return std::nullopt;
  KernelCall c = direct(op, kernelOp.getKernelName());
  ProgramKernelCallBuilder builder(op, c);
  if (failed(kernelOp.buildKernelCall(builder)))
    return std::nullopt;
  return c;
}

} // namespace

FailureOr<KernelCall> mapToKernel(Operation *op) {
  if (auto d = dyn_cast<DropoutOp>(op); d && d.isRandom() && d.getKey().empty())
    return op->emitOpError("is a training dropout without its (seed, step) key: it can only "
                           "run inside a training step");
  std::optional<KernelCall> call = kernelCallOf(op);
  if (!call)
    return op->emitOpError("has no runtime kernel (it must be folded to a constant before "
                           "lowering)");
  // A device's block of a dimension picked by index (passes/sharding/Partition): its mesh
  // axis, its size and the whole size; the runtime sets each rank's index_offset from its
  // coordinate (runtime/loader/rank_program.h).
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
