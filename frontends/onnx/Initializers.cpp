//===- Initializers.cpp -----------------------------------------------------------------===//
#include "frontends/onnx/Initializers.h"

#include "frontends/onnx/ErrorReporting.h"
#include "frontends/onnx/SupportedOps.h"
#include "frontends/onnx/TensorDecoding.h"

#include <cmath>
#include <cstring>

namespace shardc::onnx_import {

namespace {

// Replaces whatever carried the tensor's values by `bytes` as raw_data.
void setRawData(onnx::TensorProto &tensor, const std::vector<char> &bytes) {
  tensor.clear_external_data();
  tensor.clear_data_location();
  tensor.clear_float_data();
  tensor.clear_int32_data();
  tensor.clear_int64_data();
  tensor.set_raw_data(bytes.data(), bytes.size());
}

// Frees the parameter's values in the proto (they now live in the WeightStore): swapping with
// empty containers releases the memory, which clear_*() would keep as capacity.
void dropData(onnx::TensorProto &tensor) {
  std::string().swap(*tensor.mutable_raw_data());
  tensor.clear_raw_data();
  google::protobuf::RepeatedField<float>().Swap(tensor.mutable_float_data());
  google::protobuf::RepeatedField<int32_t>().Swap(tensor.mutable_int32_data());
  google::protobuf::RepeatedField<int64_t>().Swap(tensor.mutable_int64_data());
}

std::string missingFileMessage(const DecodedTensor &decoded) {
  return "external data file " + quote(decoded.missingFile) + " not found";
}

bool hasNonFinite(const std::vector<char> &f32Bytes) {
  for (size_t i = 0; i + sizeof(float) <= f32Bytes.size(); i += sizeof(float)) {
    float value;
    std::memcpy(&value, f32Bytes.data() + i, sizeof(float));
    if (!std::isfinite(value))
      return true;
  }
  return false;
}

} // namespace

mlir::LogicalResult loadInitializers(mlir::MLIRContext &ctx, onnx::GraphProto &graph,
                                     const InitializerOptions &options, InitializerSet &out,
                                     WeightStore &weights, ErrorReporter &errors) {
  if (graph.sparse_initializer_size() > 0)
    return errors.fail("sparse initializers are not supported");
  std::set<std::string> graphInputs;
  for (const onnx::ValueInfoProto &input : graph.input())
    graphInputs.insert(input.name());

  for (onnx::TensorProto &tensor : *graph.mutable_initializer()) {
    const std::string &name = tensor.name();
    std::string what = "initializer " + quote(name);
    if (name.empty())
      return errors.fail("an initializer has no name");
    if (!out.names.insert(name).second)
      return errors.fail(what + " is defined twice");

    DecodedTensor decoded;
    std::string why;
    bool neededAtCompileTime = options.compileTimeNames.count(name) > 0;
    if (!options.requireWeights && !neededAtCompileTime &&
        tensor.data_type() == onnx::TensorProto::FLOAT) {
      // Planning without the weights (--no-weights): a float tensor's bytes are never read,
      // whether its data is there or not; only its type is (the plan's sizes). Its inline
      // data is dropped below with the parameter's.
      mlir::FailureOr<mlir::RankedTensorType> type = tensorTypeOf(ctx, tensor, why);
      if (failed(type))
        return errors.fail(what + ": " + why);
      decoded.type = *type;
      decoded.present = false;
    } else if (failed(decodeTensor(ctx, tensor, options.baseDir, decoded, why))) {
      return errors.fail(what + ": " + why);
    }
    if (!decoded.present && (options.requireWeights || neededAtCompileTime))
      return errors.fail(
          what + ": " + missingFileMessage(decoded) +
          (options.requireWeights ? "" : " (its values are needed at compile time)"));

    ImportedInitializer entry;
    entry.name = name;
    entry.type = decoded.type;
    bool isFloat = decoded.type.getElementType().isF32();
    entry.isParameter =
        !neededAtCompileTime && (isFloat || graphInputs.count(name) > 0 || !decoded.present);
    if (entry.isParameter) {
      // An optimizer step makes nothing of NaN or infinity but NaN: no trained parameter holds
      // one, while a buffer such as a causal mask added to the scores (-inf above the
      // diagonal) does, and has a gradient like any other addend.
      if (options.recordedTrainable && isFloat && !options.recordedTrainable->count(name))
        entry.notTrainable = "a buffer: not in the model's record of trained parameters "
                             "(shardc.trainable)";
      else if (decoded.present && isFloat && hasNonFinite(decoded.bytes))
        entry.notTrainable = "holds non-finite values (a buffer, such as an additive "
                             "attention mask: PyTorch trains no such tensor)";
      out.parameterNames.insert(name);
      weights.add(name, WeightTensor{decoded.type, decoded.present, std::move(decoded.bytes)});
      dropData(tensor);
    } else {
      entry.value = toElementsAttr(decoded);
      if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
        setRawData(tensor, decoded.bytes);
    }
    out.entries.push_back(std::move(entry));
  }
  return mlir::success();
}

mlir::LogicalResult inlineConstantNodeData(mlir::MLIRContext &ctx, onnx::GraphProto &graph,
                                           llvm::StringRef baseDir, ErrorReporter &errors) {
  for (int i = 0; i < graph.node_size(); ++i) {
    onnx::NodeProto &node = *graph.mutable_node(i);
    if (node.op_type() != "Constant")
      continue;
    std::string what = "node " + quote(nodeDisplayName(node, i)) + " (Constant): ";
    for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
      if (!attr.has_t() || attr.t().data_location() != onnx::TensorProto::EXTERNAL)
        continue;
      DecodedTensor decoded;
      std::string why;
      if (failed(decodeTensor(ctx, attr.t(), baseDir, decoded, why)))
        return errors.fail(what + "value: " + why);
      if (!decoded.present)
        return errors.fail(what + missingFileMessage(decoded));
      setRawData(*attr.mutable_t(), decoded.bytes);
    }
  }
  return mlir::success();
}

} // namespace shardc::onnx_import
