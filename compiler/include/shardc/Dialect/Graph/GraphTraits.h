//===- GraphTraits.h - op traits of the graph dialect -----------------------------------===//
//
// The C++ side of the NativeOpTraits declared in GraphDialect.td and GraphTrainingOps.td:
// marker traits that passes test with `op->hasTrait<...>()` instead of listing op classes.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_GRAPHTRAITS_H
#define SHARDC_DIALECT_GRAPH_GRAPHTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace shardc::graph::traits {

// An op of a training step's optimizer phase (the updates and the gradient clipping that
// feeds them): it runs once per step on complete gradients.
template <typename ConcreteType>
class OptimizerPhase : public mlir::OpTrait::TraitBase<ConcreteType, OptimizerPhase> {};

// An optimizer update of one parameter: operands (param, grad, state..., step, lr[, skip]),
// results (new param, new state...).
template <typename ConcreteType>
class OptimizerUpdate : public mlir::OpTrait::TraitBase<ConcreteType, OptimizerUpdate> {};

// An op that only exists at compile time (constant, shape, range, constant_of_shape): it has no
// runtime kernel (KernelOpInterface) and is folded to a constant before lowering.
template <typename ConcreteType>
class NoKernel : public mlir::OpTrait::TraitBase<ConcreteType, NoKernel> {};

// An op that only moves, selects or converts data (reshape, slice, concat, gather, cast, the
// collectives): it counts no FLOPs (CostInterface.td).
template <typename ConcreteType>
class NoArithmetic : public mlir::OpTrait::TraitBase<ConcreteType, NoArithmetic> {};

} // namespace shardc::graph::traits

#endif
