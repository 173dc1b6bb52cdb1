//===- ModelValidation.cpp --------------------------------------------------------------===//
#include "frontends/onnx/ModelValidation.h"

#include "frontends/onnx/ErrorReporting.h"

#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

#include <exception>

namespace shardc::onnx_import {

namespace {

void collectTypes(const onnx::GraphProto &graph, OnnxTypes &types) {
  for (const onnx::ValueInfoProto &info : graph.value_info())
    if (info.has_type())
      types[info.name()] = info.type();
  for (const onnx::ValueInfoProto &info : graph.output())
    if (info.has_type())
      types[info.name()] = info.type();
}

} // namespace

bool libonnxKnowsOpset(int64_t opset) {
  const auto &ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = ranges.find("");
  return it != ranges.end() && opset <= it->second.second;
}

onnx::ModelProto validationCopy(const onnx::ModelProto &model,
                                const std::set<std::string> &parameterNames) {
  onnx::ModelProto copy = model;
  onnx::GraphProto &graph = *copy.mutable_graph();
  std::set<std::string> declared;
  for (const onnx::ValueInfoProto &input : graph.input())
    declared.insert(input.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> constants;
  for (const onnx::TensorProto &tensor : graph.initializer()) {
    if (!parameterNames.count(tensor.name())) {
      *constants.Add() = tensor;
      continue;
    }
    if (declared.count(tensor.name()))
      continue;
    onnx::ValueInfoProto *input = graph.add_input();
    input->set_name(tensor.name());
    auto *type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(tensor.data_type());
    auto *shape = type->mutable_shape();
    for (int64_t d : tensor.dims())
      shape->add_dim()->set_dim_value(d);
  }
  graph.mutable_initializer()->Swap(&constants);
  // Newer IR versions only add element types (float8, int4) that the importer rejects
  // anyway; libonnx 1.12 refuses any IR version above its own, so check as its newest.
  if (copy.ir_version() > onnx::IR_VERSION)
    copy.set_ir_version(onnx::IR_VERSION);
  return copy;
}

mlir::LogicalResult runOnnxChecker(const onnx::ModelProto &copy, ErrorReporter &errors) {
  // libonnx reports problems as exceptions; none may escape the importer.
  try {
    onnx::checker::check_model(copy);
  } catch (const std::exception &e) {
    return errors.fail("ONNX checker: " + firstLine(e.what()));
  } catch (...) {
    return errors.fail("ONNX checker failed");
  }
  return mlir::success();
}

mlir::LogicalResult runOnnxShapeInference(onnx::ModelProto &copy, OnnxTypes &inferred,
                                          ErrorReporter &errors) {
  try {
    onnx::ShapeInferenceOptions options(/*check_type_val=*/true, /*strict_mode_val=*/1,
                                        /*data_prop_val=*/true);
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &e) {
    return errors.fail("ONNX shape inference: " + firstLine(e.what()));
  } catch (...) {
    return errors.fail("ONNX shape inference failed");
  }
  collectTypes(copy.graph(), inferred);
  return mlir::success();
}

OnnxTypes declaredTypes(const onnx::GraphProto &graph) {
  OnnxTypes types;
  collectTypes(graph, types);
  return types;
}

} // namespace shardc::onnx_import
