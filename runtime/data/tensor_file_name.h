// How a tensor name becomes a file name: every character outside [A-Za-z0-9._-] becomes '_'
// ("onnx::Add_5" -> "onnx__Add_5.npy"). shardrun, the compiler and the test scripts all use this
// one rule, so a tensor's file can be found from its name alone. A "character" is a Unicode
// code point of the UTF-8 name (one '_' per non-ASCII character, as Python's
// re.sub(r'[^A-Za-z0-9._-]', '_', name) does); bytes that are not valid UTF-8 count one each.
#pragma once

#include <string>

namespace shardc::runtime {

// "onnx::Add_5" -> "onnx__Add_5".
std::string tensorFileStem(const std::string &tensorName);
// "onnx::Add_5" -> "onnx__Add_5.npy".
std::string tensorNpyFileName(const std::string &tensorName);

} // namespace shardc::runtime
