//===- TensorDecoding.cpp ---------------------------------------------------------------===//
#include "frontends/onnx/TensorDecoding.h"

#include "frontends/onnx/ErrorReporting.h"
#include "frontends/onnx/ExternalData.h"
#include "frontends/onnx/ImportLimits.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;

namespace shardc::onnx_import {

Type elementTypeFor(MLIRContext &ctx, int64_t onnxDataType) {
  switch (onnxDataType) {
  case onnx::TensorProto::FLOAT:
    return Float32Type::get(&ctx);
  case onnx::TensorProto::INT64:
    return IntegerType::get(&ctx, 64);
  case onnx::TensorProto::INT32:
    return IntegerType::get(&ctx, 32);
  case onnx::TensorProto::BOOL:
    return IntegerType::get(&ctx, 1);
  default:
    return Type();
  }
}

int64_t elementByteSize(Type elementType) {
  if (elementType.isInteger(1))
    return 1;
  return elementType.getIntOrFloatBitWidth() / 8;
}

std::string unsupportedElementType(int64_t onnxDataType) {
  return "element type " + onnxTypeName(onnxDataType) +
         " is not supported (shardc supports float32, int64, int32, bool)";
}

std::string describeType(RankedTensorType type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

FailureOr<RankedTensorType> tensorTypeOf(MLIRContext &ctx, const onnx::TensorProto &tensor,
                                         std::string &why) {
  Type element = elementTypeFor(ctx, tensor.data_type());
  if (!element) {
    why = unsupportedElementType(tensor.data_type());
    return failure();
  }
  llvm::SmallVector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  std::string shapeWhy;
  if (!checkedElementCount(dims, shapeWhy)) {
    why = "invalid shape: " + shapeWhy;
    return failure();
  }
  return RankedTensorType::get(dims, element);
}

namespace {

// Copies `values` into `out` as little-endian bytes of `width` bytes each.
template <typename T> void appendLittleEndian(const T &values, std::vector<char> &out) {
  using Value = std::decay_t<decltype(*values.begin())>;
  out.resize(values.size() * sizeof(Value));
  char *p = out.data();
  for (Value v : values) {
    llvm::support::endian::write<Value, llvm::endianness::little>(p, v);
    p += sizeof(Value);
  }
}

// The typed repeated field that carries `tensor`'s values when raw_data is not used.
LogicalResult decodeTypedFields(const onnx::TensorProto &tensor, int64_t count,
                                std::vector<char> &out, std::string &why) {
  auto check = [&](int size, llvm::StringRef field) {
    if (size == count)
      return success();
    why = field.str() + " has " + std::to_string(size) + " values but the shape needs " +
          std::to_string(count);
    return failure();
  };
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    if (failed(check(tensor.float_data_size(), "float_data")))
      return failure();
    appendLittleEndian(tensor.float_data(), out);
    return success();
  case onnx::TensorProto::INT64:
    if (failed(check(tensor.int64_data_size(), "int64_data")))
      return failure();
    appendLittleEndian(tensor.int64_data(), out);
    return success();
  case onnx::TensorProto::INT32:
    if (failed(check(tensor.int32_data_size(), "int32_data")))
      return failure();
    appendLittleEndian(tensor.int32_data(), out);
    return success();
  case onnx::TensorProto::BOOL:
    if (failed(check(tensor.int32_data_size(), "int32_data")))
      return failure();
    for (int32_t v : tensor.int32_data())
      out.push_back(v != 0 ? 1 : 0);
    return success();
  default:
    why = unsupportedElementType(tensor.data_type());
    return failure();
  }
}

} // namespace

LogicalResult decodeTensor(MLIRContext &ctx, const onnx::TensorProto &tensor,
                           llvm::StringRef baseDir, DecodedTensor &out, std::string &why) {
  FailureOr<RankedTensorType> type = tensorTypeOf(ctx, tensor, why);
  if (failed(type))
    return failure();
  out.type = *type;
  out.present = true;
  out.bytes.clear();
  int64_t count = type->getNumElements();
  int64_t byteCount = count * elementByteSize(type->getElementType());
  if (tensor.has_segment()) {
    why = "segmented tensors are not supported";
    return failure();
  }

  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    ExternalDataRef ref;
    bool missing = false;
    if (failed(parseExternalDataRef(tensor, ref, why)) ||
        failed(readExternalData(baseDir, ref, byteCount, out.bytes, missing, why)))
      return failure();
    if (missing) {
      out.present = false;
      out.missingFile = ref.location;
      return success();
    }
  } else if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (static_cast<int64_t>(raw.size()) != byteCount) {
      why = "raw_data has " + std::to_string(raw.size()) + " bytes but the shape needs " +
            std::to_string(byteCount);
      return failure();
    }
    out.bytes.assign(raw.begin(), raw.end());
  } else if (failed(decodeTypedFields(tensor, count, out.bytes, why))) {
    return failure();
  }

  // ONNX stores bool as one byte per element; any non-zero byte means true.
  if (type->getElementType().isInteger(1))
    for (char &b : out.bytes)
      b = b != 0 ? 1 : 0;
  return success();
}

DenseElementsAttr toElementsAttr(const DecodedTensor &tensor) {
  return toElementsAttr(tensor.type, tensor.bytes);
}

DenseElementsAttr toElementsAttr(RankedTensorType type, llvm::ArrayRef<char> bytes) {
  using namespace llvm::support;
  Type element = type.getElementType();
  const char *p = bytes.data();
  int64_t n = type.getNumElements();
  if (element.isF32()) {
    std::vector<float> values(n);
    for (int64_t i = 0; i < n; ++i) {
      uint32_t bits = endian::read32le(p + 4 * i);
      std::memcpy(&values[i], &bits, 4);
    }
    return DenseElementsAttr::get(type, llvm::ArrayRef<float>(values));
  }
  if (element.isInteger(64)) {
    std::vector<int64_t> values(n);
    for (int64_t i = 0; i < n; ++i)
      values[i] = static_cast<int64_t>(endian::read64le(p + 8 * i));
    return DenseElementsAttr::get(type, llvm::ArrayRef<int64_t>(values));
  }
  if (element.isInteger(32)) {
    std::vector<int32_t> values(n);
    for (int64_t i = 0; i < n; ++i)
      values[i] = static_cast<int32_t>(endian::read32le(p + 4 * i));
    return DenseElementsAttr::get(type, llvm::ArrayRef<int32_t>(values));
  }
  llvm::SmallVector<bool> values(n);
  for (int64_t i = 0; i < n; ++i)
    values[i] = p[i] != 0;
  return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(values));
}

} // namespace shardc::onnx_import
