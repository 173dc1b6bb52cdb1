//===- LoweringPasses.td - shardc passes: lowering ---------------------------------------===//
//
// The last passes before the program is emitted: constant folding, large one-value constants
// filled at run time, and the memory plan
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_LOWERING_LOWERINGPASSES_TD
#define SHARDC_PASSES_LOWERING_LOWERINGPASSES_TD

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

def FillLargeSplats : Pass<"shardc-fill-large-splats", "mlir::func::FuncOp"> {
  let summary = "Compute large one-value constants at run time instead of storing them";
  let description = [{
    A constant holding one value repeated (a `ConstantOfShape`, an inference dropout's mask)
    costs one element in the IR but its whole size in the weights file, where the program
    stores constants expanded, once per rank. Each such constant larger than 64 KiB
    becomes, before each op that reads it, a one-element constant broadcast by
    `graph.expand`: the `expand` kernel fills an arena buffer that the memory plan places and
    frees after that op, like any activation. The filled bytes are counted in the planned
    peak instead of the weights, and no compile step ever materialises them.

    Before:
    ```mlir
    %c = graph.constant dense<1.0> : tensor<8192x1024xf32>
    %s = graph.reduce_sum %c {axes = array<i64: 0, 1>, keepdims = false}
        : (tensor<8192x1024xf32>) -> tensor<f32>
    ```
    After:
    ```mlir
    %v = graph.constant dense<1.0> : tensor<f32>
    %c = graph.expand %v : (tensor<f32>) -> tensor<8192x1024xf32>
    %s = graph.reduce_sum %c {axes = array<i64: 0, 1>, keepdims = false}
        : (tensor<8192x1024xf32>) -> tensor<f32>
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

    It also sizes the workspace, the one per-rank scratch buffer the kernels take their
    data-sized temporaries from: each op whose kernel needs scratch gets `shardc.workspace`
    (bytes, from the kernel's workspace-size function), the function
    `shardc.workspace_bytes` (the largest need, 0 when no kernel needs any).

    After:
    ```mlir
    func.func @forward(%x: tensor<4x8xf32> {graph.input = "x", shardc.offset = 0 : i64})
        -> (tensor<4xf32> {graph.output = "y"})
        attributes {shardc.arena_bytes = 256 : i64, shardc.workspace_bytes = 32 : i64} {
      %0 = graph.exp %x {shardc.offsets = array<i64: 128>} : tensor<4x8xf32>
      %1 = graph.reduce_sum %0 {axes = array<i64: 1>, keepdims = false,
          shardc.offsets = array<i64: 0>, shardc.workspace = 32 : i64}
          : (tensor<4x8xf32>) -> tensor<4xf32>
      return %1 : tensor<4xf32>
    }
    ```
    Training state comes back under its input's name. A result returned by an op after the
    loss is final (hoist-loss), when no later op reads the input (or the op's kernel updates
    that operand in place, as the optimizer updates do), takes its input's bytes: the pair
    is one buffer live from before the first op to after the last, and the result carries
    `shardc.in_place` (the program's Binding.in_place). Such state stays in the arena between
    steps instead of being copied out and fed back.

    ```mlir
    func.func @train_step(%w: tensor<4xf32> {graph.param = "w", shardc.offset = 0 : i64}, ...)
        -> (tensor<f32> {graph.output = "loss"},
            tensor<4xf32> {graph.param = "w", shardc.in_place}, ...) {
      ...
      %new:3 = graph.adamw_update %w, %g, ... {shardc.offsets = array<i64: 0, 64, 128>}
    ```

    Collectives (all_reduce, reduce_scatter, all_gather, all_to_all) with other ops between them
    and the first op that reads their results become asynchronous (`overlap-collectives`, on by
    default): the runtime runs each on the rank's communication thread while the ops up to that
    first reader run, so a gradient bucket's reduction overlaps the rest of the backward pass.
    Such a collective gets `shardc.async`; its operands stay live (their bytes unused by
    anything else) until that first reader, and its scratch comes from a second workspace,
    `shardc.comm_workspace_bytes` on the function (the largest need of the asynchronous
    collectives), so that it never shares scratch with the kernels running meanwhile.

    Fails on a tensor without a static shape, or an op without a runtime kernel.
  }];
  let options = [
    Option<"overlapCollectives", "overlap-collectives", "bool", /*default=*/"true",
           "Run collectives asynchronously, overlapping the ops before their first reader">,
  ];
}

#endif
