//===- Signature.cpp --------------------------------------------------------------------===//
#include "shardc/Lowering/Signature.h"

#include "shardc/Autodiff/TrainStep.h"
#include "shardc/Dialect/Graph/GraphDialect.h"

using namespace mlir;

namespace shardc {

namespace {
bool isUpdatedByAResult(func::FuncOp func, StringAttr param) {
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (func.getResultAttrOfType<StringAttr>(i, graph::kParamAttr) == param ||
        func.getResultAttrOfType<StringAttr>(i, graph::kBufferAttr) == param)
      return true;
  return false;
}
} // namespace

std::optional<std::string> runtimeInputName(func::FuncOp func, unsigned index) {
  if (auto name = func.getArgAttrOfType<StringAttr>(index, graph::kInputAttr))
    return name.str();
  if (auto name = func.getArgAttrOfType<StringAttr>(index, kStateAttr))
    return name.str();
  if (func.getArgAttr(index, kStepAttr))
    return std::string("step");
  if (func.getArgAttr(index, kLrAttr))
    return std::string("lr");
  if (func.getArgAttr(index, kSeedAttr))
    return std::string("seed");
  if (auto name = func.getArgAttrOfType<StringAttr>(index, graph::kParamAttr))
    if (isUpdatedByAResult(func, name))
      return name.str();
  return std::nullopt;
}

std::string resultName(func::FuncOp func, unsigned index) {
  for (StringRef attr : {graph::kOutputAttr.data(), graph::kParamAttr.data(),
                         graph::kBufferAttr.data(), kStateAttr.data()})
    if (auto name = func.getResultAttrOfType<StringAttr>(index, attr))
      return name.str();
  if (func.getResultAttr(index, kStepAttr))
    return "step";
  return "output" + std::to_string(index);
}

} // namespace shardc
