//===- PipelinePasses.td - shardc passes: pipeline stages --------------------------------===//
//
// Pipeline parallelism (--strategy pp=N): the forward pass cut into stages by cost, then each
// stage's program with the transfers between stages placed by the schedule
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_PIPELINE_PIPELINEPASSES_TD
#define SHARDC_PASSES_PIPELINE_PIPELINEPASSES_TD

include "mlir/Pass/PassBase.td"

def AssignStages : Pass<"shardc-assign-stages", "mlir::ModuleOp"> {
  let summary = "Cut @forward into pipeline stages between repeated layers, balanced by cost";
  let description = [{
    Runs on @forward, before shardc-build-train-step (whose gradient ops inherit the stage of
    the op they differentiate). The repeated layers (ModuleUnit.h: node names with a ".N"
    component, in the order they first appear) are split into `stages` contiguous runs that
    minimise the largest stage's FLOPs (CostOpInterface), ties going to the cuts with the
    fewest bytes crossing; the ops before the first layer count towards stage 0, those after
    the last towards the last stage. `cuts` overrides the choice: stage k (k >= 1) starts at
    the first layer whose name starts with the k-th prefix. An op outside any layer takes the
    stage of its latest operand (the final norm, the head, the loss) or, reading only inputs,
    parameters and constants, the earliest stage that reads it (the embedding, the label
    counts); no op runs on an earlier stage than an operand, so values cross cuts forwards.
    Sets `graph.stage` on every op and `graph.pipeline_stages` (one line per stage) on
    @forward.

    Before (stages=2):
    ```mlir
    func.func @forward(%x: ..., %w0: ..., %w1: ...) {
      %h0 = graph.matmul %x, %w0 loc("/h.0/MatMul") : ...
      %h1 = graph.matmul %h0, %w1 loc("/h.1/MatMul") : ...
      %l = graph.reduce_sum %h1 loc("/loss") : ...
    ```
    After:
    ```mlir
      %h0 = graph.matmul %x, %w0 {graph.stage = 0 : i64} loc("/h.0/MatMul") : ...
      %h1 = graph.matmul %h0, %w1 {graph.stage = 1 : i64} loc("/h.1/MatMul") : ...
      %l = graph.reduce_sum %h1 {graph.stage = 1 : i64} loc("/loss") : ...
    ```
    Refused in one line: fewer layers than stages, a prefix that starts no layer or prefixes
    out of order, or a number of prefixes other than stages - 1.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "1", "pipeline stages">,
    Option<"virtualStages", "virtual-stages", "int64_t", "1",
           "model chunks per rank (interleaved; stages counts them all): the repeated layers "
           "must divide by it">,
    ListOption<"cuts", "cuts", "std::string",
               "node-name prefixes: stage k starts at the first layer named with the k-th">,
  ];
  let dependentDialects = ["shardc::graph::GraphDialect"];
}

def SplitStages : Pass<"shardc-split-stages", "mlir::ModuleOp"> {
  let summary = "Keep one pipeline stage of @train_step, its transfers placed by the schedule";
  let description = [{
    Runs after shardc-micro-batches (the step holds each microbatch's forward and backward
    ops, `graph.micro_batch`) on a step whose ops carry `graph.stage`; an op without one
    (made by a later pass) takes its latest operand's stage, else its earliest user's. Keeps
    the ops of stage `stage` of `stages`, in the order the schedule gives (naive, gpipe, 1f1b,
    interleaved, zb-h1; PipelineSchedule.h): per microbatch a forward step F and a backward
    step B (zb-h1 splits off W, the backward ops no transfer waits for; interleaved runs
    `virtual-stages` chunks per rank, virtual stage q on rank q % stages). Values made
    on one stage and read on another cross each cut between them as `graph.send_recv` ops on
    a new `pp` axis of the mesh, one op per boundary between two steps (what the step before
    sends and the step after receives, so two stages that send to each other in 1F1B's steady
    state cannot deadlock); a value read two stages on is passed along by the stages between.
    Constants and what is computed from constants and non-trained inputs alone are computed
    on every stage that reads them. The loss (and every other graph output) is a sum over
    the pp axis of the last stage's value and zeros; a gradient norm is each stage's squared
    norm summed over pp. Parameters, optimizer state and inputs the stage does not read leave
    its signature. Records `graph.pipeline_schedule` (the schedule's steps per stage, its
    predicted idle fraction), `graph.pipeline_cuts` (the values crossing each cut) and
    `graph.pipeline_trace` (the predicted timeline as a Chrome trace) on the function, and
    `graph.pipeline_step` on each kept op of a step. The schedule is simulated as the runtime
    runs its transfers (rendezvous, and sends on the communication thread); where the ranks
    would wait on each other's sends (interleaved with m > p) and posted sends finish, every
    `send_recv` is marked `posted` and the plan says so; one that cannot run even so is
    refused in one line naming where each stage waits.

    Before (stages=2, stage=1, micro-batches 1):
    ```mlir
    func.func @train_step(%x: ... {graph.input = "x"}, %w0: ..., %w1: ...) {
      %h0 = graph.matmul %x, %w0 {graph.stage = 0 : i64, graph.micro_batch = 0 : i64}
      %h1 = graph.matmul %h0, %w1 {graph.stage = 1 : i64, graph.micro_batch = 0 : i64}
      ...
      %dh0 = graph.matmul %dh1, %w1t {graph.stage = 1 : i64, graph.micro_batch = 0 : i64}
      %dw0 = graph.matmul %xt, %dh0 {graph.stage = 0 : i64, graph.micro_batch = 0 : i64}
    ```
    After:
    ```mlir
    func.func @train_step(%w1: ...) {
      %h0 = graph.send_recv on @mesh {mesh_axes = array<i16: 1>, recv_from = 0 : i64} : () -> ...
      %h1 = graph.matmul %h0, %w1 ...
      %dh0 = graph.matmul %dh1, %w1t ...
      graph.send_recv %dh0 on @mesh {mesh_axes = array<i16: 1>, send_to = 0 : i64} : (...) -> ()
    ```
    Refused in one line: a value of no microbatch (a sum over them) read on another stage
    than its own, a sum over microbatches read inside the loop, dynamic loss scaling.
  }];
  let options = [
    Option<"stage", "stage", "int64_t", "0", "the stage to keep">,
    Option<"stages", "stages", "int64_t", "1", "pipeline stages">,
    Option<"schedule", "schedule", "std::string", "\"1f1b\"",
           "naive, gpipe, 1f1b, interleaved or zb-h1">,
    Option<"virtualStages", "virtual-stages", "int64_t", "1",
           "model chunks per rank (interleaved): ops carry virtual stages 0 .. stages·v - 1, "
           "virtual stage q on rank q % stages">,
  ];
  let dependentDialects = ["shardc::graph::GraphDialect", "mlir::mesh::MeshDialect"];
}

#endif
