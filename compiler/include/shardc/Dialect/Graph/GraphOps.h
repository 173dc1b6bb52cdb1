//===- GraphOps.h - graph dialect operations --------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_GRAPHOPS_H
#define SHARDC_DIALECT_GRAPH_GRAPHOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphTraits.h"

#include "shardc/Dialect/Graph/GradientInterface.h.inc"
#include "shardc/Dialect/Graph/LocalSharding.h"
#include "shardc/Dialect/Graph/ShardingRule.h"
#include "shardc/Dialect/Graph/ShardingRuleInterface.h.inc"
#include "shardc/Dialect/Graph/KernelCallBuilder.h"
#include "shardc/Dialect/Graph/KernelOpInterface.h.inc"
#include "shardc/Dialect/Graph/OpCost.h"
#include "shardc/Dialect/Graph/CostInterface.h.inc"

#define GET_OP_CLASSES
#include "shardc/Dialect/Graph/GraphOps.h.inc"

#endif
