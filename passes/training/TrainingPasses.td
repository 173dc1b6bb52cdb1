//===- TrainingPasses.td - shardc passes: the training step ------------------------------===//
//
// The training step: built from @forward, its loss computed before the optimizer updates
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_TRAINING_TRAININGPASSES_TD
#define SHARDC_PASSES_TRAINING_TRAININGPASSES_TD

include "mlir/Pass/PassBase.td"

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
    Option<"lossScale", "loss-scale", "std::string", "\"none\"",
           "none, or dynamic: GradScaler's dynamic loss scaling (state loss_scale.*; a step "
           "whose gradients are not finite is skipped)">,
    Option<"lossScaleInit", "loss-scale-init", "double", "65536.0",
           "dynamic loss scaling: the initial scale">,
    Option<"lossScaleGrowthInterval", "loss-scale-growth-interval", "int64_t", "2000",
           "dynamic loss scaling: finite steps in a row that double the scale">,
  ];
  let dependentDialects = ["shardc::graph::GraphDialect", "mlir::func::FuncDialect"];
}

def LoraAdapters : Pass<"shardc-lora-adapters", "mlir::ModuleOp"> {
  let summary = "Add LoRA adapters beside the targeted weights and freeze the base (--lora)";
  let description = [{
    Runs on the imported @forward, before the training step is built. Each MatMul or Gemm
    whose weight (read directly, through a 2-D transpose, or as Gemm's b with or without
    trans_b) is a trained f32 parameter of a module matching `targets` (a regex matched
    against the end of the module path, the parameter's name without ".weight", as PEFT
    matches target modules; default q_proj|v_proj|c_attn|query|value) gets the parameters
    MODULE.lora_A.weight [r, in] and MODULE.lora_B.weight [out, r] (PEFT's names and layouts),
    and its result y becomes y + ((x·Aᵀ)·Bᵀ)·(alpha / r) (alpha / sqrt(r) with rslora), x
    being the product's input, through a training-mode graph.dropout of its own Philox stream
    when `dropout` is not 0. Every other parameter gets graph.not_trainable, except biases
    (names ending in ".bias", with train-bias) and normalisation weights (modules named
    *norm* or ln_*, with train-norm). The driver gives the adapters their initial values
    (PEFT's: A Kaiming-uniform, B zeros, or a PEFT adapter file). Errors: no product's weight
    matches (the module names are listed), r larger than a targeted weight's in or out.

    Before:
    ```mlir
    func.func @forward(%x: tensor<4x8xf32> {graph.input = "x"},
                       %w: tensor<6x8xf32> {graph.param = "attn.q_proj.weight"}) -> ... {
      %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<6x8xf32>) -> tensor<8x6xf32>
      %y = graph.matmul %x, %wt : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
    ```
    After (r = 2, alpha = 4):
    ```mlir
    func.func @forward(%x: ..., %w: tensor<6x8xf32> {graph.not_trainable = "...",
                       graph.param = "attn.q_proj.weight"},
                       %a: tensor<2x8xf32> {graph.param = "attn.q_proj.lora_A.weight"},
                       %b: tensor<6x2xf32> {graph.param = "attn.q_proj.lora_B.weight"}) -> ... {
      %y = graph.matmul %x, %wt : ...
      %at = graph.transpose %a {perm = array<i64: 1, 0>} : (tensor<2x8xf32>) -> tensor<8x2xf32>
      %d = graph.matmul %x, %at : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
      %bt = graph.transpose %b {perm = array<i64: 1, 0>} : (tensor<6x2xf32>) -> tensor<2x6xf32>
      %u = graph.matmul %d, %bt : (tensor<4x2xf32>, tensor<2x6xf32>) -> tensor<4x6xf32>
      %s = graph.constant dense<2.000000e+00> : tensor<f32>
      %m = graph.mul %u, %s : ...
      %z = graph.add %y, %m : ...   // replaces %y
    ```
  }];
  let options = [
    Option<"rank", "r", "int64_t", "8", "the adapters' rank">,
    Option<"alpha", "alpha", "double", "8.0", "the scale's numerator (scale = alpha / r)">,
    Option<"rslora", "rslora", "bool", "false", "scale = alpha / sqrt(r) (rank-stabilised)">,
    Option<"dropout", "dropout", "double", "0.0",
           "dropout ratio on each adapter's input (a training-mode graph.dropout per product)">,
    Option<"targets", "targets", "std::string", "\"\"",
           "regex matched against the end of each product weight's module path (default: "
           "PEFT's usual attention targets)">,
    Option<"trainBias", "train-bias", "bool", "false", "keep training the biases">,
    Option<"trainNorm", "train-norm", "bool", "false",
           "keep training the normalisation weights">,
  ];
  let dependentDialects = ["shardc::graph::GraphDialect", "mlir::func::FuncDialect"];
}

def QuantizeBase : Pass<"shardc-quantize-base", "mlir::ModuleOp"> {
  let summary = "Store the frozen base's product weights in fewer bits (--base-dtype)";
  let description = [{
    Runs on the imported @forward, after shardc-lora-adapters. A parameter is quantized when
    it is a 2-D f32 parameter that is frozen (graph.not_trainable; with `all-parameters`, as
    --mode forward has it, any parameter), every use of it is the weight of a product
    (graph.matmul's rhs on an input of rank >= 2, directly or through a [1, 0] transpose, or
    graph.gemm's b without trans_a, with alpha 1 and beta 1), and its module path (the name
    without ".weight") does not match `keep` at its end (default lm_head, the output
    projection transformers keeps in full precision). It is replaced by the parameters NAME.bf16
    (bf16 [out, in]), NAME.int8 (i8 [out, in]) and NAME.absmax (f32 [out]), or NAME.nf4 (ui8
    [out * in / 2]) and NAME.absmax (f32 [out * in / 64]), stored as [out, in] (nn.Linear's
    layout; a [in, out] weight is transposed), frozen, and each of its products by a
    graph.quantized_matmul (plus the Gemm's bias). The driver writes their values
    (runtime/support/quantized_weights.h). Errors: nf4 on a weight whose element count is
    not a multiple of 64; nothing to quantize.

    Before:
    ```mlir
    func.func @forward(%x: tensor<4x128xf32> {graph.input = "x"},
                       %w: tensor<64x128xf32> {graph.not_trainable = "...",
                                               graph.param = "fc.weight"}) -> ... {
      %wt = graph.transpose %w {perm = array<i64: 1, 0>} : ...
      %y = graph.matmul %x, %wt : (tensor<4x128xf32>, tensor<128x64xf32>) -> tensor<4x64xf32>
    ```
    After (format nf4):
    ```mlir
    func.func @forward(%x: ..., %q: tensor<4096xui8> {graph.not_trainable = "...",
                                    graph.param = "fc.weight.nf4"},
                       %s: tensor<128xf32> {graph.not_trainable = "...",
                                            graph.param = "fc.weight.absmax"}) -> ... {
      %y = graph.quantized_matmul %x, %q, %s {cols = 128, format = "nf4", rows = 64} : ...
    ```
  }];
  let options = [
    Option<"format", "format", "std::string", "\"nf4\"", "bf16, int8 or nf4">,
    Option<"keep", "keep", "std::string", "\"lm_head\"",
           "regex of module paths (matched at their end) whose weights stay f32">,
    Option<"allParameters", "all-parameters", "bool", "false",
           "quantize trained parameters too (--mode forward: nothing is trained)">,
  ];
  let dependentDialects = ["shardc::graph::GraphDialect", "mlir::func::FuncDialect"];
}

def HoistLoss : Pass<"shardc-hoist-loss", "mlir::func::FuncOp"> {
  let summary = "Compute the training step's loss before the optimizer updates";
  let description = [{
    Moves the ops computing the result named "loss" (its defining op and, recursively, those
    of its operands) that come after the first optimizer update to just after the latest
    definition of their operands; those already before it stay (a microbatch loop's forward
    passes keep their places). A data-parallel step averages the loss across ranks with an all-reduce the
    partitioner appends at the end; hoisted, it runs before the optimizer updates, so that the
    loss is final before the first update of state kept in place (plan-memory) and a runtime
    can stop a step whose loss is not finite with its state unchanged. Every rank runs the same
    program, so the collectives keep one order on all of them. Functions without a "loss"
    result are left alone.

    Before:
    ```mlir
    %loss = graph.div %sum, %count : ...
    %p:3 = graph.adamw_update %w, %g, %m, %v, %step, %lr : ...
    %avg = mesh.all_reduce %loss on @dp mesh_axes = [0] : tensor<f32> -> tensor<f32>
    return %avg, %p#0, ... {loss first}
    ```
    After:
    ```mlir
    %loss = graph.div %sum, %count : ...
    %avg = mesh.all_reduce %loss on @dp mesh_axes = [0] : tensor<f32> -> tensor<f32>
    %p:3 = graph.adamw_update %w, %g, %m, %v, %step, %lr : ...
    return %avg, %p#0, ...
    ```
  }];
}

#endif
