// RUN: shardc-opt %s -split-input-file --shardc-plan-memory -verify-diagnostics | FileCheck %s

// A chain: each value dies when the next is written, so the arena holds two buffers at a
// time and offsets alternate. The graph output lives to the end.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: %arg0: tensor<16xf32> {graph.input = "x", shardc.offset = 0 : i64}
// CHECK-SAME: attributes {shardc.arena_bytes = 128 : i64, shardc.comm_workspace_bytes = 0 : i64, shardc.workspace_bytes = 0 : i64}
// CHECK: graph.exp %arg0 {shardc.offsets = array<i64: 64>}
// CHECK: graph.tanh %{{.*}} {shardc.offsets = array<i64: 0>}
// CHECK: graph.neg %{{.*}} {shardc.offsets = array<i64: 64>}
func.func @chain(%x: tensor<16xf32> {graph.input = "x"}) -> tensor<16xf32> {
  %a = graph.exp %x : tensor<16xf32>
  %b = graph.tanh %a : tensor<16xf32>
  %c = graph.neg %b : tensor<16xf32>
  return %c : tensor<16xf32>
}

// -----

// A value read late (the residual %a) keeps its space while %b is written; the input dies
// after the matmul, so relu reuses its bytes. Parameters and constants are not in the arena.
// CHECK-LABEL: func.func @residual
// CHECK-SAME: %arg1: tensor<64x64xf32> {graph.param = "w"}
// CHECK-SAME: shardc.arena_bytes = 49152
// CHECK: graph.constant
// CHECK-NOT: shardc.offsets
// CHECK: graph.matmul %arg0, %arg1 {shardc.offsets = array<i64: 16384>}
// CHECK: graph.relu %{{.*}} {shardc.offsets = array<i64: 0>}
// CHECK: graph.add %{{.*}} {shardc.offsets = array<i64: 32768>}
func.func @residual(%x: tensor<64x64xf32> {graph.input = "x"}, %w: tensor<64x64xf32> {graph.param = "w"}) -> tensor<64x64xf32> {
  %c = graph.constant dense<1.0> : tensor<f32>
  %a = graph.matmul %x, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %b = graph.relu %a : tensor<64x64xf32>
  %d = graph.add %a, %b : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %d : tensor<64x64xf32>
}

// -----

// Kernels with data-sized temporaries get shardc.workspace (bytes, from the kernel's
// workspace-size function); the function's workspace is the largest of them. softmax over a
// middle axis keeps a max (8 floats) and a sum (8 doubles, 64-byte aligned) per inner
// position; reduce_sum one double accumulator per output element; exp needs none.
// CHECK-LABEL: func.func @workspace
// CHECK-SAME: shardc.workspace_bytes = 128 : i64
// CHECK: graph.softmax %arg0 {axis = 1 : i64, shardc.offsets = array<i64: {{[0-9]+}}>, shardc.workspace = 128 : i64}
// CHECK: graph.reduce_sum {{.*}}shardc.workspace = 16 : i64
// CHECK: graph.exp
// CHECK-NOT: shardc.workspace =
// CHECK: return
func.func @workspace(%x: tensor<2x3x8xf32> {graph.input = "x"}) -> tensor<2xf32> {
  %s = graph.softmax %x {axis = 1 : i64} : tensor<2x3x8xf32>
  %r = graph.reduce_sum %s {axes = array<i64: 1, 2>, keepdims = false} : (tensor<2x3x8xf32>) -> tensor<2xf32>
  %e = graph.exp %r : tensor<2xf32>
  return %e : tensor<2xf32>
}

// -----

// expected-error @+1 {{has no static shape}}
func.func @dynamic(%x: tensor<?xf32> {graph.input = "x"}) -> tensor<?xf32> {
  %a = graph.exp %x : tensor<?xf32>
  return %a : tensor<?xf32>
}
