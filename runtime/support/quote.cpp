#include "runtime/support/quote.h"

namespace shardc::runtime {

std::string quoteForMessage(const std::string &text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\'':
      out += "\\'";
      break;
    default:
      if (c >= 0x20 && c < 0x7F) {
        out += static_cast<char>(c);
      } else {
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
      }
    }
  }
  return out + "'";
}

} // namespace shardc::runtime
