// RUN: shardc-opt %s -split-input-file --shardc-fill-large-splats | FileCheck %s

// A 32 MiB one-value constant read by two ops: each reader gets its own fill, just before it,
// so that neither buffer is live while the other ops run.
// CHECK-LABEL: func.func @two_readers
// CHECK-NOT: graph.constant dense<1.000000e+00> : tensor<8192x1024xf32>
// CHECK: %[[X:.*]] = graph.exp %arg0
// CHECK-NEXT: %[[V1:.*]] = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[F1:.*]] = graph.expand %[[V1]] : (tensor<f32>) -> tensor<8192x1024xf32>
// CHECK-NEXT: %[[A:.*]] = graph.add %[[X]], %[[F1]]
// CHECK-NEXT: %[[V2:.*]] = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[F2:.*]] = graph.expand %[[V2]] : (tensor<f32>) -> tensor<8192x1024xf32>
// CHECK-NEXT: %[[M:.*]] = graph.mul %[[A]], %[[F2]]
// CHECK-NEXT: return %[[M]]
func.func @two_readers(%x: tensor<8192x1024xf32> {graph.input = "x"}) -> tensor<8192x1024xf32> {
  %c = graph.constant dense<1.0> : tensor<8192x1024xf32>
  %e = graph.exp %x : tensor<8192x1024xf32>
  %a = graph.add %e, %c : (tensor<8192x1024xf32>, tensor<8192x1024xf32>) -> tensor<8192x1024xf32>
  %m = graph.mul %a, %c : (tensor<8192x1024xf32>, tensor<8192x1024xf32>) -> tensor<8192x1024xf32>
  return %m : tensor<8192x1024xf32>
}

// -----

// One op reading the constant twice gets one fill. Integer and bool splats are filled the
// same way (bool is one byte per element at run time).
// CHECK-LABEL: func.func @one_reader_twice
// CHECK: %[[V:.*]] = graph.constant dense<7> : tensor<i64>
// CHECK-NEXT: %[[F:.*]] = graph.expand %[[V]] : (tensor<i64>) -> tensor<4096x1024xi64>
// CHECK-NEXT: graph.add %[[F]], %[[F]]
// CHECK: %[[T:.*]] = graph.constant dense<true> : tensor<i1>
// CHECK-NEXT: %[[B:.*]] = graph.expand %[[T]] : (tensor<i1>) -> tensor<32768x1024xi1>
// CHECK-NEXT: graph.not %[[B]]
func.func @one_reader_twice() -> (tensor<4096x1024xi64>, tensor<32768x1024xi1>) {
  %c = graph.constant dense<7> : tensor<4096x1024xi64>
  %a = graph.add %c, %c : (tensor<4096x1024xi64>, tensor<4096x1024xi64>) -> tensor<4096x1024xi64>
  %t = graph.constant dense<true> : tensor<32768x1024xi1>
  %n = graph.not %t : tensor<32768x1024xi1>
  return %a, %n : tensor<4096x1024xi64>, tensor<32768x1024xi1>
}

// -----

// Constants stay stored when they are small (64 KiB exactly) or hold different values, and a
// larger one-value constant returned as an output is filled before the return.
// CHECK-LABEL: func.func @kept
// CHECK: graph.constant dense<2.000000e+00> : tensor<128x128xf32>
// CHECK: graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: %[[V:.*]] = graph.constant dense<3.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[F:.*]] = graph.expand %[[V]] : (tensor<f32>) -> tensor<128x129xf32>
// CHECK-NEXT: return %{{.*}}, %{{.*}}, %[[F]]
func.func @kept() -> (tensor<128x128xf32>, tensor<2xf32>, tensor<128x129xf32>) {
  %a = graph.constant dense<2.0> : tensor<128x128xf32>
  %b = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = graph.constant dense<3.0> : tensor<128x129xf32>
  return %a, %b, %c : tensor<128x128xf32>, tensor<2xf32>, tensor<128x129xf32>
}
