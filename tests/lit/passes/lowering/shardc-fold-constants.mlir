// RUN: shardc-opt %s -split-input-file --shardc-fold-constants -verify-diagnostics | FileCheck %s

// A Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain, as torch exports for
// x.view(B, T, nh, hs), folds to nothing but the reshape.
// CHECK-LABEL: func.func @shape_chain
// CHECK-NOT: graph.shape
// CHECK-NOT: graph.gather
// CHECK-NOT: graph.concat
// CHECK: %[[R:.*]] = graph.reshape %arg0 : (tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @shape_chain(%x: tensor<2x8x16xf32> {graph.input = "x"}) -> tensor<2x8x4x4xf32> {
  %s = graph.shape %x {start = 0 : i64, end = 3 : i64} : (tensor<2x8x16xf32>) -> tensor<3xi64>
  %i0 = graph.constant dense<0> : tensor<i64>
  %i1 = graph.constant dense<1> : tensor<i64>
  %b = graph.gather %s, %i0 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %t = graph.gather %s, %i1 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %bu = graph.unsqueeze %b : (tensor<i64>) -> tensor<1xi64>
  %tu = graph.unsqueeze %t : (tensor<i64>) -> tensor<1xi64>
  %heads = graph.constant dense<[4, 4]> : tensor<2xi64>
  %shape = graph.concat %bu, %tu, %heads {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<2xi64>) -> tensor<4xi64>
  %r = graph.reshape %x : (tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// Constant arithmetic runs through the runtime's kernels.
// CHECK-LABEL: func.func @arith
// CHECK: %[[C:.*]] = graph.constant dense<[2.500000e+00, 5.000000e+00]> : tensor<2xf32>
// CHECK: %[[E:.*]] = graph.constant dense<[0, 2, 4]> : tensor<3xi64>
// CHECK: return %[[C]], %[[E]]
func.func @arith() -> (tensor<2xf32>, tensor<3xi64>) {
  %a = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = graph.constant dense<2.5> : tensor<f32>
  %m = graph.mul %a, %b : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %s = graph.constant dense<0> : tensor<i64>
  %l = graph.constant dense<6> : tensor<i64>
  %d = graph.constant dense<2> : tensor<i64>
  %r = graph.range %s, %l, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<3xi64>
  return %m, %r : tensor<2xf32>, tensor<3xi64>
}

// -----

// torch's Expand(-1) pattern: ConstantOfShape -> Equal -> Where feeding the shape.
// CHECK-LABEL: func.func @constant_of_shape_where
// CHECK: graph.constant dense<[2, 3]> : tensor<2xi64>
// CHECK-NOT: graph.where
// CHECK-NOT: graph.equal
func.func @constant_of_shape_where() -> tensor<2xi64> {
  %shape = graph.constant dense<[2]> : tensor<1xi64>
  %ones = graph.constant_of_shape %shape {value = dense<1> : tensor<1xi64>} : (tensor<1xi64>) -> tensor<2xi64>
  %minus = graph.constant dense<[-1, 3]> : tensor<2xi64>
  %neg = graph.constant dense<-1> : tensor<2xi64>
  %eq = graph.equal %minus, %neg : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
  %two = graph.constant dense<[2, 3]> : tensor<2xi64>
  %w = graph.where %eq, %two, %minus : (tensor<2xi1>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %w : tensor<2xi64>
}

// -----

// Identity, no-op reshapes and inference dropout are forwarded; work on real inputs stays.
// CHECK-LABEL: func.func @forwarding
// CHECK-NOT: graph.identity
// CHECK-NOT: graph.dropout
// CHECK: %[[M:.*]] = graph.constant dense<true> : tensor<4xi1>
// CHECK: %[[E:.*]] = graph.exp %arg0
// CHECK: return %[[E]], %[[M]]
func.func @forwarding(%x: tensor<4xf32> {graph.input = "x"}) -> (tensor<4xf32>, tensor<4xi1>) {
  %i = graph.identity %x : tensor<4xf32>
  %r = graph.reshape %i : (tensor<4xf32>) -> tensor<4xf32>
  %d, %mask = graph.dropout %r {ratio = 1.0e-01 : f32} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  %e = graph.exp %d : tensor<4xf32>
  return %e, %mask : tensor<4xf32>, tensor<4xi1>
}

// -----

// An evaluation that fails is a compile error at the op, not a crash.
func.func @gather_out_of_range() -> tensor<i64> {
  %s = graph.constant dense<[1, 2]> : tensor<2xi64>
  %i = graph.constant dense<5> : tensor<i64>
  // expected-error @+1 {{cannot be evaluated at compile time}}
  %g = graph.gather %s, %i {axis = 0 : i64} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  return %g : tensor<i64>
}

// -----

// A cast to the type its input already has disappears.
// CHECK-LABEL: func.func @noop_cast
// CHECK-NOT: graph.cast
// CHECK: return %arg0
func.func @noop_cast(%m: tensor<4xi1> {graph.input = "m"}) -> tensor<4xi1> {
  %c = graph.cast %m {to = i1} : (tensor<4xi1>) -> tensor<4xi1>
  return %c : tensor<4xi1>
}

// -----

// A 32 MiB splat stays an attribute: ops that would expand it run at runtime instead.
// CHECK-LABEL: func.func @large_splat
// CHECK: %[[C:.*]] = graph.constant dense<1.000000e+00> : tensor<8388608xf32>
// CHECK: graph.exp %[[C]]
func.func @large_splat() -> tensor<8388608xf32> {
  %c = graph.constant dense<1.0> : tensor<8388608xf32>
  %e = graph.exp %c : tensor<8388608xf32>
  return %e : tensor<8388608xf32>
}
