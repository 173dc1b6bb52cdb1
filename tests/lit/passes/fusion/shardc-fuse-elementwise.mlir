// RUN: shardc-opt %s -split-input-file --shardc-fuse-elementwise | FileCheck %s

// The erf GELU as torch exports it (Div, Erf, Add, Mul, Mul) after a bias add on a bf16
// product: the cast from bf16 is exact (no step), the chain one op whose slots are the inputs
// 0..3 then the steps; only the last value is read outside, so it is the one output.
// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[Y:.*]]: tensor<4x8xbf16> {{.*}}, %[[B:.*]]: tensor<8xf32> {{.*}})
// CHECK-DAG: %[[S2:.*]] = graph.constant dense<1.41421354> : tensor<f32>
// CHECK-DAG: %[[ONE:.*]] = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[HALF:.*]] = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[G:.*]] = graph.fused_elementwise %[[Y]], %[[B]], %[[S2]], %[[ONE]], %[[HALF]]
// CHECK-SAME: {args = array<i64: 0, 1, 5, 2, 6, -1, 7, 3, 5, 8, 9, 4>, ops = ["add", "div", "erf", "add", "mul", "mul"], results = array<i64: 10>}
// CHECK-SAME: : (tensor<4x8xbf16>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu(%y: tensor<4x8xbf16> {graph.input = "y"}, %b: tensor<8xf32> {graph.input = "b"}) -> (tensor<4x8xf32> {graph.output = "out"}) {
  %s2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.000000e+00> : tensor<f32>
  %half = graph.constant dense<5.000000e-01> : tensor<f32>
  %y32 = graph.cast %y {to = f32} : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %x = graph.add %y32, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = graph.div %x, %s2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %2 = graph.erf %1 : tensor<4x8xf32>
  %3 = graph.add %2, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %4 = graph.mul %x, %3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = graph.mul %4, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %5 : tensor<4x8xf32>
}

// -----

// A value read outside the chain becomes an output too (here the residual sum, which the next
// op and the return read), and a cast to bf16 for the next product is a rounding step whose
// output is stored in bf16. The softmax between is not elementwise: it ends the first chain.
// CHECK-LABEL: func.func @outputs
// CHECK: %[[F:.*]]:2 = graph.fused_elementwise %{{.*}}, %{{.*}}, %{{.*}} {args = array<i64: 0, 1, 3, 2, 4, -1>, ops = ["add", "mul", "round_bf16"], results = array<i64: 3, 5>}
// CHECK-SAME: -> (tensor<2x16xf32>, tensor<2x16xbf16>)
// CHECK: graph.softmax %[[F]]#0
// CHECK: return %[[F]]#1
func.func @outputs(%a: tensor<2x16xf32> {graph.input = "a"}, %b: tensor<2x16xf32> {graph.input = "b"}, %c: tensor<2x16xf32> {graph.input = "c"}) -> (tensor<2x16xbf16> {graph.output = "h"}, tensor<2x16xf32> {graph.output = "p"}) {
  %s = graph.add %a, %b : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %m = graph.mul %s, %c : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %h = graph.cast %m {to = bf16} : (tensor<2x16xf32>) -> tensor<2x16xbf16>
  %p = graph.softmax %s {axis = 1 : i64} : tensor<2x16xf32>
  return %h, %p : tensor<2x16xbf16>, tensor<2x16xf32>
}

// -----

// Nothing may read a chain's value before the fused op's place (its last op): the exp is read
// by the matmul, which comes before the add, so the add starts a chain of its own, and a lone
// op stays as it is.
// CHECK-LABEL: func.func @early_reader
// CHECK: %[[E:.*]] = graph.exp %{{.*}} : tensor<4x4xf32>
// CHECK: %[[M:.*]] = graph.matmul %[[E]], %[[E]]
// CHECK: graph.add %[[E]], %[[M]]
// CHECK-NOT: graph.fused_elementwise
func.func @early_reader(%x: tensor<4x4xf32> {graph.input = "x"}) -> (tensor<4x4xf32> {graph.output = "y"}) {
  %e = graph.exp %x : tensor<4x4xf32>
  %m = graph.matmul %e, %e : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = graph.add %e, %m : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// Only one result shape per chain: the bias [8] computed from two vectors is a chain of its
// own, the broadcast add of it to [4, 8] and the relu another. Integer ops never join.
// CHECK-LABEL: func.func @shapes
// CHECK: %[[V:.*]] = graph.fused_elementwise %{{.*}}, %{{.*}} {args = array<i64: 0, 1, 2, -1>, ops = ["mul", "neg"], results = array<i64: 3>} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK: graph.fused_elementwise %{{.*}}, %[[V]] {args = array<i64: 0, 1, 2, -1>, ops = ["add", "relu"], results = array<i64: 3>} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK: graph.add %{{.*}}, %{{.*}} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK: graph.neg %{{.*}} : tensor<4xi64>
func.func @shapes(%x: tensor<4x8xf32> {graph.input = "x"}, %u: tensor<8xf32> {graph.input = "u"}, %w: tensor<8xf32> {graph.input = "w"}, %i: tensor<4xi64> {graph.input = "i"}) -> (tensor<4x8xf32> {graph.output = "y"}, tensor<4xi64> {graph.output = "j"}) {
  %v = graph.mul %u, %w : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %nv = graph.neg %v : tensor<8xf32>
  %s = graph.add %x, %nv : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %r = graph.relu %s : tensor<4x8xf32>
  %j = graph.add %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %k = graph.neg %j : tensor<4xi64>
  return %r, %k : tensor<4x8xf32>, tensor<4xi64>
}

// -----

// A recomputed op (remat's clones are named .../remat) never joins one that is not: the cost
// model and the plan tell the two apart by the name of the op.
// CHECK-LABEL: func.func @remat
// CHECK: graph.exp %{{.*}} : tensor<4xf32>
// CHECK-NEXT: graph.neg %{{.*}} : tensor<4xf32>
func.func @remat(%x: tensor<4xf32> {graph.input = "x"}) -> (tensor<4xf32> {graph.output = "y"}) {
  %e = graph.exp %x : tensor<4xf32> loc("h.0/Exp/remat")
  %y = graph.neg %e : tensor<4xf32> loc("h.0/Neg")
  return %y : tensor<4xf32>
}

// -----

// Only the step ops join: a constant (no operands) read by a chain is one of its inputs.
// CHECK-LABEL: func.func @constant_input
// CHECK: %[[C:.*]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK: graph.fused_elementwise %{{.*}}, %[[C]] {args = array<i64: 0, 1, 2, -1>, ops = ["mul", "exp"], results = array<i64: 3>}
func.func @constant_input(%x: tensor<4xf32> {graph.input = "x"}) -> (tensor<4xf32> {graph.output = "y"}) {
  %c = graph.constant dense<2.000000e+00> : tensor<f32>
  %m = graph.mul %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %y = graph.exp %m : tensor<4xf32>
  return %y : tensor<4xf32>
}
