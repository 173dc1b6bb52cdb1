//===- ModuleUnit.h - the repeated module an op came from ------------------------------===//
//
// Exporters name each node by its module path ("/transformer/h.3/attn/MatMul"). A module in a
// ModuleList or Sequential has a path component ending in ".N"; the path up to it names one
// repeated unit (a transformer layer, a residual block). Recomputation groups ops by unit
// and pipeline stages are cut between units.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_MODULEUNIT_H
#define SHARDC_DIALECT_GRAPH_MODULEUNIT_H

#include "mlir/IR/Operation.h"

#include <string>

namespace shardc::graph {

// The prefix of the op's node name up to its first path component that ends in ".N" ("h.3",
// "layers.0", "body.2"); empty when it has none (or no name).
std::string moduleUnitOf(mlir::Operation *op);

// The op's node name; empty when its location has none.
std::string nodeNameOf(mlir::Operation *op);

} // namespace shardc::graph

#endif
