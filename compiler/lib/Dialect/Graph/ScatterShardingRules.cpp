//===- ScatterShardingRules.cpp - where a scatter_nd may be split -----------------------===//
//
// A scatter_nd writes where its index values say, so in general the addressed dimensions of
// its data and the index dimensions of its updates stay whole. One form is common enough to
// split: encoder-decoder models shift the labels right into the decoder's inputs by
// `shifted[:, 1:] = labels[:, :-1]`, which exports as a scatter_nd whose constant indices
// send every update row to the data row of the same position (indices[b, t] = (b, t + 1)).
// Such a row-local coordinate is one factor of the data, the updates and the indices' rows:
// each device scatters its own rows into its own rows, and needs only the indices of the
// first block, which (the coordinate being the position) are the local ones on every device.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/LocalSharding.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace shardc::graph {

namespace {

constexpr const char *kWritesByIndex = "scatter_nd writes where its index values say";

struct RowLocalCoordinate {
  int64_t coordinate; // j: the index tuple's entry that addresses data dimension j
  int64_t row;        // p: the dimension of indices (and updates) whose position it equals
};

// The coordinates j of the constant `indices` [n0, ..., nq-2, k] for which some dimension p
// has indices[i][j] == i_p for every tuple position i, the other entries of each tuple not
// depending on i_p, and data dimension j as long as indices dimension p: every update row
// writes into the data row of its own position. At most one row dimension per coordinate and
// one coordinate per row dimension.
SmallVector<RowLocalCoordinate> rowLocalCoordinates(ScatterNDOp op) {
  DenseElementsAttr indices;
  if (!matchPattern(op.getIndices(), m_Constant(&indices)))
    return {};
  ArrayRef<int64_t> shape = cast<RankedTensorType>(indices.getType()).getShape();
  ArrayRef<int64_t> data = cast<RankedTensorType>(op.getData().getType()).getShape();
  const int64_t k = shape.back(), tuples = indices.getNumElements() / std::max<int64_t>(k, 1);
  const int64_t rows = static_cast<int64_t>(shape.size()) - 1;
  if (tuples == 0)
    return {};
  SmallVector<int64_t> values;
  values.reserve(indices.getNumElements());
  for (const APInt &v : indices.getValues<APInt>())
    values.push_back(v.getSExtValue());
  // Tuple strides over the row dimensions of indices (row-major, in tuples).
  SmallVector<int64_t> stride(rows, 1);
  for (int64_t p = rows - 2; p >= 0; --p)
    stride[p] = stride[p + 1] * shape[p + 1];

  SmallVector<RowLocalCoordinate> found;
  SmallVector<bool> rowTaken(rows, false);
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t p = 0; p < rows; ++p) {
      if (rowTaken[p] || shape[p] == 1 || shape[p] != data[j])
        continue;
      bool local = true;
      for (int64_t t = 0; t < tuples && local; ++t) {
        const int64_t position = (t / stride[p]) % shape[p];
        const int64_t firstRow = t - position * stride[p]; // the same tuple at position 0
        for (int64_t c = 0; c < k && local; ++c)
          local = c == j ? values[t * k + c] == position
                         : values[t * k + c] == values[firstRow * k + c];
      }
      if (local) {
        found.push_back({j, p});
        rowTaken[p] = true;
        break;
      }
    }
  }
  return found;
}

} // namespace

std::optional<OpShardingRule> ScatterNDOp::getShardingRule() {
  ArrayRef<int64_t> data = cast<RankedTensorType>(getData().getType()).getShape();
  ArrayRef<int64_t> indexShape = cast<RankedTensorType>(getIndices().getType()).getShape();
  const int64_t k = indexShape.back(), rows = static_cast<int64_t>(indexShape.size()) - 1;
  SmallVector<RowLocalCoordinate> local = rowLocalCoordinates(*this);
  if (local.empty())
    return sharding::allWhole(*this, kWritesByIndex);

  OpShardingRule rule;
  auto factorOf = [&](int64_t size, bool whole) {
    return size == 1 ? -1 : whole ? rule.addWhole(size, kWritesByIndex) : rule.addFactor(size);
  };
  // data [addressed k dims, trailing dims]; updates [index rows, trailing dims].
  SmallVector<int> dataFactors(data.size(), -1), rowFactors(rows, -1);
  for (int64_t d = 0; d < static_cast<int64_t>(data.size()); ++d) {
    auto it = llvm::find_if(local, [&](const RowLocalCoordinate &c) { return c.coordinate == d; });
    if (d < k && it != local.end()) {
      dataFactors[d] = factorOf(data[d], /*whole=*/false);
      rowFactors[it->row] = dataFactors[d];
    } else {
      dataFactors[d] = factorOf(data[d], /*whole=*/d < k);
    }
  }
  for (int64_t p = 0; p < rows; ++p)
    if (rowFactors[p] < 0)
      rowFactors[p] = factorOf(indexShape[p], /*whole=*/true);
  SmallVector<int> updates(rowFactors);
  updates.append(dataFactors.begin() + k, dataFactors.end());
  TensorFactors dataTensor = OpShardingRule::tensor(dataFactors);
  // The indices are never split: the local form takes the first block of them (localizeOp).
  rule.operands = {dataTensor, TensorFactors(indexShape.size()), OpShardingRule::tensor(updates)};
  rule.results = {dataTensor};
  rule.linear = {false, false, false};
  return rule;
}

// Each device scatters its rows into its rows: the indices of the first block of rows, whose
// row-local coordinates (their positions) are those of the local rows on every device.
LogicalResult ScatterNDOp::localizeOp(LocalShardingContext &) {
  auto indicesType = cast<RankedTensorType>(getIndices().getType());
  ArrayRef<int64_t> updates = cast<RankedTensorType>(getUpdates().getType()).getShape();
  SmallVector<int64_t> localShape(indicesType.getShape());
  bool split = false;
  for (size_t p = 0; p + 1 < localShape.size(); ++p) {
    split = split || updates[p] != localShape[p];
    localShape[p] = updates[p];
  }
  if (!split)
    return success();
  DenseElementsAttr indices;
  if (!matchPattern(getIndices(), m_Constant(&indices)))
    return emitOpError("a split scatter_nd needs constant indices");
  ArrayRef<int64_t> shape = indicesType.getShape();
  SmallVector<int64_t> stride(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    stride[d] = stride[d + 1] * shape[d + 1];
  SmallVector<APInt> kept;
  SmallVector<APInt> values(indices.getValues<APInt>());
  for (int64_t i = 0; i < static_cast<int64_t>(values.size()); ++i) {
    bool inFirstBlock = true;
    for (size_t d = 0; d < shape.size() && inFirstBlock; ++d)
      inFirstBlock = (i / stride[d]) % shape[d] < localShape[d];
    if (inFirstBlock)
      kept.push_back(values[i]);
  }
  auto localType = RankedTensorType::get(localShape, indicesType.getElementType());
  OpBuilder b(*this);
  Value localIndices =
      b.create<ConstantOp>(getIndices().getLoc(), DenseElementsAttr::get(localType, kept));
  getIndicesMutable().assign(localIndices);
  return success();
}

} // namespace shardc::graph
