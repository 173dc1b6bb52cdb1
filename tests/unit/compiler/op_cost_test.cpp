// What each op costs (CostInterface.td, OpCost.cpp): the products' FLOPs against their
// formulas on shapes where a wrong dimension would show (every size distinct), data movement
// counting none, the elementwise default, the bytes, and the sum over a function.
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/OpCost.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shardc::graph {
namespace {

class OpCosts : public ::testing::Test {
protected:
  OpCosts() { ctx.loadDialect<mlir::func::FuncDialect, GraphDialect, mlir::mesh::MeshDialect>(); }
  // The FLOPs of each op of @f in `source`, in order.
  std::vector<uint64_t> flopsOf(const std::string &source) {
    module = mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
    EXPECT_TRUE(module);
    std::vector<uint64_t> flops;
    auto f = module->lookupSymbol<mlir::func::FuncOp>("f");
    for (mlir::Operation &op : f.getBody().front().without_terminator())
      flops.push_back(mlir::cast<CostOpInterface>(op).getFlops());
    return flops;
  }
  mlir::func::FuncOp f() { return module->lookupSymbol<mlir::func::FuncOp>("f"); }
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

TEST_F(OpCosts, ProductsCountTwoPerMultiplyAdd) {
  const std::vector<uint64_t> flops = flopsOf(R"(
    func.func @f(%x: tensor<3x5x7xf32>, %w: tensor<7x11xf32>, %a: tensor<13x7xf32>,
                 %b: tensor<11x13xf32>, %c: tensor<7x11xf32>, %v: tensor<7xf32>) {
      %0 = graph.matmul %x, %w : (tensor<3x5x7xf32>, tensor<7x11xf32>) -> tensor<3x5x11xf32>
      %1 = graph.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = true, trans_b = true} : (tensor<13x7xf32>, tensor<11x13xf32>, tensor<7x11xf32>) -> tensor<7x11xf32>
      %2 = graph.gemm %w, %b {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = false} : (tensor<7x11xf32>, tensor<11x13xf32>) -> tensor<7x13xf32>
      %3 = graph.matmul %v, %w : (tensor<7xf32>, tensor<7x11xf32>) -> tensor<11xf32>
      return
    })");
  ASSERT_EQ(flops.size(), 4u);
  EXPECT_EQ(flops[0], 2u * 3 * 5 * 11 * 7);      // [15 rows] x [7 x 11]
  EXPECT_EQ(flops[1], 2u * 7 * 11 * 13 + 7 * 11); // a^T is 7 x 13; plus C
  EXPECT_EQ(flops[2], 2u * 7 * 13 * 11);          // no C
  EXPECT_EQ(flops[3], 2u * 11 * 7);               // a 1-D row
}

TEST_F(OpCosts, ConvolutionsCountEveryWindowOfOneGroup) {
  // 2 images, 6 -> 4 channels in 2 groups (3 input channels per group), 3x5 kernel, 5x4 out.
  const std::vector<uint64_t> flops = flopsOf(R"(
    func.func @f(%x: tensor<2x6x9x8xf32>, %w: tensor<4x3x3x5xf32>, %dy: tensor<2x4x7x4xf32>) {
      %0 = graph.conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x6x9x8xf32>, tensor<4x3x3x5xf32>) -> tensor<2x4x7x4xf32>
      %1 = graph.conv_grad_input %dy, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x4x7x4xf32>, tensor<4x3x3x5xf32>) -> tensor<2x6x9x8xf32>
      %2 = graph.conv_grad_weight %x, %dy {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x6x9x8xf32>, tensor<2x4x7x4xf32>) -> tensor<4x3x3x5xf32>
      return
    })");
  ASSERT_EQ(flops.size(), 3u);
  const uint64_t forward = 2u * (2 * 4 * 7 * 4) * (3 * 3 * 5);
  EXPECT_EQ(flops[0], forward);
  EXPECT_EQ(flops[1], forward);
  EXPECT_EQ(flops[2], forward);
}

// A fused chain counts one FLOP per arithmetic step and element (its roundings to bf16 none, as
// the casts they replace), and moves only its inputs and outputs: here a bf16 [3, 5] input, an
// f32 [5] bias and scalar, an f32 and a bf16 [3, 5] output.
TEST_F(OpCosts, FusedChainsCountTheirStepsAndMoveOnlyTheirInputsAndOutputs) {
  const std::vector<uint64_t> flops = flopsOf(R"(
    func.func @f(%x: tensor<3x5xbf16>, %b: tensor<5xf32>, %c: tensor<f32>) {
      %0:2 = graph.fused_elementwise %x, %b, %c {args = array<i64: 0, 1, 3, 2, 4, -1, 5, -1>, ops = ["add", "mul", "erf", "round_bf16"], results = array<i64: 5, 6>} : (tensor<3x5xbf16>, tensor<5xf32>, tensor<f32>) -> (tensor<3x5xf32>, tensor<3x5xbf16>)
      return
    })");
  ASSERT_EQ(flops.size(), 1u);
  EXPECT_EQ(flops[0], 3u * 15);
  mlir::Operation *op = &f().getBody().front().front();
  EXPECT_EQ(mlir::cast<CostOpInterface>(op).getBytesAccessed(),
            15u * 2 + 5 * 4 + 4 + 15 * 4 + 15 * 2);
}

TEST_F(OpCosts, AttentionCountsBothProductsAndTheBackwardsFive) {
  // 2 x 3 heads, 5 queries, 7 keys, head dims 11 (q, k) and 13 (v).
  const std::vector<uint64_t> flops = flopsOf(R"(
    func.func @f(%q: tensor<2x3x5x11xf32>, %k: tensor<2x3x7x11xf32>, %v: tensor<2x3x7x13xf32>,
                 %o: tensor<2x3x5x13xf32>, %lse: tensor<2x3x5xf32>) {
      %0:2 = graph.attention %q, %k, %v {causal = false, scale = 1.0 : f32} : (tensor<2x3x5x11xf32>, tensor<2x3x7x11xf32>, tensor<2x3x7x13xf32>) -> (tensor<2x3x5x13xf32>, tensor<2x3x5xf32>)
      %1:3 = graph.attention_grad %q, %k, %v, %o, %lse, %o {causal = false, scale = 1.0 : f32} : (tensor<2x3x5x11xf32>, tensor<2x3x7x11xf32>, tensor<2x3x7x13xf32>, tensor<2x3x5x13xf32>, tensor<2x3x5xf32>, tensor<2x3x5x13xf32>) -> (tensor<2x3x5x11xf32>, tensor<2x3x7x11xf32>, tensor<2x3x7x13xf32>)
      return
    })");
  ASSERT_EQ(flops.size(), 2u);
  const uint64_t pairs = 2u * 3 * 5 * 7;
  EXPECT_EQ(flops[0], 2 * pairs * (11 + 13));
  EXPECT_EQ(flops[1], 2 * pairs * (3 * 11 + 2 * 13));
}

TEST_F(OpCosts, DataMovementCountsNoneAndTheRestOnePerElement) {
  const std::vector<uint64_t> flops = flopsOf(R"(
    func.func @f(%x: tensor<4x6xf32>, %b: tensor<6xf32>) {
      %0 = graph.reshape %x : (tensor<4x6xf32>) -> tensor<24xf32>
      %1 = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
      %2 = graph.cast %x {to = bf16} : (tensor<4x6xf32>) -> tensor<4x6xbf16>
      %3 = graph.add %x, %b : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
      %4 = graph.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x6xf32>) -> tensor<4xf32>
      %5 = graph.exp %x : tensor<4x6xf32>
      return
    })");
  EXPECT_EQ(flops, (std::vector<uint64_t>{0, 0, 0, 24, 24, 24}));
  uint64_t bytes = 0;
  for (mlir::Operation &op : f().getBody().front().without_terminator()) {
    bytes = mlir::cast<CostOpInterface>(op).getBytesAccessed();
    if (mlir::isa<CastOp>(op))
      break;
  }
  EXPECT_EQ(bytes, 24u * 4 + 24u * 2); // the cast reads f32, writes bf16
  EXPECT_EQ(functionFlops(f()), 72u);
}

} // namespace
} // namespace shardc::graph
