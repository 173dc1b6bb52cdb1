// RUN: not shardc-opt %s -split-input-file --shardc-quantize-base="format=nf4 all-parameters=true" 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not shardc-opt %s -split-input-file --shardc-quantize-base="format=int8" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not shardc-opt %s -split-input-file --shardc-quantize-base="format=fp8" 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not shardc-opt %s -split-input-file --shardc-quantize-base="format=int8 all-parameters=true keep=small" 2>&1 | FileCheck %s --check-prefix=KEPT

// nf4 blocks are 64 elements: a [10, 3] weight cannot be stored in them (with all-parameters,
// as --mode forward quantizes). Without it, nothing here is frozen: nothing to quantize.
// BLOCK: error: --base-dtype nf4: weight 'small.weight' has 30 elements, not a multiple of the block size 64
// NONE: error: --base-dtype int8: no frozen 2-D weight read only by products (MatMul, Gemm) to store in fewer bits
// FORMAT: error: --base-dtype fp8: the format must be bf16, int8 or nf4
// KEPT: error: --base-dtype int8: no 2-D weight read only by products (MatMul, Gemm) to store in fewer bits (the one such weight matches --base-dtype-keep small)
func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"},
                   %w: tensor<10x3xf32> {graph.param = "small.weight"})
    -> (tensor<4x10xf32> {graph.output = "y"}) {
  %t = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<10x3xf32>) -> tensor<3x10xf32>
  %y = graph.matmul %x, %t : (tensor<4x3xf32>, tensor<3x10xf32>) -> tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}

// -----

// A weight an embedding also reads (GPT-2's tied wte) stays f32.
// NONE: error: --base-dtype int8: no frozen 2-D weight
func.func @forward(%ids: tensor<4xi64> {graph.input = "ids"},
                   %x: tensor<4x64xf32> {graph.input = "x"},
                   %w: tensor<128x64xf32> {graph.not_trainable = "frozen", graph.param = "wte.weight"})
    -> (tensor<4x64xf32> {graph.output = "e"}, tensor<4x128xf32> {graph.output = "y"}) {
  %e = graph.gather %w, %ids {axis = 0 : i64} : (tensor<128x64xf32>, tensor<4xi64>) -> tensor<4x64xf32>
  %t = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<128x64xf32>) -> tensor<64x128xf32>
  %y = graph.matmul %x, %t : (tensor<4x64xf32>, tensor<64x128xf32>) -> tensor<4x128xf32>
  return %e, %y : tensor<4x64xf32>, tensor<4x128xf32>
}
