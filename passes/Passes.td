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
    Fails on a tensor without a static shape, or an op without a runtime kernel.
  }];
}

def BuildTrainStep : Pass<"shardc-build-train-step", "mlir::ModuleOp"> {
  let summary = "Replace @forward by @train_step: forward, gradients, clipping, optimizer update";
  let description = [{
    The loss is @forward's first scalar f32 result. Reverse-mode gradients are built from each
    op's DifferentiableOpInterface rule (fan-out is summed, broadcasting is undone by sums);
    trained parameters are the f32 parameters the loss depends on that pass the name filters.
    The step is functional: parameters, optimizer state (`graph.state`), the step count
    (`graph.step`, i64) and the learning rate (`graph.lr`, a runtime input so schedules can
    change it) come in; the loss, updated parameters and state and step + 1 come out.

    Before:
    ```mlir
    func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"},
                       %w: tensor<3x2xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"})
    ```
    After (AdamW):
    ```mlir
    func.func @train_step(%x: ..., %w: ..., %m: tensor<3x2xf32> {graph.state = "w.exp_avg"},
                          %v: tensor<3x2xf32> {graph.state = "w.exp_avg_sq"},
                          %step: tensor<i64> {graph.step}, %lr: tensor<f32> {graph.lr})
        -> (tensor<f32> {graph.output = "loss"}, tensor<3x2xf32> {graph.param = "w"},
            tensor<3x2xf32> {graph.state = "w.exp_avg"}, ..., tensor<i64> {graph.step})
    ```
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"", "adamw or sgd">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", "-1.0",
           "weight decay (default: 0.01 for adamw, 0 for sgd, as in PyTorch)">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"gradClip", "grad-clip", "double", "0.0",
           "clip the global gradient norm to this value (0: no clipping)">,
    Option<"freeze", "freeze", "std::string", "\"\"", "regex: parameters not to train">,
    Option<"trainable", "trainable", "std::string", "\"\"",
           "regex: train only the matching parameters">,
  ];
  let dependentDialects = ["shardc::graph::GraphDialect", "mlir::func::FuncDialect"];
}

#endif
