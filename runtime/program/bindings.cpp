#include "runtime/program/bindings.h"

namespace shardc::runtime {

const program::Binding *
findBinding(const google::protobuf::RepeatedPtrField<program::Binding> &bindings,
            const std::string &name) {
  for (const program::Binding &binding : bindings)
    if (binding.name() == name)
      return &binding;
  return nullptr;
}

} // namespace shardc::runtime
