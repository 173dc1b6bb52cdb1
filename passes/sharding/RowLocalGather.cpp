//===- RowLocalGather.cpp - a gather of each row's own position, as a masked sum ---------===//
//
// gather(flatten(h [B, S, ...]), argmax [B] + [0, S, ..., (B-1)S]) reads row b's position
// argmax[b] in [0, S): the values of sum_s where(argmax[b] == s, h[b, s], 0), which the batch's
// split passes (ShardingPasses.td has the pattern). Anything else is left as it is.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/sharding/ShardingPasses.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

namespace shardc {
#define GEN_PASS_DEF_ROWLOCALGATHER
#include "passes/sharding/ShardingPasses.h.inc"

namespace {

using namespace mlir;

// The states [B, S, ...] a [B*S, ...] table was flattened from (a flatten or reshape merging
// exactly the first two dimensions), or null.
Value unflattenedStates(Value table) {
  Operation *def = table.getDefiningOp();
  if (!def || !isa<graph::FlattenOp, graph::ReshapeOp>(def))
    return Value();
  Value states = def->getOperand(0);
  auto in = cast<RankedTensorType>(states.getType());
  auto out = cast<RankedTensorType>(table.getType());
  if (in.getRank() < 2 || out.getRank() != in.getRank() - 1 ||
      out.getDimSize(0) != in.getDimSize(0) * in.getDimSize(1) ||
      out.getShape().drop_front() != in.getShape().drop_front(2))
    return Value();
  return states;
}

// Whether `offsets` is the constant [0, S, 2S, ..., (B-1)S].
bool rowStarts(Value offsets, int64_t rows, int64_t rowSize) {
  DenseIntElementsAttr dense;
  if (!matchPattern(offsets, m_Constant(&dense)) || dense.getNumElements() != rows)
    return false;
  int64_t b = 0;
  for (const APInt &v : dense.getValues<APInt>())
    if (v.getSExtValue() != rowSize * b++)
      return false;
  return true;
}

// A position in [0, S) per row: an arg_max of a [B, S] tensor over its axis 1, or null.
Value positionInRow(Value v, int64_t rows, int64_t rowSize) {
  auto argmax = v.getDefiningOp<graph::ArgMaxOp>();
  if (!argmax || argmax.getKeepdims())
    return Value();
  auto in = cast<RankedTensorType>(argmax.getInput().getType());
  if (in.getRank() != 2 || argmax.getAxis() != 1 || in.getDimSize(0) != rows ||
      in.getDimSize(1) != rowSize)
    return Value();
  return v;
}

LogicalResult rewrite(graph::GatherOp gather) {
  if (gather.getAxis() != 0)
    return failure();
  Value states = unflattenedStates(gather.getData());
  auto indexType = cast<RankedTensorType>(gather.getIndices().getType());
  auto add = gather.getIndices().getDefiningOp<graph::AddOp>();
  if (!states || !add || indexType.getRank() != 1)
    return failure();
  auto statesType = cast<RankedTensorType>(states.getType());
  const int64_t rows = statesType.getDimSize(0), rowSize = statesType.getDimSize(1);
  if (indexType.getDimSize(0) != rows)
    return failure();
  Value position;
  for (auto [p, o] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())})
    if (!position && rowStarts(o, rows, rowSize))
      position = positionInRow(p, rows, rowSize);
  if (!position)
    return failure();

  OpBuilder b(gather);
  Location loc = gather.getLoc();
  Type i64 = b.getI64Type(), i1 = b.getI1Type();
  SmallVector<int64_t> steps;
  for (int64_t s = 0; s < rowSize; ++s)
    steps.push_back(s);
  Value along = b.create<graph::ConstantOp>(
      loc, DenseElementsAttr::get(RankedTensorType::get({1, rowSize}, i64), ArrayRef(steps)));
  Value column = b.create<graph::ReshapeOp>(loc, RankedTensorType::get({rows, 1}, i64), position);
  Value hit = b.create<graph::EqualOp>(loc, RankedTensorType::get({rows, rowSize}, i1), column,
                                       along);
  SmallVector<int64_t> maskShape(statesType.getRank(), 1);
  maskShape[0] = rows;
  maskShape[1] = rowSize;
  Value mask = b.create<graph::ReshapeOp>(loc, RankedTensorType::get(maskShape, i1), hit);
  Type et = statesType.getElementType();
  Value zero = b.create<graph::ConstantOp>(
      loc, DenseElementsAttr::get(RankedTensorType::get({}, et), b.getZeroAttr(et)));
  Value picked = b.create<graph::WhereOp>(loc, statesType, mask, states, zero);
  Value pooled = b.create<graph::ReduceSumOp>(loc, gather.getType(), picked,
                                              b.getDenseI64ArrayAttr({1}), b.getBoolAttr(false));
  gather.replaceAllUsesWith(pooled);
  gather.erase();
  return success();
}

struct RowLocalGatherPass : impl::RowLocalGatherBase<RowLocalGatherPass> {
  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      getOperation().emitError("no @forward function whose gathers to rewrite");
      return signalPassFailure();
    }
    SmallVector<graph::GatherOp> gathers;
    forward.walk([&](graph::GatherOp op) { gathers.push_back(op); });
    for (graph::GatherOp op : gathers)
      (void)rewrite(op);
  }
};

} // namespace
} // namespace shardc
