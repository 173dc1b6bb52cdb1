//===- InputShapes.cpp ------------------------------------------------------------------===//
#include "frontends/onnx/InputShapes.h"

#include "frontends/onnx/ErrorReporting.h"
#include "frontends/onnx/ImportLimits.h"

namespace shardc::onnx_import {

namespace {

std::string joinDims(const std::vector<std::string> &dims) {
  std::string text;
  for (const std::string &d : dims)
    text += (text.empty() ? "" : "x") + d;
  return text;
}

std::string flag(const std::string &name, const std::vector<int64_t> &dims) {
  std::vector<std::string> parts;
  for (int64_t d : dims)
    parts.push_back(std::to_string(d));
  return "--input-shape " + printable(name) + "=" + joinDims(parts);
}

// "batch" / "?" for each unknown dimension, the size for the others.
std::vector<std::string> declaredDims(const onnx::TensorShapeProto &shape) {
  std::vector<std::string> parts;
  for (const auto &dim : shape.dim()) {
    if (dim.has_dim_value())
      parts.push_back(std::to_string(dim.dim_value()));
    else if (dim.has_dim_param() && !dim.dim_param().empty())
      parts.push_back("<" + printable(dim.dim_param(), 40) + ">");
    else
      parts.push_back("<?>");
  }
  return parts;
}

bool isGraphInput(const onnx::GraphProto &graph, const std::set<std::string> &initializers,
                  const std::string &name) {
  if (initializers.count(name))
    return false;
  for (const onnx::ValueInfoProto &input : graph.input())
    if (input.name() == name)
      return true;
  return false;
}

std::string listGraphInputs(const onnx::GraphProto &graph,
                            const std::set<std::string> &initializers) {
  std::string list;
  size_t shown = 0;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializers.count(input.name()))
      continue;
    if (shown++ == 8) {
      list += ", ...";
      break;
    }
    list += (list.empty() ? "" : ", ") + quote(input.name());
  }
  return list.empty() ? "none" : list;
}

// Checks one override against the input's declared shape and writes it there.
mlir::LogicalResult applyOverride(onnx::ValueInfoProto &input, const std::vector<int64_t> &dims,
                                  std::map<std::string, std::pair<int64_t, std::string>> &symbols,
                                  ErrorReporter &errors) {
  const std::string &name = input.name();
  std::string shown = flag(name, dims);
  std::string why;
  for (int64_t d : dims)
    if (d <= 0)
      return errors.fail(shown + ": dimensions must be positive");
  if (!checkedElementCount(dims, why))
    return errors.fail(shown + ": " + why);
  if (!input.type().has_tensor_type())
    return errors.fail(shown + ": input " + quote(name) + " is not a tensor");
  onnx::TypeProto_Tensor &tensor = *input.mutable_type()->mutable_tensor_type();
  if (tensor.has_shape()) {
    const onnx::TensorShapeProto &declared = tensor.shape();
    if (declared.dim_size() != static_cast<int>(dims.size()))
      return errors.fail(shown + " has rank " + std::to_string(dims.size()) + " but input " +
                         quote(name) + " has rank " + std::to_string(declared.dim_size()) + " (" +
                         joinDims(declaredDims(declared)) + ")");
    for (int i = 0; i < declared.dim_size(); ++i) {
      const auto &dim = declared.dim(i);
      if (dim.has_dim_value() && dim.dim_value() != dims[i])
        return errors.fail(shown + " conflicts with input " + quote(name) + ": dim " +
                           std::to_string(i) + " is fixed to " + std::to_string(dim.dim_value()));
      if (!dim.has_dim_param() || dim.dim_param().empty())
        continue;
      // One symbol (e.g. 'batch') shared by several inputs must get one size.
      auto [it, inserted] = symbols.try_emplace(dim.dim_param(), dims[i], name);
      if (!inserted && it->second.first != dims[i])
        return errors.fail("--input-shape gives symbolic dimension " + quote(dim.dim_param()) +
                           " size " + std::to_string(it->second.first) + " for input " +
                           quote(it->second.second) + " but " + std::to_string(dims[i]) +
                           " for input " + quote(name));
    }
  }
  onnx::TensorShapeProto *shape = tensor.mutable_shape();
  shape->clear_dim();
  for (int64_t d : dims)
    shape->add_dim()->set_dim_value(d);
  return mlir::success();
}

// After the overrides: every dimension of the input must be known.
mlir::LogicalResult checkStaticInput(const onnx::ValueInfoProto &input, ErrorReporter &errors) {
  const std::string &name = input.name();
  if (!input.type().has_tensor_type())
    return errors.fail("input " + quote(name) + " is not a tensor (shardc imports tensors only)");
  const onnx::TypeProto_Tensor &tensor = input.type().tensor_type();
  if (!tensor.has_shape())
    return errors.fail("input " + quote(name) + " has no declared shape; give it with " +
                       "--input-shape " + printable(name) + "=DIMS (e.g. 8x128)");
  const onnx::TensorShapeProto &shape = tensor.shape();
  std::string hint =
      "; give its size with --input-shape " + printable(name) + "=" + joinDims(declaredDims(shape));
  for (int i = 0; i < shape.dim_size(); ++i) {
    const auto &dim = shape.dim(i);
    std::string where = " (dim " + std::to_string(i) + ")";
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0)
        return errors.fail("input " + quote(name) + " has invalid dimension " +
                           std::to_string(dim.dim_value()) + where);
      continue;
    }
    if (dim.has_dim_param() && !dim.dim_param().empty())
      return errors.fail("input " + quote(name) + " has symbolic dimension " +
                         quote(dim.dim_param()) + where + hint);
    return errors.fail("input " + quote(name) + " has an unknown dimension" + where + hint);
  }
  std::vector<int64_t> dims;
  for (const auto &dim : shape.dim())
    dims.push_back(dim.dim_value());
  std::string why;
  if (!checkedElementCount(dims, why))
    return errors.fail("input " + quote(name) + " has an invalid shape: " + why);
  return mlir::success();
}

} // namespace

mlir::LogicalResult applyInputShapes(onnx::GraphProto &graph,
                                     const std::set<std::string> &initializerNames,
                                     const std::map<std::string, std::vector<int64_t>> &overrides,
                                     ErrorReporter &errors) {
  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  for (const auto &[name, dims] : overrides) {
    if (!isGraphInput(graph, initializerNames, name))
      return errors.fail(flag(name, dims) + ": " + quote(name) + " is " +
                         (initializerNames.count(name) ? "an initializer, not a graph input"
                                                       : "not a graph input") +
                         " (graph inputs: " + listGraphInputs(graph, initializerNames) + ")");
    // Apply to every declaration of the name (a malformed model may repeat an input).
    for (onnx::ValueInfoProto &input : *graph.mutable_input())
      if (input.name() == name && failed(applyOverride(input, dims, symbols, errors)))
        return mlir::failure();
  }
  // A symbol names one size across the graph (ONNX semantics), so an override of one input
  // also resolves that symbol in the others: input_ids=8x128 fixes 'batch' of the labels too.
  for (onnx::ValueInfoProto &input : *graph.mutable_input()) {
    if (initializerNames.count(input.name()) || !input.type().has_tensor_type() ||
        !input.type().tensor_type().has_shape())
      continue;
    for (auto &dim : *input.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      auto it = dim.has_dim_param() ? symbols.find(dim.dim_param()) : symbols.end();
      if (it != symbols.end())
        dim.set_dim_value(it->second.first);
    }
  }
  for (const onnx::ValueInfoProto &input : graph.input())
    if (!initializerNames.count(input.name()) && failed(checkStaticInput(input, errors)))
      return mlir::failure();
  return mlir::success();
}

} // namespace shardc::onnx_import
