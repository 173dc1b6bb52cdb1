// RUN: shardc-opt %s --shardc-plan-memory | FileCheck %s

// An asynchronous transfer writes every result until it completes (before its first reader,
// the add), the one nothing reads included (a pipeline stage receiving a value it already
// has): no op in between takes those bytes.
// CHECK-LABEL: func.func @step(
// CHECK: graph.send_recv %{{.*}} on @pp {{{.*}}shardc.async, shardc.offsets = array<i64: [[UNREAD:[0-9]+]], [[READ:[0-9]+]]>
// CHECK-NOT: shardc.offsets = array<i64: [[UNREAD]]>
// CHECK-NOT: shardc.offsets = array<i64: [[READ]]>
// CHECK: graph.add
mesh.mesh @pp(shape = 2) {graph.axis_names = ["pp"]}
func.func @step(%x: tensor<4xf32> {graph.input = "x"}) -> (tensor<4xf32> {graph.output = "y"}) {
  %a = graph.relu %x : tensor<4xf32>
  %got:2 = graph.send_recv %a on @pp {mesh_axes = array<i16: 0>, recv_from = 1 : i64, send_to = 1 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %b = graph.relu %x : tensor<4xf32>
  %c = graph.relu %b : tensor<4xf32>
  %d = graph.add %c, %got#1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}
