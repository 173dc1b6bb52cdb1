// The sharding rules' factor mappings (ShardingRule.h): reshape dimension groups, reductions,
// broadcasting, matmul, and the ops' own rules read through the interface.
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

namespace shardc::graph {
namespace {

// The sizes of the factors of each dimension, e.g. {{12, 64}} for one dimension of 12 x 64.
std::vector<std::vector<int64_t>> factorSizes(const OpShardingRule &rule,
                                              const TensorFactors &tensor) {
  std::vector<std::vector<int64_t>> sizes;
  for (const DimFactors &dim : tensor) {
    sizes.emplace_back();
    for (int f : dim)
      sizes.back().push_back(rule.factors[f].size);
  }
  return sizes;
}

using Sizes = std::vector<std::vector<int64_t>>;

TEST(ReshapeRule, SplitsAHiddenDimensionIntoHeads) {
  // [b, s, 768] -> [b, s, 12, 64]: 768 is the heads (major) and the head dim.
  OpShardingRule r = sharding::reshape({2, 5, 768}, {2, 5, 12, 64});
  EXPECT_EQ(factorSizes(r, r.operands[0]), (Sizes{{2}, {5}, {12, 64}}));
  EXPECT_EQ(factorSizes(r, r.results[0]), (Sizes{{2}, {5}, {12}, {64}}));
  // The heads factor is the 768-dimension's major factor and the result's dim 2.
  EXPECT_EQ(r.operands[0][2][0], r.results[0][2][0]);
  EXPECT_EQ(r.operands[0][0][0], r.results[0][0][0]);
  EXPECT_TRUE(r.linear[0]);
}

TEST(ReshapeRule, MergesBatchAndSequenceWithTheBatchMajor) {
  OpShardingRule r = sharding::reshape({4, 6, 8}, {24, 8});
  EXPECT_EQ(factorSizes(r, r.results[0]), (Sizes{{4, 6}, {8}}));
  EXPECT_EQ(r.results[0][0][0], r.operands[0][0][0]); // the batch stays major
  EXPECT_EQ(r.results[0][0][1], r.operands[0][1][0]); // the sequence becomes minor
}

TEST(ReshapeRule, RefinesOverlappingGroups) {
  // [8, 16] -> [16, 8] over one group of 128: cuts 8 | 16 | 128 give factors 8, 2, 8.
  OpShardingRule r = sharding::reshape({8, 16}, {16, 8});
  EXPECT_EQ(factorSizes(r, r.operands[0]), (Sizes{{8}, {2, 8}}));
  EXPECT_EQ(factorSizes(r, r.results[0]), (Sizes{{8, 2}, {8}}));
  EXPECT_EQ(r.operands[0][0][0], r.results[0][0][0]);
}

TEST(ReshapeRule, KeepsGroupsWithoutACommonRefinementWhole) {
  // 6x4 -> 4x6: no dimension of one side is a block of the other's.
  OpShardingRule r = sharding::reshape({6, 4}, {4, 6});
  for (const ShardingFactor &f : r.factors) {
    EXPECT_EQ(f.kind, FactorKind::Whole);
    EXPECT_FALSE(f.why.empty());
  }
}

TEST(ReshapeRule, SizeOneDimensionsHaveNoFactor) {
  OpShardingRule r = sharding::reshape({1, 8, 1}, {8});
  EXPECT_EQ(factorSizes(r, r.operands[0]), (Sizes{{}, {8}, {}}));
  EXPECT_EQ(factorSizes(r, r.results[0]), (Sizes{{8}}));
}

TEST(ReshapeRule, DifferentElementCountsAreNotSplit) {
  OpShardingRule r = sharding::reshape({4, 6}, {5, 5});
  for (const ShardingFactor &f : r.factors)
    EXPECT_EQ(f.kind, FactorKind::Whole);
}

TEST(ReductionRule, ReducedAxesAreMissingFromTheResult) {
  OpShardingRule r = sharding::reduction({4, 6, 8}, {1}, /*keepdims=*/true, PartialKind::Mean);
  EXPECT_EQ(factorSizes(r, r.results[0]), (Sizes{{4}, {}, {8}}));
  EXPECT_EQ(r.factors[r.operands[0][1][0]].partial, PartialKind::Mean);
  EXPECT_TRUE(r.linear[0]);
  OpShardingRule max = sharding::reduction({4, 6}, {0}, false, PartialKind::Max);
  EXPECT_FALSE(max.linear[0]); // a maximum of pending sums is not their sum
}

class OpRules : public ::testing::Test {
protected:
  OpRules() {
    ctx.loadDialect<mlir::func::FuncDialect, GraphDialect, mlir::mesh::MeshDialect>();
  }
  // The rule of the first op of @f in `source`.
  OpShardingRule ruleOf(const char *source) {
    module = mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
    EXPECT_TRUE(module);
    auto f = module->lookupSymbol<mlir::func::FuncOp>("f");
    mlir::Operation *op = &f.getBody().front().front();
    auto rule = mlir::cast<ShardingRuleOpInterface>(op).getShardingRule();
    EXPECT_TRUE(rule.has_value());
    return *rule;
  }
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

TEST_F(OpRules, MatMulContractsK) {
  OpShardingRule r = ruleOf(R"(
    func.func @f(%a: tensor<3x4x5xf32>, %b: tensor<5x7xf32>) -> tensor<3x4x7xf32> {
      %c = graph.matmul %a, %b : (tensor<3x4x5xf32>, tensor<5x7xf32>) -> tensor<3x4x7xf32>
      return %c : tensor<3x4x7xf32>
    })");
  int k = r.operands[0][2][0];
  EXPECT_EQ(r.operands[1][0][0], k);
  for (const DimFactors &dim : r.results[0])
    EXPECT_NE(dim[0], k); // k is summed
  EXPECT_EQ(r.results[0][2][0], r.operands[1][1][0]);
  EXPECT_EQ(r.results[0][0][0], r.operands[0][0][0]);
  EXPECT_TRUE(r.linear[0] && r.linear[1]);
}

TEST_F(OpRules, PadKeepsPaddedDimensionsWholeAndPassesTheOthers) {
  // [4, 6, 8] padded on dim 1 only (an HF label shift pads the sequence): the batch and the
  // features pass through; the sequence is whole on both sides. Linear only for a zero pad.
  OpShardingRule r = ruleOf(R"(
    func.func @f(%a: tensor<4x6x8xf32>) -> tensor<4x7x8xf32> {
      %b = graph.pad %a {pads = array<i64: 0, 0, 0, 0, 1, 0>, value = 0.0 : f64} : (tensor<4x6x8xf32>) -> tensor<4x7x8xf32>
      return %b : tensor<4x7x8xf32>
    })");
  EXPECT_EQ(r.operands[0][0], r.results[0][0]);
  EXPECT_EQ(r.operands[0][2], r.results[0][2]);
  EXPECT_EQ(r.factors[r.operands[0][0][0]].kind, FactorKind::Parallel);
  EXPECT_EQ(r.factors[r.operands[0][1][0]].kind, FactorKind::Whole);
  EXPECT_EQ(r.factors[r.results[0][1][0]].kind, FactorKind::Whole);
  EXPECT_NE(r.operands[0][1], r.results[0][1]);
  EXPECT_TRUE(r.linear[0]);
  OpShardingRule valued = ruleOf(R"(
    func.func @f(%a: tensor<4x6xf32>) -> tensor<4x8xf32> {
      %b = graph.pad %a {pads = array<i64: 0, 1, 0, 1>, value = -1.0 : f64} : (tensor<4x6xf32>) -> tensor<4x8xf32>
      return %b : tensor<4x8xf32>
    })");
  EXPECT_FALSE(valued.linear[0]);
}

TEST_F(OpRules, ConvSplitsBatchAndMapsSumsChannelsAndKeepsWindowsWhole) {
  // x [4, 6, 9, 9] (x) w [8, 6, 3, 3] -> y [4, 8, 4, 4]: the batch and the output maps are
  // parallel (data and output-channel parallelism), the input channels a reduction shared by x
  // and w (partial sums, like matmul's k), every spatial and kernel dim whole.
  OpShardingRule r = ruleOf(R"(
    func.func @f(%x: tensor<4x6x9x9xf32>, %w: tensor<8x6x3x3xf32>) -> tensor<4x8x4x4xf32> {
      %y = graph.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<4x6x9x9xf32>, tensor<8x6x3x3xf32>) -> tensor<4x8x4x4xf32>
      return %y : tensor<4x8x4x4xf32>
    })");
  const TensorFactors &x = r.operands[0], &w = r.operands[1], &y = r.results[0];
  EXPECT_EQ(x[0], y[0]);
  EXPECT_EQ(w[0], y[1]);
  EXPECT_EQ(x[1], w[1]);
  EXPECT_EQ(r.factors[x[0][0]].kind, FactorKind::Parallel);
  EXPECT_EQ(r.factors[w[0][0]].kind, FactorKind::Parallel);
  EXPECT_EQ(r.factors[x[1][0]].kind, FactorKind::Parallel); // a reduction: y lacks it
  for (const TensorFactors *t : {&x, &w, &y})
    for (size_t d = 2; d < 4; ++d)
      EXPECT_EQ(r.factors[(*t)[d][0]].kind, FactorKind::Whole);
  EXPECT_TRUE(r.linear[0] && r.linear[1]);
  // Grouped: the channels and maps stay whole (a group's inputs and outputs sit together).
  OpShardingRule grouped = ruleOf(R"(
    func.func @f(%x: tensor<4x6x9x9xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<4x8x7x7xf32> {
      %y = graph.conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<4x6x9x9xf32>, tensor<8x3x3x3xf32>) -> tensor<4x8x7x7xf32>
      return %y : tensor<4x8x7x7xf32>
    })");
  EXPECT_EQ(grouped.factors[grouped.operands[0][0][0]].kind, FactorKind::Parallel);
  EXPECT_EQ(grouped.factors[grouped.operands[0][1][0]].kind, FactorKind::Whole);
  EXPECT_EQ(grouped.factors[grouped.results[0][1][0]].kind, FactorKind::Whole);
}

TEST_F(OpRules, ConvGradientsSumWhatTheirResultLacks) {
  // conv_grad_weight: dw lacks the batch, which x and dy share (a pending sum over dp: the
  // data-parallel gradient reduction); conv_grad_input: dx lacks the maps dy and w share.
  OpShardingRule dw = ruleOf(R"(
    func.func @f(%x: tensor<4x6x9x9xf32>, %dy: tensor<4x8x4x4xf32>) -> tensor<8x6x3x3xf32> {
      %g = graph.conv_grad_weight %x, %dy {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<4x6x9x9xf32>, tensor<4x8x4x4xf32>) -> tensor<8x6x3x3xf32>
      return %g : tensor<8x6x3x3xf32>
    })");
  EXPECT_EQ(dw.operands[0][0], dw.operands[1][0]);
  for (const DimFactors &d : dw.results[0])
    EXPECT_NE(d, dw.operands[0][0]);
  EXPECT_EQ(dw.results[0][0], dw.operands[1][1]);
  EXPECT_EQ(dw.results[0][1], dw.operands[0][1]);
  OpShardingRule dx = ruleOf(R"(
    func.func @f(%dy: tensor<4x8x4x4xf32>, %w: tensor<8x6x3x3xf32>) -> tensor<4x6x9x9xf32> {
      %g = graph.conv_grad_input %dy, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<4x8x4x4xf32>, tensor<8x6x3x3xf32>) -> tensor<4x6x9x9xf32>
      return %g : tensor<4x6x9x9xf32>
    })");
  EXPECT_EQ(dx.operands[0][1], dx.operands[1][0]);
  EXPECT_EQ(dx.results[0][0], dx.operands[0][0]);
  EXPECT_EQ(dx.results[0][1], dx.operands[1][1]);
}

TEST_F(OpRules, PoolsSplitBatchAndChannelsOnly) {
  OpShardingRule r = ruleOf(R"(
    func.func @f(%x: tensor<4x6x9x9xf32>) -> tensor<4x6x5x5xf32> {
      %y = graph.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<4x6x9x9xf32>) -> tensor<4x6x5x5xf32>
      return %y : tensor<4x6x5x5xf32>
    })");
  EXPECT_EQ(r.operands[0][0], r.results[0][0]);
  EXPECT_EQ(r.operands[0][1], r.results[0][1]);
  EXPECT_EQ(r.factors[r.operands[0][1][0]].kind, FactorKind::Parallel);
  EXPECT_EQ(r.factors[r.operands[0][2][0]].kind, FactorKind::Whole);
  EXPECT_EQ(r.factors[r.results[0][3][0]].kind, FactorKind::Whole);
  EXPECT_FALSE(r.linear[0]); // a maximum is not linear
  OpShardingRule avg = ruleOf(R"(
    func.func @f(%x: tensor<4x6x9x9xf32>) -> tensor<4x6x5x5xf32> {
      %y = graph.avg_pool %x {ceil_mode = false, count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<4x6x9x9xf32>) -> tensor<4x6x5x5xf32>
      return %y : tensor<4x6x5x5xf32>
    })");
  EXPECT_TRUE(avg.linear[0]);
}

TEST_F(OpRules, AnEqualSplitMakesItsPartsTheMinorFactorOfTheAxis) {
  // [2, 24] -> 3 x [2, 8]: the axis is {3 (whole), 8}, each part {8}, one factor for all.
  OpShardingRule r = ruleOf(R"(
    func.func @f(%a: tensor<2x24xf32>) -> tensor<2x8xf32> {
      %q, %k, %v = graph.split %a {axis = 1 : i64, sizes = array<i64: 8, 8, 8>} : (tensor<2x24xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
      return %q : tensor<2x8xf32>
    })");
  EXPECT_EQ(factorSizes(r, r.operands[0]), (Sizes{{2}, {3, 8}}));
  EXPECT_EQ(r.factors[r.operands[0][1][0]].kind, FactorKind::Whole);
  EXPECT_EQ(r.factors[r.operands[0][1][1]].kind, FactorKind::Parallel);
  for (const TensorFactors &part : r.results)
    EXPECT_EQ(part[1], (DimFactors{r.operands[0][1][1]}));
  EXPECT_TRUE(r.stridedParts);
  // Unequal parts (a grouped-query K/V fused with Q) keep the axis whole.
  OpShardingRule unequal = ruleOf(R"(
    func.func @f(%a: tensor<2x16xf32>) -> tensor<2x8xf32> {
      %q, %k, %v = graph.split %a {axis = 1 : i64, sizes = array<i64: 8, 4, 4>} : (tensor<2x16xf32>) -> (tensor<2x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
      return %q : tensor<2x8xf32>
    })");
  EXPECT_EQ(factorSizes(unequal, unequal.operands[0]), (Sizes{{2}, {16}}));
  EXPECT_EQ(unequal.factors[unequal.operands[0][1][0]].kind, FactorKind::Whole);
  EXPECT_FALSE(unequal.stridedParts);
}

TEST_F(OpRules, AnEqualConcatJoinsItsPartsAsTheMinorFactor) {
  OpShardingRule r = ruleOf(R"(
    func.func @f(%a: tensor<2x8xf32>, %b: tensor<2x8xf32>) -> tensor<2x16xf32> {
      %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
      return %c : tensor<2x16xf32>
    })");
  EXPECT_EQ(factorSizes(r, r.results[0]), (Sizes{{2}, {2, 8}}));
  EXPECT_EQ(r.operands[0][1], (DimFactors{r.results[0][1][1]}));
  EXPECT_EQ(r.operands[1][1], (DimFactors{r.results[0][1][1]}));
  EXPECT_TRUE(r.sumsOperands);
}

TEST_F(OpRules, GemmSumsKOnlyWithoutABias) {
  // a @ b alone: a split k is a pending sum.
  OpShardingRule plain = ruleOf(R"(
    func.func @f(%a: tensor<3x5xf32>, %b: tensor<7x5xf32>) -> tensor<3x7xf32> {
      %c = graph.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<3x5xf32>, tensor<7x5xf32>) -> tensor<3x7xf32>
      return %c : tensor<3x7xf32>
    })");
  EXPECT_EQ(plain.factors[plain.operands[0][1][0]].kind, FactorKind::Parallel);
  EXPECT_EQ(plain.operands[1][1][0], plain.operands[0][1][0]);
  EXPECT_TRUE(plain.linear[0]);
  // a @ b + c: the partial sums would each add c, so k stays whole.
  OpShardingRule biased = ruleOf(R"(
    func.func @f(%a: tensor<3x5xf32>, %b: tensor<7x5xf32>, %c: tensor<7xf32>) -> tensor<3x7xf32> {
      %y = graph.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<3x5xf32>, tensor<7x5xf32>, tensor<7xf32>) -> tensor<3x7xf32>
      return %y : tensor<3x7xf32>
    })");
  EXPECT_EQ(biased.factors[biased.operands[0][1][0]].kind, FactorKind::Whole);
  EXPECT_EQ(biased.factors[biased.operands[0][0][0]].kind, FactorKind::Parallel);
  EXPECT_EQ(biased.operands[2][0][0], biased.results[0][1][0]); // the bias has the columns
}

TEST_F(OpRules, BroadcastDimensionsHaveNoFactor) {
  OpShardingRule r = ruleOf(R"(
    func.func @f(%a: tensor<4x1x8xf32>, %b: tensor<6x8xf32>) -> tensor<4x6x8xf32> {
      %c = graph.add %a, %b : (tensor<4x1x8xf32>, tensor<6x8xf32>) -> tensor<4x6x8xf32>
      return %c : tensor<4x6x8xf32>
    })");
  EXPECT_TRUE(r.operands[0][1].empty());
  EXPECT_EQ(r.operands[1][0][0], r.results[0][1][0]);
  EXPECT_TRUE(r.sumsOperands);
}

TEST_F(OpRules, SoftmaxAxisAndLayerNormAxesStayWhole) {
  OpShardingRule s = ruleOf(R"(
    func.func @f(%a: tensor<4x6xf32>) -> tensor<4x6xf32> {
      %c = graph.softmax %a {axis = 1 : i64} : tensor<4x6xf32>
      return %c : tensor<4x6xf32>
    })");
  EXPECT_EQ(s.factors[s.operands[0][0][0]].kind, FactorKind::Parallel);
  EXPECT_EQ(s.factors[s.operands[0][1][0]].kind, FactorKind::Whole);
  OpShardingRule ln = ruleOf(R"(
    func.func @f(%x: tensor<4x6x8xf32>, %g: tensor<8xf32>) -> tensor<4x6x8xf32> {
      %y, %m, %r = graph.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x6x8xf32>, tensor<8xf32>) -> (tensor<4x6x8xf32>, tensor<4x6x1xf32>, tensor<4x6x1xf32>)
      return %y : tensor<4x6x8xf32>
    })");
  EXPECT_EQ(ln.factors[ln.operands[0][2][0]].kind, FactorKind::Whole);
  EXPECT_EQ(ln.operands[1][0][0], ln.operands[0][2][0]); // the scale has the normalised dim
  EXPECT_EQ(ln.factors[ln.operands[0][1][0]].kind, FactorKind::Parallel);
}

TEST_F(OpRules, LossesSumTheirRowsAndPickTheirClassesByLabel) {
  OpShardingRule r = ruleOf(R"(
    func.func @f(%s: tensor<4x5xf32>, %y: tensor<4xi64>) -> tensor<f32> {
      %l, %p = graph.softmax_cross_entropy_loss %s, %y {reduction = "sum"} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
      return %l : tensor<f32>
    })");
  EXPECT_TRUE(r.results[0].empty()); // the scalar loss: the rows are summed
  EXPECT_EQ(r.factors[r.operands[0][0][0]].kind, FactorKind::Parallel);
  // The classes split into index blocks: each device picks the labels in its block.
  int classes = r.operands[0][1][0];
  EXPECT_EQ(r.factors[classes].kind, FactorKind::Parallel);
  EXPECT_EQ(r.indexedFactors, (llvm::SmallVector<int, 1>{classes}));
  EXPECT_EQ(r.operands[1][0][0], r.operands[0][0][0]);
  // Class weights are indexed by label too, but the weighted mean's divisor is a sum over
  // every class: the classes stay whole.
  OpShardingRule weighted = ruleOf(R"(
    func.func @f(%s: tensor<4x5xf32>, %y: tensor<4xi64>, %w: tensor<5xf32>) -> tensor<f32> {
      %l, %p = graph.softmax_cross_entropy_loss %s, %y, %w {reduction = "sum"} : (tensor<4x5xf32>, tensor<4xi64>, tensor<5xf32>) -> (tensor<f32>, tensor<4x5xf32>)
      return %l : tensor<f32>
    })");
  EXPECT_EQ(weighted.factors[weighted.operands[0][1][0]].kind, FactorKind::Whole);
  EXPECT_TRUE(weighted.indexedFactors.empty());
  // A mean over labels with ignore_index divides by a count no device has: rows whole.
  OpShardingRule mean = ruleOf(R"(
    func.func @f(%s: tensor<4x5xf32>, %y: tensor<4xi64>) -> tensor<f32> {
      %l, %p = graph.softmax_cross_entropy_loss %s, %y {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
      return %l : tensor<f32>
    })");
  EXPECT_EQ(mean.factors[mean.operands[0][0][0]].kind, FactorKind::Whole);
}

TEST_F(OpRules, GatherReducesOverItsIndexedAxis) {
  // A device holding a block of the table's rows picks the indices in its block and leaves
  // zeros elsewhere: the gathered rows are a pending sum over the devices of the split.
  OpShardingRule r = ruleOf(R"(
    func.func @f(%t: tensor<10x8xf32>, %i: tensor<4x6xi64>) -> tensor<4x6x8xf32> {
      %g = graph.gather %t, %i {axis = 0 : i64} : (tensor<10x8xf32>, tensor<4x6xi64>) -> tensor<4x6x8xf32>
      return %g : tensor<4x6x8xf32>
    })");
  int rows = r.operands[0][0][0];
  EXPECT_EQ(r.factors[rows].kind, FactorKind::Parallel);
  EXPECT_EQ(r.factors[rows].partial, PartialKind::Sum);
  EXPECT_EQ(r.indexedFactors, (llvm::SmallVector<int, 1>{rows}));
  for (const DimFactors &dim : r.results[0]) // the result lacks it: a reduction
    EXPECT_FALSE(llvm::is_contained(dim, rows));
  EXPECT_EQ(r.results[0][2][0], r.operands[0][1][0]); // the features
  EXPECT_EQ(r.results[0][0][0], r.operands[1][0][0]); // the index dims
}

TEST_F(OpRules, GatherGradSumsOverTheIndices) {
  OpShardingRule r = ruleOf(R"(
    func.func @f(%dy: tensor<4x6x8xf32>, %i: tensor<4x6xi64>) -> tensor<10x8xf32> {
      %g = graph.gather_grad %dy, %i {axis = 0 : i64} : (tensor<4x6x8xf32>, tensor<4x6xi64>) -> tensor<10x8xf32>
      return %g : tensor<10x8xf32>
    })");
  // The table's rows: each device scatters into its own block of them.
  int rows = r.results[0][0][0];
  EXPECT_EQ(r.factors[rows].kind, FactorKind::Parallel);
  EXPECT_EQ(r.indexedFactors, (llvm::SmallVector<int, 1>{rows}));
  EXPECT_EQ(r.results[0][1][0], r.operands[0][2][0]);              // the features
  EXPECT_EQ(r.operands[1][0][0], r.operands[0][0][0]);             // index dims, summed
}

} // namespace
} // namespace shardc::graph
