//===- Passes.td - shardc passes ---------------------------------------------------------===//
#ifndef SHARDC_PASSES_TD
#define SHARDC_PASSES_TD

include "mlir/Pass/PassBase.td"

def FoldConstants : Pass<"shardc-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluate every op whose operands are all constants";
  let description = [{
    Static shapes make shape computations constant: `graph.shape`, `graph.range`,
    `graph.constant_of_shape`, and any op whose operands are all `graph.constant` are
    evaluated at compile time (through the runtime's own CPU kernels, so the folded value is
    exactly what the runtime would compute) and replaced by `graph.constant`. Identities,
    no-op reshapes and inference-mode dropout are forwarded. Ops left without users are erased.

    Before:
    ```mlir
    %s = graph.shape %x {end = 2 : i64, start = 0 : i64} : (tensor<2x8xf32>) -> tensor<2xi64>
    %c = graph.constant dense<1> : tensor<1xi64>
    %i = graph.gather %s, %c {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
    ```
    After:
    ```mlir
    %i = graph.constant dense<8> : tensor<1xi64>
    ```
  }];
  let dependentDialects = ["shardc::graph::GraphDialect"];
}

def PlanMemory : Pass<"shardc-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Assign static arena offsets from buffer liveness";
  let description = [{
    Every graph input and op result gets a byte offset in one arena, shared by buffers whose
    lifetimes (first write to last read, in op order) do not overlap; graph outputs live to
    the end. Constants and parameters live in the separate weights region and get none.
    Results are recorded as `shardc.offsets` on each op (one per result), `shardc.offset`
    on graph-input arguments and `shardc.arena_bytes` (the planned peak) on the function.

    After:
    ```mlir
    func.func @forward(%x: tensor<4xf32> {graph.input = "x", shardc.offset = 0 : i64})
        -> (tensor<4xf32> {graph.output = "y"}) attributes {shardc.arena_bytes = 128 : i64} {
      %0 = graph.exp %x {shardc.offsets = array<i64: 64>} : tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    ```
    Fails on a tensor without a static shape.
  }];
}

#endif
