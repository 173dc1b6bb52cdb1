//===- TrainableRecord.cpp --------------------------------------------------------------===//
#include "frontends/onnx/TrainableRecord.h"

#include "frontends/onnx/ErrorReporting.h"

#include "llvm/Support/JSON.h"

namespace shardc::onnx_import {

namespace {

// The JSON of the model's metadata entry `key`: nullopt when absent; an error when it appears
// twice or is not valid JSON.
mlir::FailureOr<std::optional<llvm::json::Value>>
readMetadataJson(const onnx::ModelProto &model, const char *key, ErrorReporter &errors) {
  std::optional<llvm::json::Value> value;
  const std::string what = std::string("metadata '") + key + "'";
  for (const onnx::StringStringEntryProto &entry : model.metadata_props()) {
    if (entry.key() != key)
      continue;
    if (value)
      return errors.fail(what + " appears twice");
    llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(entry.value());
    if (!parsed) {
      std::string why = llvm::toString(parsed.takeError());
      return errors.fail(what + " is not valid JSON: " + why);
    }
    value = std::move(*parsed);
  }
  return value;
}

} // namespace

mlir::FailureOr<std::optional<std::set<std::string>>>
readTrainableRecord(const onnx::ModelProto &model, ErrorReporter &errors) {
  const std::string what = std::string("metadata '") + kTrainableMetadataKey + "'";
  mlir::FailureOr<std::optional<llvm::json::Value>> parsed =
      readMetadataJson(model, kTrainableMetadataKey, errors);
  if (mlir::failed(parsed))
    return mlir::failure();
  std::optional<std::set<std::string>> names;
  if (!*parsed)
    return names;
  const llvm::json::Array *list = (*parsed)->getAsArray();
  if (!list)
    return errors.fail(what + " must be a JSON list of parameter names");
  names.emplace();
  for (const llvm::json::Value &item : *list) {
    std::optional<llvm::StringRef> name = item.getAsString();
    if (!name)
      return errors.fail(what + " must be a JSON list of parameter names (strings)");
    names->insert(name->str());
  }
  return names;
}

mlir::FailureOr<std::map<std::string, int64_t>>
readPaddingIdxRecord(const onnx::ModelProto &model, ErrorReporter &errors) {
  const std::string what = std::string("metadata '") + kPaddingIdxMetadataKey + "'";
  mlir::FailureOr<std::optional<llvm::json::Value>> parsed =
      readMetadataJson(model, kPaddingIdxMetadataKey, errors);
  if (mlir::failed(parsed))
    return mlir::failure();
  std::map<std::string, int64_t> rows;
  if (!*parsed)
    return rows;
  const llvm::json::Object *object = (*parsed)->getAsObject();
  if (!object)
    return errors.fail(what + " must be a JSON object {initializer: padding row}");
  for (const auto &[name, value] : *object) {
    std::optional<int64_t> row = value.getAsInteger();
    if (!row || *row < 0)
      return errors.fail(what + ": the padding row of '" + name.str() +
                         "' must be an integer >= 0");
    rows[name.str()] = *row;
  }
  return rows;
}

} // namespace shardc::onnx_import
