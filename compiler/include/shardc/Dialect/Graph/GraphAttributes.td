//===- GraphAttributes.td - attributes of the graph dialect -----------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_GRAPHATTRIBUTES_TD
#define SHARDC_DIALECT_GRAPH_GRAPHATTRIBUTES_TD

include "mlir/IR/AttrTypeBase.td"
include "shardc/Dialect/Graph/GraphDialect.td"

// An optional #mesh.shard; compared as the uniqued attribute it is (MeshShardingAttr's own
// operator== dereferences a null one).
def Graph_OptionalMeshSharding : OptionalParameter<"::mlir::mesh::MeshShardingAttr"> {
  let comparator = "$_lhs.getAsOpaquePointer() == $_rhs.getAsOpaquePointer()";
}

// Upstream shardings (#mesh.shard) split dimensions into equal blocks. ZeRO shards a tensor
// another way, which they cannot express: flattened, zero-padded to a multiple of the devices
// on one mesh axis, and cut into equal flat pieces.
def Graph_FlatShardAttr : AttrDef<Graph_Dialect, "FlatShard"> {
  let mnemonic = "flat_shard";
  let summary = "ZeRO's flat padded shard of a tensor over one mesh axis";
  let description = [{
    The value is this device's tensor<k> with k = ceil(numel / n), n the size of mesh axis
    `axis` of `mesh`: elements [r*k, (r+1)*k) of the tensor of shape `global_shape`,
    flattened and zero-padded to n*k elements, where r is the device's index on that axis.

    With tensor parallelism (ZeRO over dp of what tp already split), the flattened tensor is
    the device's block of a larger one, and `block` is that block's sharding: the whole
    tensor's dimensions that the mesh splits (global_shape is the block's shape).

    ```mlir
    %m: tensor<16xf32> {graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [16, 4]>}
    %w: tensor<16xf32> {graph.sharding = #graph.flat_shard<@mesh, axis = 0, global_shape = [8, 4],
                          block = #mesh.shard<@mesh, [[1]]>>}
    ```
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh, "int64_t":$axis,
                        ArrayRefParameter<"int64_t">:$global_shape,
                        Graph_OptionalMeshSharding:$block);
  let assemblyFormat = [{
    `<` $mesh `,` `axis` `=` $axis `,` `global_shape` `=` `[` $global_shape `]`
    (`,` `block` `=` $block^)? `>`
  }];
}

#endif
