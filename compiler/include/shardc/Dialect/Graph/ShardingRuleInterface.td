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

    The partitioner's rewrite of an op with a rule, in order: (1) the pending sums among the
    operands are all-reduced where the op is not linear in them; (2) buildLocalForm: an op whose
    local form is not itself on local types builds it and stops the rewrite there; (3) the
    results get their local types and pending sums (generic, from the rule), and a split
    indexed factor is recorded (graph.index_block); (4) localizeOp: the op rewrites what it
    holds about shapes. Both hooks default to doing nothing and ask the partitioner through a
    LocalShardingContext (LocalSharding.h). An op that needs one lists
    Graph_ShardableWith<[the hooks it writes]> among its traits.
  }];
  let methods = [
    InterfaceMethod<"The op's factor mapping, or std::nullopt when it has none.",
      "std::optional<::shardc::graph::OpShardingRule>", "getShardingRule", (ins)>,
    InterfaceMethod<[{
        Called once the operands' pending sums are settled, before the op's results have their
        local types (context.globalType is their type still). An op whose local form is other
        ops builds them here (the gradient norm: a norm of each group of gradients split on the
        same mesh axes, squared, summed over those axes, added, its square root) and returns
        true: the partitioner then does nothing more with the op, which may be erased. false:
        the generic rewrite and localizeOp follow.
      }],
      "::mlir::FailureOr<bool>", "buildLocalForm",
      (ins "::shardc::graph::LocalShardingContext &":$context), [{}],
      [{ return false; }]>,
    InterfaceMethod<[{
        Called last, once the results have their local types (context.globalType gives their
        global ones) and pending sums: the op rewrites what it holds about shapes to the local
        program (a split's sizes, a slice's ends, a constant's value, the shape operand of a
        constant_of_shape), or records what its kernel must know of the global program (a
        training dropout: the whole tensor's shape and where the device's block lies). An
        error is emitted on the op.
      }],
      "::mlir::LogicalResult", "localizeOp",
      (ins "::shardc::graph::LocalShardingContext &":$context), [{}],
      [{ return ::mlir::success(); }]>
  ];
}

// Trait list entry for ops that implement the interface in C++ (ShardingRules*.cpp): every
// graph op (Graph_Op) has getShardingRule; one that also writes a hook lists it instead, as
// Graph_ShardableWith<["buildLocalForm"]> or Graph_ShardableWith<["localizeOp"]>.
class Graph_ShardableWith<list<string> hooks> :
    DeclareOpInterfaceMethods<Graph_ShardingRuleOpInterface, hooks>;
def Graph_Shardable : Graph_ShardableWith<[]>;

#endif
