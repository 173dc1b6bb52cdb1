// reduce_max_grad: the backward of reduce_max. dy reaches the positions of x that equal the
// reduced maximum y; when several positions tie, dy is split equally among them (dy / count to
// each), as PyTorch's amax/amin backward does. Splitting keeps the gradient a valid subgradient
// and symmetric in the tied inputs, where routing everything to the first tie would depend on
// the memory order. A NaN maximum (reduce_max propagates NaN) is shared the same way among the
// NaN inputs that produced it.
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/grad_checks.h"
#include "runtime/kernels/cpu/workspace.h"

#include <algorithm>
#include <string>
#include <vector>

namespace shardc::runtime::cpu {

namespace {

constexpr const char *kKernel = "reduce_max_grad";

// True where x attains the maximum y (both NaN counts as attaining it).
inline bool isMax(float x, float y) { return x == y || (x != x && y != y); }

// The workspace: the number of tied positions of each maximum (one per element of y).
Status takeTies(Workspace &workspace, const Tensor &y, int64_t **ties) {
  return workspace.take(kKernel, y.numel(), ties);
}

} // namespace

Status reduceMaxGradWorkspace(const KernelArgs &args, uint64_t *bytes) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kKernel, args, Arity::exactly(3), Arity::exactly(1)));
  int64_t *ties = nullptr;
  return measureWorkspace(
      bytes, [&](Workspace &workspace) { return takeTies(workspace, args.inputs[2], &ties); });
}

Status reduceMaxGradKernel(KernelArgs &args) {
  std::vector<bool> reduced;
  SHARDC_RETURN_IF_ERROR(checkReduceMaxGrad(args, &reduced));
  const Tensor &dy = args.inputs[0], &x = args.inputs[1], &y = args.inputs[2];
  const Tensor &dx = args.outputs[0];

  // Walk x in memory order; operand 0 indexes y (and dy, which has y's layout).
  StridedLoop loop = planReductionWalk(x.shape, reduced);

  const float *px = x.as<float>(), *py = y.as<float>(), *pdy = dy.as<float>();
  float *pdx = dx.as<float>();
  // First pass: how many positions tie for each maximum.
  Workspace workspace(args);
  int64_t *ties = nullptr;
  SHARDC_RETURN_IF_ERROR(takeTies(workspace, y, &ties));
  std::fill(ties, ties + y.numel(), 0);
  forEachRow(loop,
             [&](int64_t xOffset, const int64_t *yOffsets, const int64_t *yStrides, int64_t count) {
               for (int64_t i = 0; i < count; ++i) {
                 const int64_t k = yOffsets[0] + i * yStrides[0];
                 ties[k] += isMax(px[xOffset + i], py[k]) ? 1 : 0;
               }
             });
  // Second pass: each tied position gets its share of dy, every other position 0.
  forEachRow(loop,
             [&](int64_t xOffset, const int64_t *yOffsets, const int64_t *yStrides, int64_t count) {
               for (int64_t i = 0; i < count; ++i) {
                 const int64_t k = yOffsets[0] + i * yStrides[0];
                 pdx[xOffset + i] =
                     isMax(px[xOffset + i], py[k]) ? pdy[k] / static_cast<float>(ties[k]) : 0.0f;
               }
             });
  return Status::ok();
}

} // namespace shardc::runtime::cpu
