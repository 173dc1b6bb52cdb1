//===- GraphCollectiveOps.td - coalesced collectives over a device mesh -----*- tablegen -*-===//
//
// The data-parallel passes (passes/dataparallel: AllReduceGradients, ShardOptimizerState,
// ShardParameters) make every collective of a training step explicit with these ops. They
// complement the upstream `mesh` dialect, whose mesh.mesh names the device mesh they run on and
// whose mesh.all_reduce sums single scalars (the loss, the squared gradient norm). What upstream
// lacks, and why these exist (docs/architecture.md, "Data parallelism in the IR"):
//   * coalescing: one op moves a whole bucket or FSDP unit of tensors in one transfer, where
//     every upstream collective takes one tensor;
//   * ZeRO's flat shards: a tensor is flattened and zero-padded to a multiple of the number of
//     ranks N, and rank r owns elements [r*k, (r+1)*k) with k = ceil(numel / N); upstream
//     shardings split dimensions and need them divisible by the mesh size.
// Every op names its mesh and the mesh axes it runs over (`mesh_axes`; absent on a 1-D mesh,
// the data-parallel axis, as the data-parallel passes use them) and is not Pure: each rank must
// issue the same collectives in the same order, so none may be moved or removed.
//
//===-------------------------------------------------------------------------------------===//

#ifndef SHARDC_DIALECT_GRAPH_GRAPHCOLLECTIVEOPS_TD
#define SHARDC_DIALECT_GRAPH_GRAPHCOLLECTIVEOPS_TD

include "mlir/IR/SymbolInterfaces.td"

// The collectives that sum take floats; those that only move data (all_gather, all_to_all,
// shard_slice)
// take any tensor the runtime holds: resharding gathers integer indices and boolean masks too.
class Graph_CollectiveOp<string mnemonic, Type element = Graph_StorageFloatTensor>
    : Graph_Op<mnemonic,
    [Graph_NoArithmetic, DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     Graph_KernelAttributes]> {
  let arguments = (ins FlatSymbolRefAttr:$mesh, Variadic<element>:$inputs,
                   OptionalAttr<I64Attr>:$bucket, OptionalAttr<StrAttr>:$unit,
                   OptionalAttr<DenseI16ArrayAttr>:$mesh_axes);
  let results = (outs Variadic<element>:$results);
  let assemblyFormat = [{
    $inputs `on` $mesh attr-dict `:` functional-type($inputs, $results)
  }];
  let extraClassDeclaration = [{
    // The number of ranks it runs over: the size of its mesh axes (the mesh's one axis when
    // mesh_axes is absent); 0 if the symbol does not resolve.
    int64_t getNumRanks();
  }];
}

def Graph_AllReduceOp : Graph_CollectiveOp<"all_reduce"> {
  let summary = "Sums each operand over the ranks, all operands in one transfer (a bucket)";
  let description = [{
    Result i is the sum over the ranks of operand i (same type). Data-parallel training
    all-reduces the gradients this way, one bucket (`bucket` = its number) at a time.
  }];
}

def Graph_ReduceScatterOp : Graph_CollectiveOp<"reduce_scatter"> {
  let summary = "Sums over the ranks and keeps this rank's flat shard of each operand";
  let description = [{
    Result i, of type tensor<k_i> with k_i = ceil(numel_i / N), holds this rank's shard of the
    sum over the ranks of operand i, flattened and zero-padded to N * k_i elements.
  }];
}

def Graph_AllGatherOp : Graph_CollectiveOp<"all_gather", Graph_Tensor> {
  let summary = "Reassembles whole tensors from every rank's flat shard";
  let description = [{
    Operand i is this rank's flat shard (tensor<k_i>); result i, of any shape with
    ceil(numel_i / N) == k_i, is the concatenation of all ranks' shards in rank order with the
    padding dropped.
  }];
}

def Graph_AllToAllOp : Graph_CollectiveOp<"all_to_all", Graph_Tensor> {
  let summary = "Sends piece j of each operand to rank j; result piece r came from rank r";
  let description = [{
    Operand i and result i have one type, whose N ranks divide its number of elements n_i:
    piece j of a tensor is its flattened elements [j*n_i/N, (j+1)*n_i/N). Result i holds, as
    piece r, rank r's piece (this rank) of its operand i (MPI_Alltoall). Resharding moves a
    split from one dimension to another with it (shardc-partition brings the blocks to send
    to the front first), sending (N-1)/N of this rank's block where an all-gather of the
    whole tensor would send N-1 blocks.
  }];
}

def Graph_SendRecvOp : Graph_Op<"send_recv",
    [Graph_NoArithmetic, DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     Graph_KernelAttributes]> {
  let summary = "Sends its operands to one rank of its axes while receiving its results from one";
  let description = [{
    A point-to-point transfer between pipeline stages, not a collective: only this rank and
    its peers take part. The operands go to rank `send_to` of the ranks along `mesh_axes`
    (the activations of a microbatch to the next stage, or their gradients to the one
    before), the results come from rank `recv_from` (absent: that side has no tensors; at
    least one side has). Both halves happen at once, so two stages that send to each other
    (1F1B's steady state) take one op each and cannot deadlock. Each ordered pair of ranks
    matches its transfers in program order: the k-th op of one rank that sends to another is
    the k-th of that one that receives from it, with the same tensors. With `posted` the send
    half does not wait for its receiver (the message is copied and posted, as MPI_Isend): the
    schedules whose ranks would otherwise wait on each other's sends around a ring (interleaved
    1F1B with more microbatches than stages) mark every transfer of the program so.

    ```mlir
    %grad = graph.send_recv %act on @mesh {mesh_axes = array<i16: 1>, send_to = 1,
        recv_from = 1} : (tensor<4x64xf32>) -> tensor<4x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, Variadic<Graph_Tensor>:$inputs,
                   OptionalAttr<I64Attr>:$send_to, OptionalAttr<I64Attr>:$recv_from,
                   OptionalAttr<DenseI16ArrayAttr>:$mesh_axes, UnitAttr:$posted);
  let results = (outs Variadic<Graph_Tensor>:$results);
  let assemblyFormat = [{
    $inputs `on` $mesh attr-dict `:` functional-type($inputs, $results)
  }];
  let extraClassDeclaration = [{
    // The number of ranks along its mesh axes (the mesh's one axis when mesh_axes is absent);
    // 0 if the symbol does not resolve.
    int64_t getNumRanks();
  }];
}

def Graph_ShardSliceOp : Graph_CollectiveOp<"shard_slice", Graph_Tensor> {
  let summary = "This rank's flat shard of each (replicated) operand; no communication";
  let description = [{
    Result i (tensor<k_i>) holds elements [r*k_i, (r+1)*k_i) of operand i flattened, zero past
    its end, where r is this rank.
  }];
}

#endif
