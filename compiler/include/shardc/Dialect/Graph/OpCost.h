//===- OpCost.h - the defaults of CostOpInterface ----------------------------------------===//
//
// CostInterface.td's defaults, and the sum over a function that the plan reports. An op
// counts as arithmetic unless it has the NoArithmetic trait (GraphTraits.h).
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_OPCOST_H
#define SHARDC_DIALECT_GRAPH_OPCOST_H

#include "mlir/IR/Operation.h"

#include <cstdint>
#include <string>

namespace mlir::func {
class FuncOp;
}

namespace shardc::graph {

// 0 for an op with the NoArithmetic trait, else one operation per element of its largest
// operand or result.
uint64_t elementwiseFlops(mlir::Operation *op);
// The bytes of its ranked-tensor operands and results.
uint64_t operandAndResultBytes(mlir::Operation *op);
// "1.23 MFLOP", "456 FLOP": a count in words, three significant digits.
std::string flopsText(uint64_t flops);
// Sum of getFlops() over the ops of `func`'s body that have the interface.
uint64_t functionFlops(mlir::func::FuncOp func);

} // namespace shardc::graph

#endif
