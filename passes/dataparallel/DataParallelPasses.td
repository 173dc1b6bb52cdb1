//===- DataParallelPasses.td - shardc passes: data parallelism ---------------------------===//
//
// Data parallelism and ZeRO (docs/architecture.md, "Sharding", data-parallel passes): the
// mesh and each argument's layout, then the collectives of one ZeRO stage
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_DATAPARALLEL_DATAPARALLELPASSES_TD
#define SHARDC_PASSES_DATAPARALLEL_DATAPARALLELPASSES_TD

include "mlir/Pass/PassBase.td"

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
    Only pending sums over the batch (`partial = sum[0]` from shardc-partition) are reduced: a
    loss or gradient that adds a term of the weights alone to a sum over the batch is already
    whole (the partitioner summed the batch part first) and is every rank's as it is. The ZeRO
    passes likewise take their shard of such a gradient by `graph.shard_slice`, not a
    reduce-scatter.

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
