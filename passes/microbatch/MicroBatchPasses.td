//===- MicroBatchPasses.td - shardc passes: the microbatch loop --------------------------===//
//
// The microbatch loop: gradient accumulation over K microbatches (--micro-batches)
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_MICROBATCH_MICROBATCHPASSES_TD
#define SHARDC_PASSES_MICROBATCH_MICROBATCHPASSES_TD

include "mlir/Pass/PassBase.td"

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

#endif
