// Looking up a program's input and output bindings by name.
#pragma once

#include "runtime/program/program.pb.h"

#include <string>

namespace shardc::runtime {

// The binding named `name` in `bindings`, or null.
const program::Binding *
findBinding(const google::protobuf::RepeatedPtrField<program::Binding> &bindings,
            const std::string &name);

} // namespace shardc::runtime
