//===- ShardingPasses.td - shardc passes: sharding ---------------------------------------===//
//
// Sharding (docs/architecture.md, "Sharding"): rules per op, propagation, partitioning
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SHARDING_SHARDINGPASSES_TD
#define SHARDC_PASSES_SHARDING_SHARDINGPASSES_TD

include "mlir/Pass/PassBase.td"

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

def RowLocalGather : Pass<"shardc-row-local-gather", "mlir::ModuleOp"> {
  let summary = "Write a gather of each batch row's own position in the flattened batch as a "
                "masked sum over that row";
  let description = [{
    Pooling at a position computed per row (CLIP's text tower takes each row's hidden state at
    its end-of-text token: `h[arange(B), ids.argmax(-1)]`) exports as a gather from the
    flattened `[B*S, ...]` states at `argmax + [0, S, 2S, ...]`. Its indices may point
    anywhere as far as the gather's rule knows, so the batch would have to be whole there.
    But an arg_max over an axis of size S lies in [0, S), so row b reads only its own rows
    [b*S, (b+1)*S): the same values are `sum_s where(argmax == s, h[b, s], 0)`, elementwise
    along the batch and exact (one term per row is not zero). shardc runs it before building
    the training step of a sharded or microbatched compile; only that pattern is rewritten.

    Before:
    ```mlir
    %f = graph.flatten %h : (tensor<2x16x64xf32>) -> tensor<32x64xf32>
    %i = graph.add %argmax, %offsets : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>  // [0, 16]
    %p = graph.gather %f, %i {axis = 0 : i64} : (tensor<32x64xf32>, tensor<2xi64>) -> tensor<2x64xf32>
    ```
    After:
    ```mlir
    %m = graph.equal (graph.reshape %argmax : tensor<2x1xi64>), dense<[[0, 1, ..., 15]]>
    %w = graph.where (graph.reshape %m : tensor<2x16x1xi1>), %h, dense<0.0>
    %p = graph.reduce_sum %w {axes = array<i64: 1>, keepdims = false} -> tensor<2x64xf32>
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

#endif
