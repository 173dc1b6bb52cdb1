//===- ShardingPasses.h - the sharding passes --------------------------------------------===//
// Declared in ShardingPasses.td: each pass's create function and options, and
// registerShardingPasses().
#ifndef SHARDC_PASSES_SHARDING_SHARDINGPASSES_H
#define SHARDC_PASSES_SHARDING_SHARDINGPASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Pass/Pass.h"

#include "shardc/Dialect/Graph/GraphDialect.h"

namespace shardc {

#define GEN_PASS_DECL
#include "passes/sharding/ShardingPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/sharding/ShardingPasses.h.inc"

} // namespace shardc

#endif
