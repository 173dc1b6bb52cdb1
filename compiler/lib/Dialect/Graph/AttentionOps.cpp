//===- AttentionOps.cpp - verifiers of the fused attention ops -------------------------===//
//
// attention and attention_grad carry the same operand contract as the runtime kernels of the
// same names (docs/kernels.md): q [..., S, D], k [..., Sk, D], v [..., Sk, Dv] with identical
// leading dims, an f32 mask broadcastable to [..., S, Sk]. The verifier checks it here so
// that a malformed op fails at compile time, not when the bundle runs.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;
using namespace shardc::graph;

namespace {

ArrayRef<int64_t> dimsOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

// The shared checks of both ops: the operand shapes, and the (output, lse) shapes they imply.
LogicalResult verifyAttentionOperands(Operation *op, Value q, Value k, Value v, Value mask,
                                      Value output, Value lse) {
  ArrayRef<int64_t> qs = dimsOf(q), ks = dimsOf(k), vs = dimsOf(v);
  const size_t rank = qs.size();
  if (rank < 2 || ks.size() != rank || vs.size() != rank)
    return op->emitOpError("q, k and v must have the same rank, at least 2; got ")
           << q.getType() << ", " << k.getType() << ", " << v.getType();
  ArrayRef<int64_t> lead = qs.drop_back(2);
  if (ks.drop_back(2) != lead || vs.drop_back(2) != lead)
    return op->emitOpError("q, k and v must have the same leading dims");
  const int64_t S = qs[rank - 2], D = qs[rank - 1], Sk = ks[rank - 2];
  if (ks[rank - 1] != D)
    return op->emitOpError("k's last dim must be q's (") << D << "), got " << ks[rank - 1];
  if (vs[rank - 2] != Sk)
    return op->emitOpError("v must have k's ") << Sk << " keys, got " << vs[rank - 2];
  if (mask) {
    ArrayRef<int64_t> ms = dimsOf(mask);
    SmallVector<int64_t> scores(lead.begin(), lead.end());
    scores.append({S, Sk});
    if (ms.size() > scores.size())
      return op->emitOpError("mask has more dims than the scores [..., S, Sk]");
    for (size_t d = 0; d < ms.size(); ++d) {
      const int64_t want = scores[scores.size() - ms.size() + d];
      if (ms[d] != 1 && ms[d] != want)
        return op->emitOpError("mask ") << mask.getType()
                                        << " does not broadcast to the scores' shape";
    }
  }
  SmallVector<int64_t> outShape(lead.begin(), lead.end()), lseShape(lead.begin(), lead.end());
  outShape.append({S, vs[rank - 1]});
  lseShape.push_back(S);
  if (dimsOf(output) != ArrayRef<int64_t>(outShape))
    return op->emitOpError("output must be [..., S, Dv], got ") << output.getType();
  if (dimsOf(lse) != ArrayRef<int64_t>(lseShape))
    return op->emitOpError("lse must be [..., S], got ") << lse.getType();
  return success();
}

} // namespace

LogicalResult AttentionOp::verify() {
  return verifyAttentionOperands(*this, getQ(), getK(), getV(), getMask(), getOutput(),
                                 getLse());
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyAttentionOperands(*this, getQ(), getK(), getV(), getMask(), getOutput(),
                                     getLse())))
    return failure();
  if (getDout().getType() != getOutput().getType())
    return emitOpError("dout must have the output's type");
  if (getDq().getType() != getQ().getType() || getDk().getType() != getK().getType() ||
      getDv().getType() != getV().getType())
    return emitOpError("dq, dk and dv must have the types of q, k and v");
  return success();
}
