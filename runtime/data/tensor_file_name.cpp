#include "runtime/data/tensor_file_name.h"

#include <cstddef>

namespace shardc::runtime {

namespace {

bool isKeptAscii(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// Length of the well-formed UTF-8 sequence starting at name[i], or 1 if it is not one.
size_t utf8SequenceLength(const std::string &name, size_t i) {
  unsigned char lead = static_cast<unsigned char>(name[i]);
  size_t length = lead >= 0xF0 && lead <= 0xF4   ? 4
                  : lead >= 0xE0 && lead <= 0xEF ? 3
                  : lead >= 0xC2 && lead <= 0xDF ? 2
                                                 : 1;
  if (i + length > name.size())
    return 1;
  for (size_t k = 1; k < length; ++k)
    if ((static_cast<unsigned char>(name[i + k]) & 0xC0) != 0x80)
      return 1;
  return length;
}

} // namespace

std::string tensorFileStem(const std::string &tensorName) {
  std::string stem;
  stem.reserve(tensorName.size());
  for (size_t i = 0; i < tensorName.size();) {
    unsigned char c = static_cast<unsigned char>(tensorName[i]);
    if (isKeptAscii(c)) {
      stem += static_cast<char>(c);
      ++i;
    } else {
      stem += '_';
      i += c < 0x80 ? 1 : utf8SequenceLength(tensorName, i);
    }
  }
  return stem;
}

std::string tensorNpyFileName(const std::string &tensorName) {
  return tensorFileStem(tensorName) + ".npy";
}

} // namespace shardc::runtime
