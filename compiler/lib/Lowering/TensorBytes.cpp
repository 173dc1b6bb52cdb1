//===- TensorBytes.cpp ------------------------------------------------------------------===//
#include "shardc/Lowering/TensorBytes.h"

#include "shardc/Lowering/KernelMapping.h"

#include "runtime/kernels/kernel.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cstring>

using namespace mlir;

namespace shardc {

size_t runtimeElementSize(Type elementType) {
  // The runtime's one answer (dtypeSize), for the dtype the program stores the type as.
  return runtime::dtypeSize(toProgramDType(elementType));
}

namespace {
template <typename T> void appendValues(DenseElementsAttr value, std::vector<char> &out) {
  out.resize(value.getNumElements() * sizeof(T));
  char *dst = out.data();
  for (T v : value.getValues<T>()) {
    std::memcpy(dst, &v, sizeof(T));
    dst += sizeof(T);
  }
}
template <typename T>
DenseElementsAttr buildFrom(RankedTensorType type, llvm::ArrayRef<char> bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return DenseElementsAttr::get(type, llvm::ArrayRef<T>(values));
}
} // namespace

std::vector<char> toRuntimeBytes(DenseElementsAttr value) {
  std::vector<char> out;
  Type elem = value.getElementType();
  if (elem.isF32())
    appendValues<float>(value, out);
  else if (elem.isInteger(64))
    appendValues<int64_t>(value, out);
  else if (elem.isInteger(32))
    appendValues<int32_t>(value, out);
  else if (elem.isInteger(1)) {
    out.reserve(value.getNumElements());
    for (bool b : value.getValues<bool>())
      out.push_back(b ? 1 : 0);
  } else if (elem.isBF16() || elem.isF16()) {
    // Their bit patterns, as the runtime stores them.
    out.resize(value.getNumElements() * sizeof(uint16_t));
    char *dst = out.data();
    for (const llvm::APFloat &v : value.getValues<llvm::APFloat>()) {
      const uint16_t bits = static_cast<uint16_t>(v.bitcastToAPInt().getZExtValue());
      std::memcpy(dst, &bits, sizeof bits);
      dst += sizeof bits;
    }
  }
  return out;
}

DenseElementsAttr fromRuntimeBytes(RankedTensorType type, llvm::ArrayRef<char> bytes) {
  Type elem = type.getElementType();
  if (elem.isF32())
    return buildFrom<float>(type, bytes);
  if (elem.isInteger(64))
    return buildFrom<int64_t>(type, bytes);
  if (elem.isInteger(32))
    return buildFrom<int32_t>(type, bytes);
  if (elem.isBF16() || elem.isF16()) {
    const llvm::fltSemantics &semantics = cast<FloatType>(elem).getFloatSemantics();
    llvm::SmallVector<llvm::APFloat> values;
    for (size_t i = 0; i + 1 < bytes.size(); i += sizeof(uint16_t)) {
      uint16_t bits;
      std::memcpy(&bits, bytes.data() + i, sizeof bits);
      values.emplace_back(semantics, llvm::APInt(16, bits));
    }
    return DenseElementsAttr::get(type, values);
  }
  std::vector<bool> values;
  for (char c : bytes)
    values.push_back(c != 0);
  // ArrayRef<bool> needs contiguous storage; std::vector<bool> is packed, so copy.
  llvm::SmallVector<bool> flat(values.begin(), values.end());
  return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(flat));
}

} // namespace shardc
