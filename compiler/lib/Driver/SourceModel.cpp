//===- SourceModel.cpp ------------------------------------------------------------------===//
#include "shardc/Driver/SourceModel.h"

#include "frontends/onnx/ErrorReporting.h"
#include "frontends/onnx/ModelLoader.h"
#include "frontends/onnx/TensorDecoding.h"
#include "runtime/export/onnx_export.h"

#include "onnx/onnx_pb.h"

#include <climits>
#include <vector>

namespace shardc {

namespace {

using onnx_import::ErrorReporter;
using onnx_import::quote;

// Replaces a tensor's external data by the same bytes as raw_data (ONNX's raw_data layout is
// the external file's: little-endian, row-major, bool as one byte).
mlir::LogicalResult inlineExternalData(mlir::MLIRContext &ctx, onnx::TensorProto &tensor,
                                       const std::string &baseDir, const std::string &what,
                                       ErrorReporter &errors) {
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
    return mlir::success();
  onnx_import::DecodedTensor decoded;
  std::string why;
  if (mlir::failed(onnx_import::decodeTensor(ctx, tensor, baseDir, decoded, why)))
    return errors.fail(what + ": " + why);
  if (!decoded.present)
    return errors.fail(what + ": external data file " + quote(decoded.missingFile) + " not found");
  runtime::dropTensorValues(tensor);
  tensor.set_raw_data(decoded.bytes.data(), decoded.bytes.size());
  return mlir::success();
}

} // namespace

mlir::LogicalResult buildSourceModel(mlir::MLIRContext &ctx, const std::string &modelPath,
                                     const std::set<std::string> &trained, std::string &out,
                                     bool &tooLarge, std::string &error) {
  out.clear();
  tooLarge = false;
  ErrorReporter errors(modelPath, error);
  // The importer has parsed this file already, but it keeps only the graph IR; the template
  // must be the model exactly as given (symbolic dims, metadata, node names), so read it again.
  auto buffer = onnx_import::readModelFile(modelPath, errors);
  if (mlir::failed(buffer))
    return mlir::failure();
  onnx::ModelProto model;
  if (mlir::failed(onnx_import::parseModel((*buffer)->getBuffer(), model, errors)))
    return mlir::failure();
  buffer->reset(); // the parsed copy is all that is needed from here on

  const std::string baseDir = onnx_import::modelDirectory(modelPath);
  onnx::GraphProto &graph = *model.mutable_graph();
  std::set<std::string> stripped;
  for (onnx::TensorProto &tensor : *graph.mutable_initializer()) {
    if (trained.count(tensor.name())) {
      runtime::dropTensorValues(tensor);
      stripped.insert(tensor.name());
      continue;
    }
    if (mlir::failed(inlineExternalData(ctx, tensor, baseDir, "initializer " + quote(tensor.name()),
                                        errors)))
      return mlir::failure();
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    onnx::NodeProto &node = *graph.mutable_node(i);
    for (onnx::AttributeProto &attr : *node.mutable_attribute())
      if (attr.has_t() &&
          mlir::failed(inlineExternalData(
              ctx, *attr.mutable_t(), baseDir,
              "node " + quote(node.name()) + " attribute " + quote(attr.name()), errors)))
        return mlir::failure();
  }
  // Parameters are named after their initializers; anything else is a compiler bug that would
  // make the export silently keep initial values.
  for (const std::string &name : trained)
    if (!stripped.count(name))
      return errors.fail("internal error: trained parameter " + quote(name) +
                         " is not an initializer of the model");

  if (model.ByteSizeLong() >= static_cast<size_t>(INT_MAX)) {
    tooLarge = true;
    return mlir::success();
  }
  if (!model.SerializeToString(&out))
    return errors.fail("cannot serialise the bundle's source.onnx");
  return mlir::success();
}

} // namespace shardc
