// RUN: shardc-opt %s --shardc-build-train-step="loss-scale=dynamic loss-scale-init=1024 loss-scale-growth-interval=3" | FileCheck %s
// RUN: not shardc-opt %s --shardc-build-train-step="loss-scale=static" 2>&1 | FileCheck %s --check-prefix=BAD

// Dynamic loss scaling (--precision fp16; torch.cuda.amp.GradScaler's rule): three f32 scalar
// state arguments (log2 of the scale over its initial value, the growth tracker, the steps
// skipped); the backward pass starts from the scale = 1024 * 2^log2 instead of 1; each gradient
// is multiplied by 1/scale; any non-finite gradient element makes sum(g * 0) NaN, and that
// skips the update (adamw_update's last operand); AdamW's step is the step's number minus the
// steps skipped before; found: log2 - 1, tracker 0; else tracker + 1, and at 3 log2 + 1 and
// tracker 0. The step's scale and the skip flag are outputs.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[LOG2:[a-z0-9]+]]: tensor<f32> {graph.state = "loss_scale.log2"}
// CHECK-SAME: %[[TRACKER:[a-z0-9]+]]: tensor<f32> {graph.state = "loss_scale.growth_tracker"}
// CHECK-SAME: %[[SKIPPED:[a-z0-9]+]]: tensor<f32> {graph.state = "loss_scale.skipped_steps"}
// CHECK-SAME: (tensor<f32> {graph.output = "loss"}, tensor<f32> {graph.output = "loss_scale"}, tensor<f32> {graph.output = "loss_scale_overflow"}
// CHECK-SAME: tensor<f32> {graph.state = "loss_scale.log2"}, tensor<f32> {graph.state = "loss_scale.growth_tracker"}, tensor<f32> {graph.state = "loss_scale.skipped_steps"}, tensor<i64> {graph.step})
// CHECK: %[[NEXT:.*]] = graph.add %{{.*}}, %{{.*}} : (tensor<i64>, tensor<i64>) -> tensor<i64>
// CHECK: %[[TWO:.*]] = graph.constant dense<2.000000e+00>
// CHECK-NEXT: %[[POW:.*]] = graph.pow %[[TWO]], %[[LOG2]]
// CHECK-NEXT: %[[INIT:.*]] = graph.constant dense<1.024000e+03>
// CHECK-NEXT: %[[SCALE:.*]] = graph.mul %[[INIT]], %[[POW]]
// CHECK: %[[LOSS:.*]] = graph.reduce_mean
// CHECK-NEXT: %[[SEED:.*]] = graph.reshape %[[SCALE]]
// CHECK: %[[G:.*]] = graph.matmul {{.*}} -> tensor<3x5xf32>
// CHECK: %[[INV:.*]] = graph.div %{{.*}}, %[[SCALE]]
// CHECK: %[[ZERO:.*]] = graph.constant dense<0.000000e+00>
// CHECK-NEXT: %[[UNSCALED:.*]] = graph.mul %[[G]], %[[INV]]
// CHECK-NEXT: %[[PROBE:.*]] = graph.mul %[[UNSCALED]], %[[ZERO]]
// CHECK-NEXT: %[[NAN:.*]] = graph.reduce_sum %[[PROBE]]
// CHECK-NEXT: %[[FINITE:.*]] = graph.equal %[[NAN]], %[[ZERO]]
// CHECK-NEXT: %[[FOUND:.*]] = graph.not %[[FINITE]]
// CHECK-NEXT: %[[SKIP:.*]] = graph.cast %[[FOUND]] {to = f32}
// CHECK: %[[GROW:.*]] = graph.cast {{.*}} {to = f32}
// CHECK: %[[DOWN:.*]] = graph.sub %[[LOG2]], %[[SKIP]]
// CHECK-NEXT: %[[NEWLOG2:.*]] = graph.add %[[DOWN]], %[[GROW]]
// CHECK-NEXT: %[[NEWSKIPPED:.*]] = graph.add %[[SKIPPED]], %[[SKIP]]
// CHECK-NEXT: %[[SKIPPEDI:.*]] = graph.cast %[[SKIPPED]] {to = i64}
// CHECK-NEXT: %[[OPTSTEP:.*]] = graph.sub %[[NEXT]], %[[SKIPPEDI]]
// CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}} = graph.adamw_update %arg1, %[[UNSCALED]], %{{.*}}, %{{.*}}, %[[OPTSTEP]], %{{.*}}, %[[SKIP]]
// CHECK: return %[[LOSS]], %[[SCALE]], %[[SKIP]], {{.*}}, %[[NEWLOG2]], %{{.*}}, %[[NEWSKIPPED]], %[[NEXT]]

// BAD: error: loss-scale 'static': expected none or dynamic
func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"}, %w: tensor<3x5xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %a = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %l = graph.reduce_mean %a {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
