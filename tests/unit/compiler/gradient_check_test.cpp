// Every gradient rule, checked numerically: a small graph is differentiated with the op's
// DifferentiableOpInterface rule, then both the analytic gradient and the loss at perturbed
// parameters are computed by folding the graph to constants -- which runs the runtime's own
// CPU kernels. The check is directional: for random directions v, the central difference
// (L(p + eps v) - L(p - eps v)) / 2 eps must match sum(grad * v).
#include "passes/Passes.h"
#include "shardc/Autodiff/ReverseMode.h"
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir;
using namespace shardc;

namespace {

struct GradCase {
  const char *name;
  // A func.func @f whose f32 arguments are the parameters and whose first result is the
  // tensor to differentiate; the harness turns it into the scalar sum(result * cotangent).
  const char *ir;
  // Keeps random parameter values away from kinks and domain edges (|x| >= this).
  float minMagnitude = 0.0f;
};

class GradientChecker {
public:
  explicit GradientChecker(const GradCase &c) : case_(c) {
    registry_.insert<func::FuncDialect, graph::GraphDialect>();
    ctx_.appendDialectRegistry(registry_);
    ctx_.loadAllAvailableDialects();
    ctx_.disableMultithreading();
  }

  // Random parameter values and cotangent, fixed per case.
  void initialise(std::mt19937 &rng) {
    OwningOpRef<ModuleOp> module = parse();
    func::FuncOp f = *module->getOps<func::FuncOp>().begin();
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (BlockArgument arg : f.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      std::vector<float> values(type.getNumElements());
      for (float &v : values) {
        v = normal(rng);
        if (std::fabs(v) < case_.minMagnitude)
          v = v < 0 ? -case_.minMagnitude - std::fabs(v) : case_.minMagnitude + v;
      }
      params_.push_back(values);
    }
    auto out = cast<RankedTensorType>(f.getFunctionType().getResult(0));
    cotangent_.resize(out.getNumElements());
    for (float &v : cotangent_)
      v = normal(rng);
  }

  // sum(grad . direction) from the gradient rules.
  double analytic(const std::vector<std::vector<float>> &direction) {
    OwningOpRef<ModuleOp> module = parse();
    func::FuncOp f = *module->getOps<func::FuncOp>().begin();
    Value loss = buildLoss(f);
    Block &body = f.getBody().front();
    SmallVector<Value> wrt(body.getArguments().begin(), body.getArguments().end());
    FailureOr<SmallVector<Value>> grads = buildGradients(body, loss, wrt);
    EXPECT_TRUE(succeeded(grads)) << case_.name;
    if (failed(grads))
      return NAN;
    auto values = evaluate(f, *grads);
    double sum = 0.0;
    for (size_t p = 0; p < values.size(); ++p)
      for (size_t i = 0; i < values[p].size(); ++i)
        sum += double(values[p][i]) * direction[p][i];
    return sum;
  }

  // The loss at params + scale * direction.
  double lossAt(const std::vector<std::vector<float>> &direction, float scale) {
    OwningOpRef<ModuleOp> module = parse();
    func::FuncOp f = *module->getOps<func::FuncOp>().begin();
    Value loss = buildLoss(f);
    auto values = evaluate(f, {loss}, &direction, scale);
    return values.empty() ? NAN : values[0][0];
  }

  const std::vector<std::vector<float>> &params() const { return params_; }

private:
  OwningOpRef<ModuleOp> parse() {
    auto module = parseSourceString<ModuleOp>(case_.ir, &ctx_);
    EXPECT_TRUE(module) << case_.name << ": the test IR does not parse";
    return module;
  }

  // Replaces the result by sum(result * cotangent) and returns that scalar.
  Value buildLoss(func::FuncOp f) {
    Operation *ret = f.getBody().front().getTerminator();
    OpBuilder b(ret);
    Value out = ret->getOperand(0);
    auto type = cast<RankedTensorType>(out.getType());
    Value c = b.create<graph::ConstantOp>(
        f.getLoc(), DenseElementsAttr::get(type, ArrayRef<float>(cotangent_)));
    Value prod = b.create<graph::MulOp>(f.getLoc(), out, c);
    if (type.getRank() > 0) {
      SmallVector<int64_t> axes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        axes.push_back(d);
      prod = b.create<graph::ReduceSumOp>(f.getLoc(), prod, b.getDenseI64ArrayAttr(axes),
                                          b.getBoolAttr(false));
    }
    return prod;
  }

  // Binds the parameters (+ scale * direction) as constants, returns `values` evaluated by
  // folding the function.
  std::vector<std::vector<float>> evaluate(func::FuncOp f, ArrayRef<Value> values,
                                           const std::vector<std::vector<float>> *direction = nullptr,
                                           float scale = 0.0f) {
    Block &body = f.getBody().front();
    Operation *ret = body.getTerminator();
    OpBuilder b(ret);
    b.create<func::ReturnOp>(ret->getLoc(), values);
    ret->erase();
    SmallVector<Type> types;
    for (Value v : values)
      types.push_back(v.getType());
    f.setFunctionType(FunctionType::get(&ctx_, f.getArgumentTypes(), types));
    f.setAllResultAttrs(ArrayRef<DictionaryAttr>{});

    b.setInsertionPointToStart(&body);
    for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
      std::vector<float> v = params_[i];
      if (direction)
        for (size_t k = 0; k < v.size(); ++k)
          v[k] += scale * (*direction)[i][k];
      auto type = cast<RankedTensorType>(arg.getType());
      Value c = b.create<graph::ConstantOp>(f.getLoc(),
                                            DenseElementsAttr::get(type, ArrayRef<float>(v)));
      arg.replaceAllUsesWith(c);
    }
    PassManager pm(&ctx_);
    pm.nest<func::FuncOp>().addPass(createFoldConstants());
    EXPECT_TRUE(succeeded(pm.run(f->getParentOfType<ModuleOp>()))) << case_.name;

    std::vector<std::vector<float>> out;
    for (Value v : body.getTerminator()->getOperands()) {
      DenseElementsAttr attr;
      if (!matchPattern(v, m_Constant(&attr))) {
        ADD_FAILURE() << case_.name << ": result did not fold to a constant";
        return {};
      }
      auto range = attr.getValues<float>();
      out.emplace_back(range.begin(), range.end());
    }
    return out;
  }

  const GradCase &case_;
  DialectRegistry registry_;
  MLIRContext ctx_;
  std::vector<std::vector<float>> params_;
  std::vector<float> cotangent_;
};

class GradientCheck : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradientCheck, MatchesCentralDifferences) {
  const GradCase &c = GetParam();
  GradientChecker checker(c);
  std::mt19937 rng(1234);
  checker.initialise(rng);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // eps trades truncation (eps^2) against float32 rounding of the loss (~1e-7 |L| / eps).
  const float eps = 1e-2f;
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<std::vector<float>> dir;
    for (const auto &p : checker.params()) {
      dir.emplace_back(p.size());
      for (float &v : dir.back())
        v = normal(rng);
    }
    double numeric = (checker.lossAt(dir, eps) - checker.lossAt(dir, -eps)) / (2.0 * eps);
    double exact = checker.analytic(dir);
    double tolerance = 2e-2 * std::max(1.0, std::fabs(numeric));
    EXPECT_NEAR(exact, numeric, tolerance) << c.name << ", direction " << trial;
  }
}

// Shapes are chosen so that broadcasting is exercised wherever the op broadcasts.
const GradCase kCases[] = {
    {"add_broadcast", R"(func.func @f(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
       %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
       return %0 : tensor<2x3xf32> })"},
    {"sub_broadcast", R"(func.func @f(%a: tensor<2x1xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
       %0 = graph.sub %a, %b : (tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
       return %0 : tensor<2x3xf32> })"},
    {"mul_broadcast", R"(func.func @f(%a: tensor<2x3xf32>, %b: tensor<f32>) -> tensor<2x3xf32> {
       %0 = graph.mul %a, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
       return %0 : tensor<2x3xf32> })"},
    {"div_broadcast", R"(func.func @f(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
       %0 = graph.div %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
       return %0 : tensor<2x3xf32> })", 0.5f},
    {"pow", R"(func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
       %sq = graph.mul %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
       %one = graph.constant dense<1.0> : tensor<f32>
       %base = graph.add %sq, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
       %0 = graph.pow %base, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
       return %0 : tensor<4xf32> })"},
    {"max_min", R"(func.func @f(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
       %0 = graph.max %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
       %1 = graph.min %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
       %2 = graph.add %0, %1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
       return %2 : tensor<2x3xf32> })"},
    {"unary_chain", R"(func.func @f(%a: tensor<6xf32>) -> tensor<6xf32> {
       %0 = graph.tanh %a : tensor<6xf32>
       %1 = graph.sigmoid %0 : tensor<6xf32>
       %2 = graph.exp %1 : tensor<6xf32>
       %3 = graph.log %2 : tensor<6xf32>
       %4 = graph.erf %3 : tensor<6xf32>
       %5 = graph.neg %4 : tensor<6xf32>
       %6 = graph.identity %5 : tensor<6xf32>
       return %6 : tensor<6xf32> })"},
    // softplus over both signs (its large-|x| branch included); mod with fmod: a in about
    // [7, 13] over divisors in [3, 5.5], so that trunc(a / b) is 1..4 and b's gradient is not 0.
    {"softplus", R"(func.func @f(%a: tensor<6xf32>) -> tensor<6xf32> {
       %k = graph.constant dense<4.0> : tensor<f32>
       %s = graph.mul %a, %k : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
       %0 = graph.softplus %s : tensor<6xf32>
       return %0 : tensor<6xf32> })"},
    {"mod_fmod_broadcast", R"(func.func @f(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
       %ten = graph.constant dense<10.0> : tensor<f32>
       %four = graph.constant dense<4.0> : tensor<f32>
       %half = graph.constant dense<0.5> : tensor<f32>
       %sa = graph.add %a, %ten : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
       %hb = graph.mul %b, %half : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
       %sb = graph.add %hb, %four : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
       %0 = graph.mod %sa, %sb {fmod = true} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
       return %0 : tensor<2x3xf32> })"},
    {"pad_crop", R"(func.func @f(%a: tensor<2x5xf32>) -> tensor<3x6xf32> {
       %0 = graph.pad %a {pads = array<i64: 1, -1, 0, 2>, value = 0.5 : f64} : (tensor<2x5xf32>) -> tensor<3x6xf32>
       %1 = graph.mul %0, %0 : (tensor<3x6xf32>, tensor<3x6xf32>) -> tensor<3x6xf32>
       return %1 : tensor<3x6xf32> })"},
    // conv: both operands differentiated (conv_grad_input, conv_grad_weight); strided, padded,
    // dilated and grouped 2-D, and a 1-D one.
    {"conv2d_grouped_strided_dilated", R"(func.func @f(%x: tensor<2x4x7x6xf32>, %w: tensor<6x2x3x2xf32>) -> tensor<2x6x3x3xf32> {
       %0 = graph.conv %x, %w {dilations = array<i64: 2, 1>, group = 2 : i64, pads = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x7x6xf32>, tensor<6x2x3x2xf32>) -> tensor<2x6x3x3xf32>
       return %0 : tensor<2x6x3x3xf32> })"},
    {"conv1d", R"(func.func @f(%x: tensor<2x3x9xf32>, %w: tensor<4x3x3xf32>) -> tensor<2x4x4xf32> {
       %0 = graph.conv %x, %w {dilations = array<i64: 1>, group = 1 : i64, pads = array<i64: 1, 0>, strides = array<i64: 2>} : (tensor<2x3x9xf32>, tensor<4x3x3xf32>) -> tensor<2x4x4xf32>
       return %0 : tensor<2x4x4xf32> })"},
    // Overlapping windows, one hanging past the input (ceil mode). max_pool is differentiable
    // away from ties; the case is small so that no window's two largest values lie within the
    // finite-difference step of each other (a tie would switch the maximum).
    {"max_pool_overlapping_ceil", R"(func.func @f(%x: tensor<1x2x4x3xf32>) -> tensor<1x2x3x2xf32> {
       %0 = graph.max_pool %x {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x4x3xf32>) -> tensor<1x2x3x2xf32>
       return %0 : tensor<1x2x3x2xf32> })"},
    {"avg_pool_count_include_pad", R"(func.func @f(%x: tensor<2x3x6x5xf32>) -> tensor<2x3x4x3xf32> {
       %0 = graph.avg_pool %x {ceil_mode = true, count_include_pad = true, kernel_shape = array<i64: 3, 2>, pads = array<i64: 1, 0, 1, 0>, strides = array<i64: 2, 2>} : (tensor<2x3x6x5xf32>) -> tensor<2x3x4x3xf32>
       return %0 : tensor<2x3x4x3xf32> })"},
    {"avg_pool_exclude_pad_1d", R"(func.func @f(%x: tensor<2x3x7xf32>) -> tensor<2x3x4xf32> {
       %0 = graph.avg_pool %x {ceil_mode = false, count_include_pad = false, kernel_shape = array<i64: 3>, pads = array<i64: 1, 1>, strides = array<i64: 2>} : (tensor<2x3x7xf32>) -> tensor<2x3x4xf32>
       return %0 : tensor<2x3x4xf32> })"},
    {"cum_sum_exclusive_reverse", R"(func.func @f(%a: tensor<3x4xf32>) -> tensor<3x4xf32> {
       %0 = graph.cum_sum %a {axis = 1 : i64, exclusive = true, reverse = true} : tensor<3x4xf32>
       %1 = graph.cum_sum %0 {axis = 0 : i64, exclusive = false, reverse = false} : tensor<3x4xf32>
       %2 = graph.mul %1, %a : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
       return %2 : tensor<3x4xf32> })"},
    {"sin_cos", R"(func.func @f(%a: tensor<6xf32>) -> tensor<6xf32> {
       %0 = graph.sin %a : tensor<6xf32>
       %1 = graph.cos %a : tensor<6xf32>
       %2 = graph.mul %0, %1 : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
       %3 = graph.cos %2 : tensor<6xf32>
       return %3 : tensor<6xf32> })"},
    {"sqrt_reciprocal", R"(func.func @f(%a: tensor<5xf32>) -> tensor<5xf32> {
       %sq = graph.mul %a, %a : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
       %half = graph.constant dense<0.5> : tensor<f32>
       %pos = graph.add %sq, %half : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
       %0 = graph.sqrt %pos : tensor<5xf32>
       %1 = graph.reciprocal %0 : tensor<5xf32>
       return %1 : tensor<5xf32> })"},
    {"abs_relu", R"(func.func @f(%a: tensor<6xf32>) -> tensor<6xf32> {
       %0 = graph.abs %a : tensor<6xf32>
       %1 = graph.relu %a : tensor<6xf32>
       %2 = graph.add %0, %1 : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
       return %2 : tensor<6xf32> })", 0.1f},
    {"where_clip_cast", R"(func.func @f(%a: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<6xf32> {
       %c = graph.constant dense<[true, false, true, true, false, false]> : tensor<6xi1>
       %0 = graph.where %c, %a, %b : (tensor<6xi1>, tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
       %lo = graph.constant dense<-0.75> : tensor<f32>
       %hi = graph.constant dense<0.8> : tensor<f32>
       %1 = graph.clip %0, %lo, %hi : (tensor<6xf32>, tensor<f32>, tensor<f32>) -> tensor<6xf32>
       %2 = graph.cast %1 {to = f32} : (tensor<6xf32>) -> tensor<6xf32>
       return %2 : tensor<6xf32> })", 0.05f},
    {"matmul_batched_broadcast", R"(func.func @f(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
       %0 = graph.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
       return %0 : tensor<2x3x5xf32> })"},
    {"matmul_vector_left", R"(func.func @f(%a: tensor<4xf32>, %b: tensor<2x4x3xf32>) -> tensor<2x3xf32> {
       %0 = graph.matmul %a, %b : (tensor<4xf32>, tensor<2x4x3xf32>) -> tensor<2x3xf32>
       return %0 : tensor<2x3xf32> })"},
    {"matmul_vector_right", R"(func.func @f(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3xf32> {
       %0 = graph.matmul %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
       return %0 : tensor<3xf32> })"},
    // Operands read transposed (shardc-fold-transposes): batched lhs, broadcast rhs.
    {"matmul_transposed_operands", R"(func.func @f(%a: tensor<2x4x3xf32>, %b: tensor<5x4xf32>) -> tensor<2x3x5xf32> {
       %0 = graph.matmul %a, %b {trans_lhs, trans_rhs} : (tensor<2x4x3xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
       return %0 : tensor<2x3x5xf32> })"},
    {"gemm_transposed", R"(func.func @f(%a: tensor<4x3xf32>, %b: tensor<5x4xf32>, %c: tensor<5xf32>) -> tensor<3x5xf32> {
       %0 = graph.gemm %a, %b, %c {alpha = 0.5 : f32, beta = 2.0 : f32, trans_a = true, trans_b = true} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
       return %0 : tensor<3x5xf32> })"},
    {"reduce_sum_mean", R"(func.func @f(%a: tensor<2x3x4xf32>) -> tensor<3xf32> {
       %0 = graph.reduce_sum %a {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
       %1 = graph.reduce_mean %a {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
       %2 = graph.reshape %1 : (tensor<1x3x1xf32>) -> tensor<3xf32>
       %3 = graph.mul %0, %2 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
       return %3 : tensor<3xf32> })"},
    {"shape_ops", R"(func.func @f(%a: tensor<2x3x4xf32>, %b: tensor<2x2x4xf32>) -> tensor<4x10xf32> {
       %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x2x4xf32>) -> tensor<2x5x4xf32>
       %1 = graph.transpose %0 {perm = array<i64: 2, 0, 1>} : (tensor<2x5x4xf32>) -> tensor<4x2x5xf32>
       %2 = graph.flatten %1 : (tensor<4x2x5xf32>) -> tensor<4x10xf32>
       %3 = graph.unsqueeze %2 : (tensor<4x10xf32>) -> tensor<1x4x10xf32>
       %4 = graph.squeeze %3 : (tensor<1x4x10xf32>) -> tensor<4x10xf32>
       return %4 : tensor<4x10xf32> })"},
    {"split_expand_trilu", R"(func.func @f(%a: tensor<4x3xf32>, %b: tensor<1x3xf32>) -> tensor<3x3xf32> {
       %x, %y = graph.split %a {axis = 0 : i64, sizes = array<i64: 1, 3>} : (tensor<4x3xf32>) -> (tensor<1x3xf32>, tensor<3x3xf32>)
       %e = graph.expand %b : (tensor<1x3xf32>) -> tensor<3x3xf32>
       %s = graph.add %y, %e : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
       %t = graph.trilu %s {k = 0 : i64, upper = true} : tensor<3x3xf32>
       return %t : tensor<3x3xf32> })"},
    // Ops whose rule emits a fused backward op (a kernel of its own).
    {"gelu_both", R"(func.func @f(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
       %0 = graph.gelu %a {approximate = "none"} : tensor<2x5xf32>
       %1 = graph.gelu %0 {approximate = "tanh"} : tensor<2x5xf32>
       return %1 : tensor<2x5xf32> })"},
    {"layer_norm", R"(func.func @f(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
       %y, %m, %i = graph.layer_norm %x, %s, %b {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
       return %y : tensor<2x3x4xf32> })"},
    {"softmax_log_softmax", R"(func.func @f(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
       %0 = graph.softmax %x {axis = 1 : i64} : tensor<3x5xf32>
       %1 = graph.log_softmax %x {axis = 0 : i64} : tensor<3x5xf32>
       %2 = graph.add %0, %1 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
       return %2 : tensor<3x5xf32> })"},
    {"reduce_max", R"(func.func @f(%x: tensor<3x4xf32>) -> tensor<3x1xf32> {
       %0 = graph.reduce_max %x {axes = array<i64: 1>, keepdims = true} : (tensor<3x4xf32>) -> tensor<3x1xf32>
       return %0 : tensor<3x1xf32> })"},
    {"slice_negative_steps", R"(func.func @f(%x: tensor<4x5xf32>) -> tensor<2x2xf32> {
       %0 = graph.slice %x {starts = array<i64: 3, 0>, ends = array<i64: 0, 4>, steps = array<i64: -2, 3>} : (tensor<4x5xf32>) -> tensor<2x2xf32>
       return %0 : tensor<2x2xf32> })"},
    {"gather_repeated_indices", R"(func.func @f(%e: tensor<5x3xf32>) -> tensor<2x3x3xf32> {
       %i = graph.constant dense<[[1, 4, 1], [0, -1, 1]]> : tensor<2x3xi64>
       %0 = graph.gather %e, %i {axis = 0 : i64} : (tensor<5x3xf32>, tensor<2x3xi64>) -> tensor<2x3x3xf32>
       return %0 : tensor<2x3x3xf32> })"},
    {"cross_entropy_mean_ignore", R"(func.func @f(%s: tensor<4x5xf32>) -> tensor<f32> {
       %l = graph.constant dense<[1, -100, 4, 0]> : tensor<4xi64>
       %loss, %lp = graph.softmax_cross_entropy_loss %s, %l {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
       return %loss : tensor<f32> })"},
    {"cross_entropy_weighted_none_3d", R"(func.func @f(%s: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
       %l = graph.constant dense<[[0, 2, 1, 2], [1, 1, 0, 2]]> : tensor<2x4xi64>
       %w = graph.constant dense<[0.5, 2.0, 1.0]> : tensor<3xf32>
       %loss, %lp = graph.softmax_cross_entropy_loss %s, %l, %w {reduction = "none"} : (tensor<2x3x4xf32>, tensor<2x4xi64>, tensor<3xf32>) -> (tensor<2x4xf32>, tensor<2x3x4xf32>)
       return %loss : tensor<2x4xf32> })"},
    // Training dropout with a fixed key: linear in x given the mask; the VJP reuses the mask.
    {"dropout_training", R"(func.func @f(%a: tensor<3x5xf32>) -> tensor<3x5xf32> {
       %seed = graph.constant dense<42> : tensor<i64>
       %step = graph.constant dense<3> : tensor<i64>
       %0, %m = graph.dropout %a, %seed, %step {ratio = 3.0e-01 : f32, stream = 1 : i64, training} : (tensor<3x5xf32>, tensor<i64>, tensor<i64>) -> (tensor<3x5xf32>, tensor<3x5xi1>)
       return %0 : tensor<3x5xf32> })"},
    {"nll_weighted_sum", R"(func.func @f(%x: tensor<4x3xf32>) -> tensor<f32> {
       %t = graph.constant dense<[2, 0, 1, 1]> : tensor<4xi64>
       %w = graph.constant dense<[1.5, 0.5, 1.0]> : tensor<3xf32>
       %lp = graph.log_softmax %x {axis = 1 : i64} : tensor<4x3xf32>
       %0 = graph.nll_loss %lp, %t, %w {reduction = "sum"} : (tensor<4x3xf32>, tensor<4xi64>, tensor<3xf32>) -> tensor<f32>
       return %0 : tensor<f32> })"},
};

INSTANTIATE_TEST_SUITE_P(Ops, GradientCheck, ::testing::ValuesIn(kCases),
                         [](const auto &info) { return std::string(info.param.name); });

} // namespace
