//===- GraphTraits.h - op traits of the graph dialect -----------------------------------===//
//
// The C++ side of the NativeOpTraits declared in GraphTrainingOps.td:
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

} // namespace shardc::graph::traits

#endif
