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

mlir::FailureOr<std::map<std::string, int64_t>>
readPaddingIdxRecord(const onnx::ModelProto &model, ErrorReporter &errors) {
  std::map<std::string, int64_t> rows;
  bool seen = false;
  const std::string what = std::string("metadata '") + kPaddingIdxMetadataKey + "'";
  for (const onnx::StringStringEntryProto &entry : model.metadata_props()) {
    if (entry.key() != kPaddingIdxMetadataKey)
      continue;
    if (seen)
      return errors.fail(what + " appears twice");
    seen = true;
    llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(entry.value());
    if (!parsed) {
      std::string why = llvm::toString(parsed.takeError());
      return errors.fail(what + " is not valid JSON: " + why);
    }
    const llvm::json::Object *object = parsed->getAsObject();
    if (!object)
      return errors.fail(what + " must be a JSON object {initializer: padding row}");
    for (const auto &[name, value] : *object) {
      std::optional<int64_t> row = value.getAsInteger();
      if (!row || *row < 0)
        return errors.fail(what + ": the padding row of '" + name.str() +
                           "' must be an integer >= 0");
      rows[name.str()] = *row;
    }
  }
  return rows;
}

} // namespace shardc::onnx_import
