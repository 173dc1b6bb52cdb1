//===- KernelOpInterface.td - the runtime kernel each op runs as ------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_KERNELOPINTERFACE_TD
#define SHARDC_DIALECT_GRAPH_KERNELOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def Graph_KernelOpInterface : OpInterface<"KernelOpInterface"> {
  let cppNamespace = "::shardc::graph";
  let description = [{
    The runtime kernel call an op lowers to (docs/kernels.md; shardc/Lowering/KernelMapping.h
    makes the call). By default the kernel of the op's own name, its operands and results in
    order, no attributes: an op with attributes, optional operands or another kernel name
    writes its own methods (Graph_KernelCall in GraphDialect.td; KernelCalls.cpp).
  }];
  let methods = [
    InterfaceMethod<"The name of the kernel the op runs as.",
      "::llvm::StringRef", "getKernelName", (ins), [{}],
      [{ return $_op->getName().stripDialect(); }]>,
    InterfaceMethod<[{
        Adds the kernel's attributes to `call`, and changes its operands where they are not the
        op's own in order (an absent optional operand is an absent input). Failure: the op
        has no kernel call as it stands (it is folded before lowering, or malformed).
      }],
      "::mlir::LogicalResult", "buildKernelCall",
      (ins "::shardc::graph::KernelCallBuilder &":$call), [{}],
      [{ return ::mlir::success(); }]>,
  ];
}

#endif
