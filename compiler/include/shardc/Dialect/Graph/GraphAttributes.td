//===- GraphAttributes.td - attributes of the graph dialect -----------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_GRAPHATTRIBUTES_TD
#define SHARDC_DIALECT_GRAPH_GRAPHATTRIBUTES_TD

include "mlir/IR/AttrTypeBase.td"
include "shardc/Dialect/Graph/GraphDialect.td"

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

    ```mlir
    %m: tensor<16xf32> {graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [16, 4]>}
    ```
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh, "int64_t":$axis,
                        ArrayRefParameter<"int64_t">:$global_shape);
  let assemblyFormat = [{
    `<` $mesh `,` `axis` `=` $axis `,` `global_shape` `=` `[` $global_shape `]` `>`
  }];
}

#endif
