//===- BaseQuantization.cpp - --base-dtype on the imported model ------------------------===//
#include "shardc/Driver/BaseQuantization.h"

#include "passes/training/TrainingPasses.h"

#include "shardc/Support/Diagnostics.h"

#include "mlir/Pass/PassManager.h"

#include "runtime/support/quantized_weights.h"

#include <cstring>

namespace shardc::driver {

namespace {

// The weight [rows, cols] from its parameter's bytes, transposed when the model stores it
// [cols, rows].
std::vector<float> weightRows(const WeightTensor &tensor, const QuantizedBaseWeight &w) {
  const float *stored = reinterpret_cast<const float *>(tensor.bytes.data());
  if (w.storedInByOut)
    return runtime::transposedMatrix(stored, w.cols, w.rows);
  return std::vector<float>(stored, stored + w.rows * w.cols);
}

std::vector<char> bytesOf(const void *data, size_t size) {
  std::vector<char> bytes(size);
  std::memcpy(bytes.data(), data, size);
  return bytes;
}

} // namespace

bool quantizeBase(const CompileOptions &opts, mlir::ModuleOp module, WeightStore &weights,
                  std::string &error) {
  const runtime::WeightFormat format = *runtime::weightFormatFromName(opts.baseDtype);
  QuantizeBaseOptions options;
  options.format = opts.baseDtype;
  options.keep = opts.baseDtypeKeep;
  options.allParameters = opts.mode == Mode::Forward;
  std::vector<QuantizedBaseWeight> replaced;
  mlir::PassManager pm(module.getContext());
  pm.addPass(createQuantizeBase(
      options, [&](const QuantizedBaseWeight &w) { replaced.push_back(w); }));
  // The pass's first error, located in the model (or the model file itself).
  FirstErrorCollector errors(*module.getContext(), opts.model);
  if (mlir::failed(pm.run(module))) {
    error = errors.hasError() ? errors.message() : opts.model + ": shardc-quantize-base failed";
    return false;
  }
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  auto typeOf = [&](const std::string &name) {
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      if (auto n = forward.getArgAttrOfType<mlir::StringAttr>(i, graph::kParamAttr);
          n && n.getValue() == name)
        return mlir::cast<mlir::RankedTensorType>(forward.getArgument(i).getType());
    return mlir::RankedTensorType();
  };
  for (const QuantizedBaseWeight &w : replaced) {
    const WeightTensor *source = weights.find(w.name);
    const bool present = source && source->present &&
                         source->bytes.size() == static_cast<size_t>(w.rows * w.cols) * 4;
    runtime::QuantizedWeight q;
    if (present)
      q = runtime::quantizeWeight(format, weightRows(*source, w).data(), w.rows, w.cols);
    weights.add(w.codesName, WeightTensor{typeOf(w.codesName), present,
                                          present ? bytesOf(q.codes.data(), q.codes.size())
                                                  : std::vector<char>()});
    if (!w.scalesName.empty())
      weights.add(w.scalesName,
                  WeightTensor{typeOf(w.scalesName), present,
                               present ? bytesOf(q.scales.data(), q.scales.size() * sizeof(float))
                                       : std::vector<char>()});
  }
  return true;
}

} // namespace shardc::driver
