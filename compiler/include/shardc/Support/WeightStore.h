//===- WeightStore.h - parameter values kept beside the IR ------------------------------===//
//
// Parameter tensors (ONNX initializers that become @forward arguments) can be large, so their
// bytes stay out of the IR: the importer fills this store and the lowering copies it into the
// bundle's weights file. A parameter whose external-data file was absent while planning has
// no bytes (`present == false`); such a bundle can be inspected but not executed.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_SUPPORT_WEIGHTSTORE_H
#define SHARDC_SUPPORT_WEIGHTSTORE_H

#include "mlir/IR/BuiltinTypes.h"

#include <map>
#include <string>
#include <vector>

namespace shardc {

struct WeightTensor {
  mlir::RankedTensorType type; // static shape; f32, i64, i32 or i1
  bool present = false;        // false: external data absent (planning only)
  std::vector<char> bytes;     // little-endian, row-major; bool is one byte per element
};

class WeightStore {
public:
  void add(const std::string &name, WeightTensor tensor) { tensors_[name] = std::move(tensor); }
  const WeightTensor *find(const std::string &name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }
  bool allPresent() const {
    for (const auto &[name, t] : tensors_)
      if (!t.present)
        return false;
    return true;
  }
  const std::map<std::string, WeightTensor> &all() const { return tensors_; }

private:
  std::map<std::string, WeightTensor> tensors_;
};

} // namespace shardc

#endif
