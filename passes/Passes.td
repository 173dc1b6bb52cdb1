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

def FuseAttention : Pass<"shardc-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Replace scaled dot-product attention chains with graph.attention (--fuse-attention)";
  let description = [{
    Runs on the imported forward function, before the training step is built. Walking back
    from each Softmax over the last axis whose only reader is the left operand of a MatMul
    with V, it matches masks (Add of a float mask; Where with a -inf, or after the scales a
    finite <= -2^100, constant fill), scales (Mul or Div by a positive constant scalar) and
    the MatMul Q·Kᵀ that starts the chain, every intermediate read once. The chain becomes one
    graph.attention op with the masks summed into one f32 tensor of their broadcast shape;
    its gradient (graph.attention_grad) recomputes the probabilities, so no S x Sk tensor is
    kept for the backward pass. Chains with anything else in them (dropout, casts, a mask that
    depends on a trained parameter) stay as they are. A mask whose value is known at compile
    time (constants; frozen buffers when the driver gives their values) and hides exactly the
    causal rule's keys becomes the op's causal flag (`causal = true`, no mask operand).

    Before:
    ```mlir
    %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : ...
    %s = graph.matmul %q, %kt : (tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>) -> ...
    %c = graph.constant dense<2.500000e-01> : tensor<f32>
    %t = graph.mul %s, %c : ...
    %m = graph.where %cond, %ninf, %t : (tensor<1x1x16x16xi1>, tensor<f32>, ...) -> ...
    %p = graph.softmax %m {axis = 3 : i64} : tensor<2x2x16x16xf32>
    %o = graph.matmul %p, %v : ...
    ```
    After:
    ```mlir
    %mask = graph.where %cond, %ninf, %zero : (tensor<1x1x16x16xi1>, ...) -> tensor<1x1x16x16xf32>
    %k = graph.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : ...
    %o, %lse = graph.attention %q, %k, %v, %mask {causal = false, scale = 2.500000e-01 : f32}
    ```
  }];
}

def BF16Matmuls : Pass<"shardc-bf16-matmuls", "mlir::func::FuncOp"> {
  let summary = "Round every matrix product's operands and result to bf16 or f16 (--precision)";
  let description = [{
    Each f32 operand of `graph.matmul` and `graph.gemm` (activations, weights, Gemm's bias)
    is replaced by its value rounded to bf16, an f32 -> bf16 -> f32 cast pair made once per
    value (a weight read by several products is cast once), and every reader of the product
    reads it rounded the same way. The products accumulate in f32, as a bf16 GEMM with an f32
    accumulator does; LayerNorm, softmax, the loss and the optimizer stay f32, and trained
    parameters stay f32 master weights. Runs on the forward function before the training
    step is built: the casts' gradient rule then rounds the gradients that flow back through
    them to bf16, as PyTorch's autograd does for `.to(torch.bfloat16)`.

    Before:
    ```mlir
    %y = graph.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %z = graph.relu %y : tensor<2x3xf32>
    ```
    After:
    ```mlir
    %xh = graph.cast %x {to = bf16} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
    %xr = graph.cast %xh {to = f32} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
    %wh = graph.cast %w {to = bf16} : (tensor<4x3xf32>) -> tensor<4x3xbf16>
    %wr = graph.cast %wh {to = f32} : (tensor<4x3xbf16>) -> tensor<4x3xf32>
    %y = graph.matmul %xr, %wr : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %yh = graph.cast %y {to = bf16} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
    %yr = graph.cast %yh {to = f32} : (tensor<2x3xbf16>) -> tensor<2x3xf32>
    %z = graph.relu %yr : tensor<2x3xf32>
    ```
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", "\"bf16\"",
           "the 16-bit type the products round to: bf16, or f16 (--precision fp16)">,
  ];
}

def HalfStorage : Pass<"shardc-half-storage", "mlir::func::FuncOp"> {
  let summary = "Store the 16-bit values of --precision bf16/fp16 in 16 bits";
  let description = [{
    shardc-bf16-matmuls writes the precision policy as cast pairs (f32 -> bf16 -> f32) around
    every matrix product, so that autodiff and the sharding passes see ordinary f32 ops. This
    pass, run on a rank's training step after them, makes the 16-bit values real storage
    without changing a bit of the result:
      * a rounding cast (f32 -> 16-bit) moves above the data-movement ops (reshape,
        transpose, flatten, squeeze, unsqueeze, identity) and the ZeRO-3 `graph.all_gather`
        whose every reader rounds their result, so a weight is rounded once as its flat shard
        and the all-gather and transposes move 16-bit elements (half the bytes);
      * a widening cast (16-bit -> f32) moves below the data-movement ops that read it;
      * a matrix product reads the 16-bit values of its widened operands directly, and
        produces its result in 16 bits when every reader rounds it (not, for instance, a
        partial sum that a tensor-parallel all-reduce adds up first).
    Casts and data movement commute exactly, and a product's kernel widens 16-bit operands,
    accumulates in f32 and rounds its result to nearest-even: the f32 product of the rounded
    operands, rounded, which is what the cast pairs computed. With `reduce-dtype=bf16`
    (--reduce-dtype bf16) the gradients' data-parallel reductions (`graph.all_reduce`,
    `graph.reduce_scatter`) also run in the 16-bit type: their operands are rounded before
    them and widened after, half the bytes on the wire, each partial sum rounded.

    Before:
    ```mlir
    %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %wh = graph.cast %wt {to = bf16} : (tensor<4x3xf32>) -> tensor<4x3xbf16>
    %wr = graph.cast %wh {to = f32} : (tensor<4x3xbf16>) -> tensor<4x3xf32>
    %y = graph.matmul %xr, %wr : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %yh = graph.cast %y {to = bf16} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
    %yr = graph.cast %yh {to = f32} : (tensor<2x3xbf16>) -> tensor<2x3xf32>
    ```
    After (with %xh the 16-bit value %xr widened):
    ```mlir
    %wh = graph.cast %w {to = bf16} : (tensor<3x4xf32>) -> tensor<3x4xbf16>
    %wt = graph.transpose %wh {perm = array<i64: 1, 0>} : (tensor<3x4xbf16>) -> tensor<4x3xbf16>
    %y = graph.matmul %xh, %wt : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xbf16>
    %yr = graph.cast %y {to = f32} : (tensor<2x3xbf16>) -> tensor<2x3xf32>
    ```
  }];
  let options = [
    Option<"reduceDtype", "reduce-dtype", "std::string", "\"f32\"",
           "the element type of the gradients' data-parallel reductions: f32, bf16 or f16">,
  ];
}

def Remat : Pass<"shardc-remat", "mlir::func::FuncOp"> {
  let summary = "Recompute forward values in the backward pass instead of keeping them (--remat)";
  let description = [{
    Runs on the training step (after shardc-build-train-step). The backward pass reads values
    the forward pass computed; each group of forward ops is computed again, by clones of the
    same ops on the same operands (`/remat` locations), right before the first backward op
    that reads one of the group's values, and the backward pass reads the clones, so the
    originals die after their last forward use. The clones run the same kernels on the same
    inputs: the step's results are bit-identical, dropout included (its mask is keyed on seed,
    step, stream and element). `mode`:
      full       per unit (a repeated module: the node name up to its first component ending
                 in ".N", e.g. "/transformer/h.3"), everything the unit computes: a unit keeps
                 only what it reads from outside (its input, parameters)
      selective  per attention core: a product of two activations (Q K^T) and the ops after
                 it of the same size (scale, mask, softmax, dropout) that another product of
                 two activations reads (the probabilities times V); Q, K and V stay
    `graph.remat` on the function says, per unit or core, the bytes it keeps for the backward
    pass without recomputation, the bytes recomputed and the matrix-product FLOPs added.

    Before (full, one unit "/h.0"):
    ```mlir
    %a = graph.matmul %x, %w loc("/h.0/fc/MatMul")
    %y = graph.tanh %a loc("/h.0/Tanh")
    ... loss ...
    %gy = graph.tanh_grad %dy, %y                 // the backward pass reads %y
    ```
    After:
    ```mlir
    %a = graph.matmul %x, %w loc("/h.0/fc/MatMul")
    %y = graph.tanh %a loc("/h.0/Tanh")
    ... loss ...
    %a2 = graph.matmul %x, %w loc("/h.0/fc/MatMul/remat")
    %y2 = graph.tanh %a2 loc("/h.0/Tanh/remat")
    %gy = graph.tanh_grad %dy, %y2
    ```
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"none\"", "none, full or selective">,
    Option<"units", "units", "int64_t", "-1",
           "only the first N units (forward order) take the mode, the rest the next lighter "
           "one (full -> selective -> none); -1: every unit (--remat auto's per-unit plans)">,
  ];
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

    Collectives (all_reduce, reduce_scatter, all_gather) with other ops between them and the
    first op that reads their results become asynchronous (`overlap-collectives`, on by
    default): the runtime runs each on the rank's communication thread while the ops up to
    that first reader run, so a gradient bucket's reduction overlaps the rest of the backward
    pass. Such a collective gets `shardc.async`; its operands stay live (their bytes unused by
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

//===-------------------------------------------------------------------------------------===//
// Sharding (docs/architecture.md, "Sharding"): rules per op, propagation, partitioning
//===-------------------------------------------------------------------------------------===//

def DecomposeMeanLoss : Pass<"shardc-decompose-mean-loss", "mlir::ModuleOp"> {
  let summary = "Write each mean loss of @forward as its sum divided by the count of its labels";
  let description = [{
    A loss op with reduction "mean" divides by the number of labels it counts (all of them, or
    those not equal to ignore_index). Once the batch is split no device has that number, so
    before the training step is built each such loss (softmax_cross_entropy_loss, nll_loss
    without class weights) becomes its sum divided by the count, computed in the graph: a
    constant, or a sum over the labels that the partitioner turns into an all-reduce. The math
    is unchanged (up to float rounding); so is the gradient, which autodiff derives from it.

    Before:
    ```mlir
    %l, %p = graph.softmax_cross_entropy_loss %s, %y {ignore_index = -100 : i64, reduction = "mean"}
    ```
    After:
    ```mlir
    %l, %p = graph.softmax_cross_entropy_loss %s, %y {ignore_index = -100 : i64, reduction = "sum"}
    %k = graph.reduce_sum (graph.cast (graph.not (graph.equal %y, -100)))  // the labels counted
    %m = graph.div %l, %k : (tensor<f32>, tensor<f32>) -> tensor<f32>
    ```
  }];
  let dependentDialects = ["shardc::graph::GraphDialect"];
}

def SplitGemmBias : Pass<"shardc-split-gemm-bias", "mlir::ModuleOp"> {
  let summary = "Write each Gemm of @forward with a bias as the Gemm without it plus an add";
  let description = [{
    ONNX Gemm adds its bias inside the op (PyTorch's nn.Linear on 2-D inputs exports as one).
    A Gemm whose reduction dimension tensor parallelism splits (a row-parallel layer) leaves
    each device a partial product; the bias must be added once, to the sum, not once per
    device. Written as a separate add, the partitioner all-reduces the partial product before
    it like before any other op that is not linear in a pending sum, so the Gemm's rule no
    longer has to keep the reduction whole. shardc runs it before building the training step
    when the strategy has tp > 1. beta scales the bias first (beta = 1: the bias as it is).

    Before:
    ```mlir
    %y = graph.gemm %x, %w, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
    ```
    After:
    ```mlir
    %p = graph.gemm %x, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
    %y = graph.add %p, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    ```
  }];
  let dependentDialects = ["shardc::graph::GraphDialect"];
}

def PropagateSharding : Pass<"shardc-propagate-sharding", "mlir::ModuleOp"> {
  let summary = "Find the batch from the ops' sharding rules and split it on the dp mesh axis";
  let description = [{
    Links the dimensions of every value of @train_step (else @forward) through each op's
    sharding rule (ShardingRuleOpInterface) into classes that must be split together. The
    batch is the class of a dimension of the first graph input along which rows never interact:
    no op needs it whole (softmax or normalisation axes, concat axes, ...),
    no op lacks a rule, every graph input has exactly one dimension in it and no parameter has
    any. Dimensions are tried in order, so a sequence-first model is split along its batch
    (dim 1); a model with no such dimension is refused, naming the op that mixes each
    candidate. Adds `mesh.mesh @<mesh-name>(shape = ranks)` and records on every value in the
    class the upstream sharding that splits it on mesh axis 0 (`graph.sharding` on arguments,
    `graph.shardings` on ops) and the batch size on the function (`graph.batch_size`).

    With `tp` > 1 the mesh is `mesh.mesh @mesh(shape = ranks x tp)` (axes dp, tp) and the
    tensor-parallel layout is found from the graph alone: every class that is not blocked, not
    the batch, holds a dimension of a trained parameter (and of no constant or frozen
    parameter) and divides by tp is split on mesh axis 1, largest parameters first, unless an
    op has one of its factors in it and another in a class already split on tp (the op would
    compute only the pairs of blocks a device holds). A column-parallel Linear feeding a
    row-parallel one through elementwise ops is one such class (the hidden features), as are
    the heads of separate Q/K/V projections through their Reshape and Transpose; the
    partitioner then all-reduces the row-parallel product's pending sum. LayerNorm axes and
    the model dimension are blocked, so they stay replicated; `graph.tp_layout` on the function
    lists each class considered and what was decided. `shard` overrides it per parameter
    (REGEX=SPEC, SPEC `replicated` or per dimension `{}` / `{tp}`, e.g.
    `fc1\.weight=[ {}, {tp} ]`); an override that cannot be met (a dimension some op needs whole,
    a size tp does not divide, two forced dimensions an op pairs) is an error naming it.

    With `sp` (sequence parallelism, passes/sharding/SequenceParallel.h) the ops between the
    tensor-parallel blocks that compute blocks of one more dimension (chosen from the graph:
    the sequence) carry `graph.sequence_factor` and their values are split on tp along it;
    shardc-partition reduce-scatters the pending sums that enter such regions and all-gathers
    the values that leave them.

    After (ranks = 2):
    ```mlir
    mesh.mesh @dp(shape = 2) {graph.axis_names = ["dp"]}
    func.func @forward(%x: tensor<8x16xf32> {graph.input = "x", graph.sharding = #mesh.shard<@dp, [[0]]>},
                       %w: tensor<16x4xf32> {graph.param = "w"}) -> tensor<f32>
        attributes {graph.batch_size = 8 : i64} {
      %h = graph.matmul %x, %w {graph.shardings = [#mesh.shard<@dp, [[0]]>]} : ...
      %l = graph.reduce_sum %h {axes = array<i64: 0, 1>, keepdims = false} : ...
    ```
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", "1", "devices on the data-parallel mesh axis">,
    Option<"tp", "tp", "int64_t", "1", "devices on the tensor-parallel mesh axis">,
    Option<"sequenceParallel", "sp", "bool", "false",
           "sequence parallelism: also split the activations between the tensor-parallel "
           "blocks on tp, along the dimension that saves most (passes/sharding/"
           "SequenceParallel.h)">,
    ListOption<"shardOverrides", "shard", "std::string",
               "per parameter, REGEX=SPEC: the trained parameters whose name the regex matches "
               "entirely are laid out as SPEC says: 'replicated', or one {} (whole) or {tp} "
               "(split on tp) per dimension, e.g. [{},{tp}]">,
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "microbatches per data-parallel device (shardc-micro-batches): the batch must "
           "split into ranks x micro-batches parts">,
    Option<"meshName", "mesh-name", "std::string", "\"dp\"",
           "symbol of the mesh (a 1-D mesh; with tp > 1 the 2-D mesh is @mesh)">,
  ];
  let dependentDialects = ["shardc::graph::GraphDialect", "mlir::mesh::MeshDialect"];
}

def Partition : Pass<"shardc-partition", "mlir::ModuleOp"> {
  let summary = "Rewrite the sharded function from global to local types (SPMD), with collectives";
  let description = [{
    Every value split on the mesh takes its local type: a dimension in the batch class of
    global size D holds D / batch * local-rows elements (`local-rows`: this device's rows;
    0 means batch / ranks, which must divide). Shapes that ops carry are recomputed with it
    (Reshape and Expand targets are result types, Slice ends, constants: a constant split
    along a dimension must hold the same values in every block). Reductions over a split
    factor leave pending sums (`partial = sum[0]` in the result's sharding); a mean is first
    scaled by local-rows / batch. A pending sum passes through ops that are linear in it and
    is all-reduced (upstream `mesh.all_reduce` on the mesh axis) before any other use. The
    loss and the gradients the optimizer reads stay pending: the data-parallel passes reduce
    them in buckets (or reduce-scatter them for ZeRO).

    After (2 ranks, batch 8):
    ```mlir
    func.func @forward(%x: tensor<4x16xf32> {..., graph.sharding = #mesh.shard<@dp, [[0]]>}, ...) {
      %h = graph.matmul %x, %w {graph.shardings = [#mesh.shard<@dp, [[0]]>]} : (tensor<4x16xf32>, ...) -> tensor<4x4xf32>
      %s = graph.reduce_sum %h {..., graph.shardings = [#mesh.shard<@dp, [], partial = sum[0]>]} : ...
      %r = mesh.all_reduce %s on @dp mesh_axes = [0] : tensor<f32> -> tensor<f32>
      %e = graph.exp %r : tensor<f32>
    ```
  }];
  let options = [
    Option<"localRows", "local-rows", "int64_t", "0",
           "rows of the batch on this device (0: batch / ranks)">,
  ];
  let dependentDialects = ["shardc::graph::GraphDialect", "mlir::mesh::MeshDialect"];
}

//===-------------------------------------------------------------------------------------===//
// Pipeline: the microbatch loop (passes/pipeline)
//===-------------------------------------------------------------------------------------===//

def MicroBatches : Pass<"shardc-micro-batches", "mlir::ModuleOp"> {
  let summary = "Run the device's batch as K microbatches, gradients accumulated (--micro-batches)";
  let description = [{
    Runs after shardc-partition has written @train_step for one microbatch (local-rows = the
    device's rows / K). The ops that depend on a batch input are cloned once per microbatch,
    each clone reading its slice of the inputs (which grow to the device's K microbatches);
    every sum over the batch (a `mesh.all_reduce` on the dp axis, and the loss and gradients,
    pending sums the optimizer reads) first adds the K clones' values in microbatch order.
    Ops that do not depend on the batch run once, just before their first reader; the
    optimizer runs once on the summed gradients. A sum that later ops of the loop read (the
    label count a mean loss divides by) splits the loop into phases: each phase runs for every
    microbatch before the sum, and each op sits in the latest phase its users allow, so a
    microbatch's forward and backward run back to back. Training dropouts key their masks on
    the microbatch's place in the batch (`graph.split_first`). The step computes what it
    computes on the whole batch, up to the order of float sums.

    Before (micro-batches=2, after partition with local-rows = 2):
    ```mlir
    func.func @train_step(%x: tensor<2x4xf32> {graph.input = "x", graph.sharding = #mesh.shard<@dp, [[0]]>}, ...) {
      %h = graph.matmul %x, %w {graph.shardings = [#mesh.shard<@dp, [[0]]>]} : ...
      %l = graph.reduce_sum %h {..., graph.shardings = [#mesh.shard<@dp, [], partial = sum[0]>]} : ...
      %g = graph.matmul %xt, %dh {graph.shardings = [#mesh.shard<@dp, [], partial = sum[0]>]} : ...
      %u:3 = graph.adamw_update %w, %g, %m, %v, %step, %lr : ...
      return %l, %u#0, ...
    ```
    After:
    ```mlir
    func.func @train_step(%x: tensor<4x4xf32> {...}, ...) attributes {graph.micro_batches = 2 : i64} {
      %x0 = graph.slice %x {ends = array<i64: 2, 4>, starts = array<i64: 0, 0>, ...} : ...
      %h0 = graph.matmul %x0, %w ...          // microbatch 0: forward, loss, backward
      %g0 = graph.matmul %xt0, %dh0 ...
      %x1 = graph.slice %x {ends = array<i64: 4, 4>, starts = array<i64: 2, 0>, ...} : ...
      %h1 = graph.matmul %x1, %w ...          // microbatch 1
      %l = graph.add %l0, %l1 ...
      %g1 = graph.matmul %xt1, %dh1 ...
      %g = graph.add %g0, %g1 ...             // accumulated
      %u:3 = graph.adamw_update %w, %g, %m, %v, %step, %lr : ...
    ```
    Refused in one line: no input split along a batch dimension, a batch held in groups
    (strided rows), a collective other than a dp all-reduce on values that depend on the
    batch, or an optimizer input that depends on the batch without being a sum over it.
  }];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", "1", "microbatches per device and step">,
  ];
  let dependentDialects = ["shardc::graph::GraphDialect", "mlir::mesh::MeshDialect"];
}

//===-------------------------------------------------------------------------------------===//
// Data parallelism (docs/architecture.md, "Data parallelism in the IR")
//===-------------------------------------------------------------------------------------===//

def PlaceOnMesh : Pass<"shardc-place-on-mesh", "mlir::ModuleOp"> {
  let summary = "Add the data-parallel mesh and say how each argument of @train_step is laid out";
  let description = [{
    Adds `mesh.mesh @<mesh-name>(shape = ranks)` (upstream mesh dialect; its one axis is
    named "dp" in `graph.axis_names`) and marks @train_step with `graph.mesh` and
    `graph.zero_stage`. Every argument and result gets `graph.sharding`: "batch" for graph
    inputs (each rank holds its rows), "flat_shard" for optimizer state from stage 1 and
    trained parameters at stage 3 (flattened, padded to a multiple of the ranks, split), and
    "replicated" otherwise. The passes that follow (all-reduce-gradients,
    shard-optimizer-state, shard-parameters) carry the layout out.

    After (ranks=4 zero=1):
    ```mlir
    mesh.mesh @dp(shape = 4) {graph.axis_names = ["dp"]}
    func.func @train_step(%x: tensor<2x16xf32> {graph.input = "x", graph.sharding = "batch"},
        %w: tensor<16x4xf32> {graph.param = "w", graph.sharding = "replicated"},
        %m: tensor<16x4xf32> {graph.sharding = "flat_shard", graph.state = "w.exp_avg"}, ...)
        attributes {graph.mesh = @dp, graph.zero_stage = 1 : i64}
    ```
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", "1", "data-parallel ranks (the mesh's size)">,
    Option<"zero", "zero", "int64_t", "0", "ZeRO stage, 0 to 3">,
    Option<"meshName", "mesh-name", "std::string", "\"dp\"", "symbol of the mesh">,
  ];
  let dependentDialects = ["shardc::graph::GraphDialect", "mlir::mesh::MeshDialect"];
}

def AllReduceGradients : Pass<"shardc-all-reduce-gradients", "mlir::func::FuncOp"> {
  let summary = "DP (ZeRO 0): all-reduce gradients in buckets, each as soon as it is final";
  let description = [{
    Gradients are grouped, in the order the backward pass finishes them, into buckets of
    `bucket-mb` MiB; one `graph.all_reduce` per bucket is placed right after the bucket's last
    gradient is computed, so it can overlap the rest of the backward pass. The optimizer (and
    the gradient norm) read the sums. The loss is summed over the ranks (mesh.all_reduce).

    After:
    ```mlir
    %g2 = graph.matmul ...                                     // last gradient of bucket 0
    %r:2 = graph.all_reduce %g2, %g1 on @dp {bucket = 0 : i64}
        : (tensor<4xf32>, tensor<16x4xf32>) -> (tensor<4xf32>, tensor<16x4xf32>)
    ...
    %u:3 = graph.adamw_update %w, %r#1, %m, %v, ...
    %l = mesh.all_reduce %loss on @dp mesh_axes = [0] : tensor<f32> -> tensor<f32>
    ```
  }];
  let options = [
    Option<"bucketMb", "bucket-mb", "double", "25.0", "bucket size in MiB">,
  ];
  let dependentDialects = ["shardc::graph::GraphDialect", "mlir::mesh::MeshDialect"];
}

def ShardOptimizerState : Pass<"shardc-shard-optimizer-state", "mlir::func::FuncOp"> {
  let summary = "ZeRO 1/2: reduce-scatter gradients, update shards, all-gather parameters";
  let description = [{
    Optimizer state arguments become flat shards (`tensor<ceil(numel/ranks)>`,
    `graph.sharding = "flat_shard"`, `graph.global_shape`). Gradients are reduce-scattered in
    buckets (`graph.reduce_scatter`): at stage 2 each bucket right after its last gradient,
    so whole gradients are freed early; at stage 1 after the backward pass. Each rank takes
    its shard of the parameters (`graph.shard_slice`, no communication), updates it with the
    gradient shard (clipped by the global norm: the local norm is squared, summed with
    mesh.all_reduce and rooted), and the updated shards are all-gathered in buckets into the
    whole parameters the step returns.

    After (stage 2, 4 ranks, w: tensor<16x4xf32> so shards of 16):
    ```mlir
    %s:2 = graph.reduce_scatter %gb, %gw on @dp {bucket = 0 : i64}
        : (tensor<4xf32>, tensor<16x4xf32>) -> (tensor<1xf32>, tensor<16xf32>)
    %p:2 = graph.shard_slice %b, %w on @dp : (tensor<4xf32>, tensor<16x4xf32>) -> (tensor<1xf32>, tensor<16xf32>)
    %u:3 = graph.adamw_update %p#1, %s#1, %m, %v, ... : (tensor<16xf32>, ...) -> ...
    %w1:2 = graph.all_gather %u#0, ... on @dp {bucket = 0 : i64} : (tensor<16xf32>, ...) -> (tensor<16x4xf32>, ...)
    ```

    With `master-shards` (--precision bf16/fp16) the f32 parameters are master weights and
    belong with the optimizer state, as in ZeRO's mixed-precision accounting (2Ψ + 2Ψ +
    12Ψ/N at stage 1): the step takes and returns each rank's flat shard of them, updates the
    shard in place, and all-gathers the whole parameters in buckets at its start
    (`parameters/bucketN`), which shardc-half-storage then turns into 16-bit working copies
    gathered from 16-bit shards wherever every reader rounds them. Nothing is gathered after
    the update.
  }];
  let options = [
    Option<"bucketMb", "bucket-mb", "double", "25.0", "bucket size in MiB">,
    Option<"masterShards", "master-shards", "bool", "false",
           "keep only this rank's shard of the f32 parameters (master weights) and gather "
           "the whole ones at the start of the step">,
  ];
  let dependentDialects = ["shardc::graph::GraphDialect", "mlir::mesh::MeshDialect"];
}

def ShardParameters : Pass<"shardc-shard-parameters", "mlir::func::FuncOp"> {
  let summary = "ZeRO 3 / FSDP: sharded parameters, gathered per unit for each use";
  let description = [{
    Trained parameters and their optimizer state become flat shards. Parameters are grouped
    into FSDP units: by `fsdp-unit` (the part of the name the regex matches; parameters it
    does not match form the unit "(rest)"), else automatically (the name up to its first
    numeric component, "h.3", else the owning module, "fc1"). For the forward pass and again
    for the backward pass, each unit's whole parameters come from one `graph.all_gather
    {unit = ...}` placed before the previous unit's first use (prefetch: the next unit is
    gathered while the current one computes) and die after their last use in that pass. With
    microbatches (ops tagged `graph.micro_batch` by shardc-micro-batches) every microbatch's
    forward and backward pass gathers again, so whole parameters never live across the loop.
    Each unit's gradients are reduce-scattered once final; the optimizer updates and returns
    shards.

    After (2 ranks):
    ```mlir
    %f:2 = graph.all_gather %w1, %b1 on @dp {unit = "fc1"} : (tensor<32xf32>, tensor<4xf32>) -> (tensor<16x4xf32>, tensor<8xf32>)
    %h = graph.matmul %x, %f#0 : ...
    ...
    %g:2 = graph.reduce_scatter %dw1, %db1 on @dp {unit = "fc1"} : ...
    ```
  }];
  let options = [
    Option<"fsdpUnit", "fsdp-unit", "std::string", "\"\"",
           "regex: the part of a parameter's name that names its FSDP unit">,
  ];
  let dependentDialects = ["shardc::graph::GraphDialect", "mlir::mesh::MeshDialect"];
}

#endif
