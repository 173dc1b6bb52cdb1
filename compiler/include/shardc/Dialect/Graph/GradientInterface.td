//===- GradientInterface.td - reverse-mode rules that live with each op -----------------===//
#ifndef SHARDC_DIALECT_GRAPH_GRADIENTINTERFACE_TD
#define SHARDC_DIALECT_GRAPH_GRADIENTINTERFACE_TD

include "mlir/IR/OpBase.td"

def Graph_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::shardc::graph";
  let description = [{
    The op's vector-Jacobian product. Given the gradient of each result (a null Value for a
    result the loss does not depend on), the rule emits graph ops at the builder's insertion
    point and returns one gradient per operand: a null Value for operands that have none
    (integer and bool operands, indices, shapes). Broadcasting in the forward op is undone by
    summing over the broadcast dimensions, so every returned gradient has its operand's type.
  }];
  let methods = [
    InterfaceMethod<"Emits the gradients of the operands.",
      "::mlir::LogicalResult", "buildVjp",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

// Trait list entry for ops that implement the interface in C++ (GradientRules*.cpp).
def Graph_Differentiable : DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>;

#endif
