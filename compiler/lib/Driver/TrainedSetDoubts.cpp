//===- TrainedSetDoubts.cpp -------------------------------------------------------------===//
#include "shardc/Driver/TrainedSetDoubts.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstring>

namespace shardc {

namespace {

std::vector<float> floatsOf(const WeightTensor &t) {
  std::vector<float> values(t.bytes.size() / sizeof(float));
  if (!values.empty())
    std::memcpy(values.data(), t.bytes.data(), values.size() * sizeof(float));
  return values;
}

// Every element equal (a zero-filled bias matrix); only for rank >= 2, since 1-D vectors of
// ones and zeros are how normalisation scales and biases start, and they are trained.
bool oneValue(const std::vector<float> &v, mlir::RankedTensorType type) {
  if (type.getRank() < 2 || v.size() < 2)
    return false;
  for (float x : v)
    if (x != v[0])
      return false;
  return true;
}

// A [positions, features] table whose every column is a sinusoid of the position: values in
// [-1, 1] satisfying v[p+1] + v[p-1] = c * v[p] (true of sin(w p + phi) with c = 2 cos w) to
// float32 rounding, for at least 4 positions. Random initialisations do not satisfy it.
bool sinusoidal(const std::vector<float> &v, mlir::RankedTensorType type) {
  if (type.getRank() != 2 || type.getDimSize(0) < 4 || type.getDimSize(1) < 1)
    return false;
  const int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  bool varies = false;
  for (int64_t j = 0; j < cols; ++j) {
    auto at = [&](int64_t p) { return static_cast<double>(v[p * cols + j]); };
    double num = 0, den = 0;
    for (int64_t p = 1; p + 1 < rows; ++p) {
      num += (at(p + 1) + at(p - 1)) * at(p);
      den += at(p) * at(p);
    }
    const double c = den > 0 ? num / den : 0;
    if (std::fabs(c) > 2 + 1e-4)
      return false;
    for (int64_t p = 0; p < rows; ++p) {
      if (std::fabs(at(p)) > 1 + 1e-6)
        return false;
      if (at(p) != at(0))
        varies = true;
    }
    for (int64_t p = 1; p + 1 < rows; ++p)
      if (std::fabs(at(p + 1) + at(p - 1) - c * at(p)) > 1e-4)
        return false;
  }
  return varies;
}

// The single row of a [rows, features] table that is all zeros, -1 when none or several: how
// nn.Embedding(padding_idx=...) starts its padding row, which its lookups never train.
int64_t onlyZeroRow(const std::vector<float> &v, mlir::RankedTensorType type) {
  if (type.getRank() != 2 || type.getDimSize(0) < 2)
    return -1;
  const int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  int64_t found = -1;
  for (int64_t r = 0; r < rows; ++r) {
    bool zero = true;
    for (int64_t c = 0; c < cols && zero; ++c)
      zero = v[r * cols + c] == 0.0f;
    if (zero && found >= 0)
      return -1;
    if (zero)
      found = r;
  }
  return found;
}

} // namespace

std::vector<std::string> doubtfulTrainedParameters(mlir::ModuleOp module,
                                                   const WeightStore &weights) {
  std::vector<std::string> lines;
  auto step = module.lookupSymbol<mlir::func::FuncOp>("train_step");
  if (!step)
    return lines;
  // The tables the step looks rows up in, along dim 0, with no padding row recorded.
  llvm::StringSet<> lookedUpWithoutPadding;
  step.walk([&](graph::GatherOp gather) {
    auto arg = llvm::dyn_cast<mlir::BlockArgument>(gather.getData());
    if (!arg || gather.getAxis() != 0 || gather.getPaddingIdx())
      return;
    if (auto name = step.getArgAttrOfType<mlir::StringAttr>(arg.getArgNumber(), graph::kParamAttr))
      lookedUpWithoutPadding.insert(name.getValue());
  });
  for (unsigned i = 0; i < step.getNumResults(); ++i) {
    auto name = step.getResultAttrOfType<mlir::StringAttr>(i, graph::kParamAttr);
    const WeightTensor *t = name ? weights.find(name.str()) : nullptr;
    if (!t || !t->present || !t->type.getElementType().isF32())
      continue;
    std::vector<float> values = floatsOf(*t);
    if (static_cast<int64_t>(values.size()) != t->type.getNumElements())
      continue;
    if (oneValue(values, t->type)) {
      lines.push_back("'" + name.str() + "' (one value throughout)");
    } else if (sinusoidal(values, t->type)) {
      lines.push_back("'" + name.str() + "' (a sinusoidal table)");
    } else if (int64_t row = onlyZeroRow(values, t->type);
               row >= 0 && lookedUpWithoutPadding.contains(name.getValue())) {
      const std::string r = std::to_string(row);
      lines.push_back("'" + name.str() + "' (row " + r + " all zeros: an embedding's padding "
                      "row? --padding-row " + name.str() + "=" + r + ")");
    }
  }
  return lines;
}

} // namespace shardc
