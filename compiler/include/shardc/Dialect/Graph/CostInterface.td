//===- CostInterface.td - what an op costs: arithmetic and memory traffic ---------------===//
#ifndef SHARDC_DIALECT_GRAPH_COSTINTERFACE_TD
#define SHARDC_DIALECT_GRAPH_COSTINTERFACE_TD

include "mlir/IR/OpBase.td"

def Graph_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::shardc::graph";
  let description = [{
    What one run of the op costs on one device, on the types it has (a partitioned op's are
    its device's): floating-point operations and the bytes of its operands and results. The
    products (matmul, gemm, conv and their gradients, attention) count their multiply-adds
    exactly (2 per term); an op that only moves or selects data (reshape, slice, concat,
    gather, the collectives, ...) counts none (the Graph_NoArithmetic trait); every other op
    one per element of its largest operand or result, an estimate for work whose time the
    memory traffic decides. The plan reports the sum (Program.planned_flops); the pipeline
    cuts and the cost model weigh ops by it (OpCost.h).
  }];
  let methods = [
    InterfaceMethod<"Floating-point operations of one run of the op.",
      "uint64_t", "getFlops", (ins), [{}],
      [{ return ::shardc::graph::elementwiseFlops($_op); }]>,
    InterfaceMethod<"Bytes the op reads and writes: its operands' and results' sizes.",
      "uint64_t", "getBytesAccessed", (ins), [{}],
      [{ return ::shardc::graph::operandAndResultBytes($_op); }]>,
  ];
}

// Trait list entry: every graph op (Graph_Op) has the interface with its defaults; an op that
// counts its own FLOPs (a product) lists Graph_CostWith<["getFlops"]> instead (OpCost.cpp).
class Graph_CostWith<list<string> methods> :
    DeclareOpInterfaceMethods<Graph_CostOpInterface, methods>;
def Graph_Costed : Graph_CostWith<[]>;

#endif
