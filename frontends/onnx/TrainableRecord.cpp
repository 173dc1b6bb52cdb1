//===- TrainableRecord.cpp --------------------------------------------------------------===//
#include "frontends/onnx/TrainableRecord.h"

#include "frontends/onnx/ErrorReporting.h"

#include "llvm/Support/JSON.h"

namespace shardc::onnx_import {

mlir::FailureOr<std::optional<std::set<std::string>>>
readTrainableRecord(const onnx::ModelProto &model, ErrorReporter &errors) {
  std::optional<std::set<std::string>> names;
  const std::string what = std::string("metadata '") + kTrainableMetadataKey + "'";
  for (const onnx::StringStringEntryProto &entry : model.metadata_props()) {
    if (entry.key() != kTrainableMetadataKey)
      continue;
    if (names)
      return errors.fail(what + " appears twice");
    llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(entry.value());
    if (!parsed) {
      std::string why = llvm::toString(parsed.takeError());
      return errors.fail(what + " is not valid JSON: " + why);
    }
    const llvm::json::Array *list = parsed->getAsArray();
    if (!list)
      return errors.fail(what + " must be a JSON list of parameter names");
    names.emplace();
    for (const llvm::json::Value &item : *list) {
      std::optional<llvm::StringRef> name = item.getAsString();
      if (!name)
        return errors.fail(what + " must be a JSON list of parameter names (strings)");
      names->insert(name->str());
    }
  }
  return names;
}

} // namespace shardc::onnx_import
