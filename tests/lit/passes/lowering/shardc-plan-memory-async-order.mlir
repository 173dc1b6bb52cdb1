// RUN: shardc-opt %s -split-input-file --shardc-plan-memory | FileCheck %s
// RUN: shardc-opt %s -split-input-file --shardc-plan-memory="overlap-collectives=false" | FileCheck %s --check-prefix=INORDER

// Only ops the program runs count as overlap: a constant between a collective and its reader
// goes to the weights, so the reader is the next op and the collective stays in order.
// CHECK-LABEL: func.func @constant_between
// CHECK-SAME: shardc.comm_workspace_bytes = 0 : i64
// CHECK: graph.all_reduce %arg0 on @dp {shardc.offsets
// CHECK-NOT: shardc.async
module {
  mesh.mesh @dp(shape = 2) {graph.axis_names = ["dp"]}
  func.func @constant_between(%x: tensor<4xf32> {graph.input = "x"}) -> (tensor<4xf32> {graph.output = "y"}) attributes {graph.mesh = @dp} {
    %r = graph.all_reduce %x on @dp : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.constant dense<2.0> : tensor<4xf32>
    %m = graph.mul %r, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %m : tensor<4xf32>
  }
}

// -----

// An op between them: asynchronous. Its operand %x (read until the mul) and its result keep
// their bytes while exp runs, so exp's result takes a third buffer; in order, exp could have
// reused %x's bytes.
// CHECK-LABEL: func.func @op_between
// CHECK-SAME: shardc.arena_bytes = 256 : i64, shardc.comm_workspace_bytes = 16 : i64, shardc.workspace_bytes = 0 : i64
// CHECK: graph.all_reduce %arg0 on @dp {shardc.async, shardc.offsets = array<i64: [[R:[0-9]+]]>, shardc.workspace = 16 : i64}
// CHECK: graph.exp %arg1
// CHECK-NOT: array<i64: [[R]]>
// CHECK: graph.mul
// INORDER-LABEL: func.func @op_between
// INORDER-SAME: shardc.arena_bytes = 192 : i64, shardc.comm_workspace_bytes = 0 : i64, shardc.workspace_bytes = 16 : i64
// INORDER: graph.exp %arg1 {shardc.offsets = array<i64: 0>}
module {
  mesh.mesh @dp(shape = 2) {graph.axis_names = ["dp"]}
  func.func @op_between(%x: tensor<4xf32> {graph.input = "x"}, %z: tensor<4xf32> {graph.input = "z"}) -> (tensor<4xf32> {graph.output = "y"}) attributes {graph.mesh = @dp} {
    %r = graph.all_reduce %x on @dp : (tensor<4xf32>) -> tensor<4xf32>
    %e = graph.exp %z : tensor<4xf32>
    %m = graph.mul %r, %e : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %m : tensor<4xf32>
  }
}
