//===- GraphDialect.td - the graph dialect ----------------------------------------------===//
//
// The graph dialect holds a model as imported from ONNX: one op per ONNX operator, with the
// operator's attributes normalised (axes non-negative, optional forms resolved) and every
// tensor statically shaped. It describes the *global* computation; sharding never changes it.
//
//===-------------------------------------------------------------------------------------===//

#ifndef SHARDC_DIALECT_GRAPH_GRAPHDIALECT_TD
#define SHARDC_DIALECT_GRAPH_GRAPHDIALECT_TD

include "mlir/IR/OpBase.td"
include "shardc/Dialect/Graph/ShardingRuleInterface.td"
include "shardc/Dialect/Graph/KernelOpInterface.td"
include "shardc/Dialect/Graph/CostInterface.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let summary = "Tensor-level model graph imported from ONNX";
  let description = [{
    Ops mirror ONNX operators (opset 13 to 20) on statically shaped tensors of f32, i64, i32
    and i1 (bool). Attributes are stored in a normalised form so that later passes and the
    lowering never re-derive ONNX's many attribute/input variants.

    Function arguments and results of `@forward` carry their ONNX names:
    `graph.input = "NAME"` (a graph input), `graph.param = "NAME"` (an initializer, i.e. a
    named model parameter) and, on results, `graph.output = "NAME"`.
  }];
  let cppNamespace = "::shardc::graph";
  // The data-parallel collectives run on a mesh.mesh (GraphCollectiveOps.td).
  let dependentDialects = ["::mlir::mesh::MeshDialect"];
  let hasConstantMaterializer = 1;
  let usePropertiesForAttributes = 1;
  let useDefaultAttributePrinterParser = 1;
}

// Every op says how its dimensions may be split (ShardingRule.h); an op answering "no rule"
// is computed replicated. An op that also writes one of the partitioner's hooks lists
// Graph_ShardableWith<[its hooks]> (ShardingRuleInterface.td) in place of the plain entry.
// The kernel call of an op (KernelOpInterface): an op runs as the kernel of its own name, on its
// operands and results in order, unless it lists Graph_KernelCall<[the methods it writes]>
// (defined in KernelCalls.cpp), or Graph_NoKernel when it only exists at compile time (it is
// folded to a constant before lowering).
class Graph_KernelCall<list<string> methods> :
    DeclareOpInterfaceMethods<Graph_KernelOpInterface, methods>;
class Graph_NoKernelTrait : NativeOpTrait<"NoKernel"> {
  let cppNamespace = "::shardc::graph::traits";
}
def Graph_NoKernel : Graph_NoKernelTrait;
// The common overrides: kernel attributes (or optional operands), another kernel name.
def Graph_KernelAttributes : Graph_KernelCall<["buildKernelCall"]>;
def Graph_KernelRenamed : Graph_KernelCall<["getKernelName"]>;

// Ops that only move, select or convert data count no FLOPs (CostInterface.td).
class Graph_NoArithmeticTrait : NativeOpTrait<"NoArithmetic"> {
  let cppNamespace = "::shardc::graph::traits";
}
def Graph_NoArithmetic : Graph_NoArithmeticTrait;

class Graph_Op<string mnemonic, list<Trait> traits = []> :
    Op<Graph_Dialect, mnemonic, !listconcat(traits,
       !if(!empty(!filter(t, traits, !isa<Graph_ShardableWith>(t))), [Graph_Shardable], []),
       !if(!empty(!filter(t, traits, !isa<Graph_CostWith>(t))), [Graph_Costed], []),
       !if(!empty(!filter(t, traits, !or(!isa<Graph_KernelCall>(t),
                                          !isa<Graph_NoKernelTrait>(t)))),
           [Graph_KernelCall<[]>], []))>;

// The element types the runtime supports.
def Graph_Tensor : RankedTensorOf<[F32, BF16, F16, I64, I32, I1]>;
def Graph_FloatTensor : RankedTensorOf<[F32]>;
// The values --precision bf16/fp16 stores in 16 bits (shardc-half-storage): matrix products'
// operands and results and the collectives that move or sum them.
def Graph_StorageFloatTensor : RankedTensorOf<[F32, BF16, F16]>;
def Graph_IndexTensor : RankedTensorOf<[I64, I32]>;
def Graph_BoolTensor : RankedTensorOf<[I1]>;

#endif // SHARDC_DIALECT_GRAPH_GRAPHDIALECT_TD
