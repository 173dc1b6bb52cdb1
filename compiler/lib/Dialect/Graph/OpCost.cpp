//===- OpCost.cpp - FLOPs and bytes of the graph ops (CostInterface.td) -----------------===//
//
// The products count 2 FLOPs per multiply-add, on the types the op has:
//   matmul            [..., M, K] x [..., K, N] -> [..., M, N]: 2 * numel(result) * K
//   gemm              2 * M * N * K, plus M * N for the C term
//   conv              2 * numel(result) * (C / group) * prod(kernel): every output element is
//                     a dot product over one group's channels and the window
//   conv_grad_input   the same products as the forward conv (a transposed convolution of dy)
//   conv_grad_weight  the same again (dy correlated with the input)
//   attention         q k^T and p v: 2 * rows * S * Sk * (D + Dv), rows the leading dims
//   attention_grad    the recomputed q k^T, then dv, dp, dq and dk (FlashAttention-2's
//                     backward): 2 * rows * S * Sk * (3 D + 2 Dv)
// A causal mask halves what the kernels compute, but the count is the full product's, as
// Megatron's and PaLM's model-FLOPs formulas count it.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/OpCost.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <cstdio>

using namespace mlir;

namespace shardc::graph {

namespace {

uint64_t numel(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  return ranked && ranked.hasStaticShape() ? static_cast<uint64_t>(ranked.getNumElements()) : 0;
}

int64_t dim(Value v, int64_t fromEnd) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getRank() >= fromEnd ? type.getDimSize(type.getRank() - fromEnd) : 1;
}

// Elements of a convolution weight per output channel: C / group * prod(kernel).
uint64_t perOutputChannel(Value weight) {
  auto type = cast<RankedTensorType>(weight.getType());
  const int64_t channels = type.getDimSize(0);
  return channels > 0 ? numel(type) / static_cast<uint64_t>(channels) : 0;
}

// rows * S * Sk of an attention over q [..., S, D] and k [..., Sk, D].
uint64_t scorePairs(Value q, Value k) {
  const uint64_t sk = static_cast<uint64_t>(dim(k, 2));
  return numel(q.getType()) / static_cast<uint64_t>(std::max<int64_t>(dim(q, 1), 1)) * sk;
}

} // namespace

uint64_t elementwiseFlops(Operation *op) {
  if (op->hasTrait<traits::NoArithmetic>())
    return 0;
  uint64_t largest = 0;
  for (Type t : op->getOperandTypes())
    largest = std::max(largest, numel(t));
  for (Type t : op->getResultTypes())
    largest = std::max(largest, numel(t));
  return largest;
}

uint64_t operandAndResultBytes(Operation *op) {
  auto bytes = [](Type t) {
    auto ranked = dyn_cast<RankedTensorType>(t);
    if (!ranked)
      return uint64_t(0);
    const unsigned bits = ranked.getElementType().getIntOrFloatBitWidth();
    return numel(t) * ((bits + 7) / 8);
  };
  uint64_t total = 0;
  for (Type t : op->getOperandTypes())
    total += bytes(t);
  for (Type t : op->getResultTypes())
    total += bytes(t);
  return total;
}

uint64_t functionFlops(func::FuncOp func) {
  uint64_t total = 0;
  func.walk([&](CostOpInterface op) { total += op.getFlops(); });
  return total;
}

uint64_t MatMulOp::getFlops() {
  return 2 * numel(getOutput().getType()) * static_cast<uint64_t>(contractedSize());
}

uint64_t QuantizedMatMulOp::getFlops() {
  // The product's multiply-adds; the dequantization (one multiply per weight element and row
  // block) is not counted.
  return 2 * numel(getOutput().getType()) *
         static_cast<uint64_t>(getUntransposed() ? getRows() : getCols());
}

uint64_t GemmOp::getFlops() {
  const uint64_t k = static_cast<uint64_t>(dim(getA(), getTransA() ? 2 : 1));
  const uint64_t outputs = numel(getOutput().getType());
  return 2 * outputs * k + (getC() ? outputs : 0);
}

uint64_t ConvOp::getFlops() {
  return 2 * numel(getOutput().getType()) * perOutputChannel(getWeight());
}

uint64_t ConvGradInputOp::getFlops() {
  return 2 * numel(getDy().getType()) * perOutputChannel(getWeight());
}

uint64_t ConvGradWeightOp::getFlops() {
  return 2 * numel(getDy().getType()) * perOutputChannel(getDweight());
}

uint64_t AttentionOp::getFlops() {
  const auto d = static_cast<uint64_t>(dim(getQ(), 1));
  const auto dv = static_cast<uint64_t>(dim(getV(), 1));
  return 2 * scorePairs(getQ(), getK()) * (d + dv);
}

uint64_t AttentionGradOp::getFlops() {
  const auto d = static_cast<uint64_t>(dim(getQ(), 1));
  const auto dv = static_cast<uint64_t>(dim(getV(), 1));
  return 2 * scorePairs(getQ(), getK()) * (3 * d + 2 * dv);
}

std::string flopsText(uint64_t flops) {
  const char *units[] = {"", "k", "M", "G", "T", "P", "E"};
  double v = static_cast<double>(flops);
  int u = 0;
  while (v >= 1000.0 && u < 6) {
    v /= 1000.0;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.3g %sFLOP", v, units[u]);
  return text;
}

} // namespace shardc::graph
