//===- ShardingRuleInterface.td - how each op's dimensions may be split -----------------===//
#ifndef SHARDC_DIALECT_GRAPH_SHARDINGRULEINTERFACE_TD
#define SHARDC_DIALECT_GRAPH_SHARDINGRULEINTERFACE_TD

include "mlir/IR/OpBase.td"

def Graph_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::shardc::graph";
  let description = [{
    The op's sharding rule (ShardingRule.h): the factors it iterates over, their sizes and
    kinds (parallel, reduction, whole), which factors make up each dimension of each operand
    and result, and in which operands a pending partial sum passes through. The sharding
    propagation (passes/sharding) links the dimensions of all values through these rules; the
    partitioner rewrites the op to the local types the split factors give. std::nullopt means
    no rule: the op is computed replicated.
  }];
  let methods = [
    InterfaceMethod<"The op's factor mapping, or std::nullopt when it has none.",
      "std::optional<::shardc::graph::OpShardingRule>", "getShardingRule", (ins)>
  ];
}

// Trait list entry for ops that implement the interface in C++ (ShardingRules*.cpp).
def Graph_Shardable : DeclareOpInterfaceMethods<Graph_ShardingRuleOpInterface>;

#endif
