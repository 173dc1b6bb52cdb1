#include "runtime/data/npy.h"

#include "runtime/support/file_io.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

// .npy stores little-endian data and the runtime hands the bytes to kernels as they are.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "npy I/O assumes a little-endian host");

namespace shardc::runtime {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// numpy's own limit (NPY_MAXDIMS in numpy 2); also bounds the work on a hostile header.
constexpr size_t kMaxRank = 64;
constexpr const char *kSupportedDtypes = "<f4 <i8 <i4 |b1";

struct DtypeCode {
  const char *descr;
  DType dtype;
};
constexpr DtypeCode kDtypeCodes[] = {
    {"<f4", program::F32}, {"<i8", program::I64}, {"<i4", program::I32}, {"|b1", program::BOOL}};

const char *descrOf(DType dtype) {
  for (const DtypeCode &code : kDtypeCodes)
    if (code.dtype == dtype)
      return code.descr;
  return nullptr;
}

struct NpyHeader {
  DType dtype = program::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  size_t dataOffset = 0; // where the array bytes start
  size_t dataBytes = 0;  // numel * element size
};

// A strict parser for the header's Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// It accepts what numpy writes (either quote style, any whitespace, optional trailing commas)
// and rejects everything else with a message saying what it expected.
class HeaderParser {
public:
  HeaderParser(const char *text, size_t size) : text_(text), size_(size) {}

  Status parse(std::string *descr, bool *fortranOrder, std::vector<int64_t> *shape) {
    bool haveDescr = false, haveOrder = false, haveShape = false;
    skipSpace();
    SHARDC_RETURN_IF_ERROR(expect('{', "'{' at the start of the header"));
    while (true) {
      skipSpace();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      std::string key;
      SHARDC_RETURN_IF_ERROR(parseString(&key, "a quoted key or '}'"));
      skipSpace();
      SHARDC_RETURN_IF_ERROR(expect(':', "':' after key '" + key + "'"));
      skipSpace();
      bool *seen = nullptr;
      if (key == "descr") {
        seen = &haveDescr;
        SHARDC_RETURN_IF_ERROR(parseString(descr, "a quoted dtype after 'descr'"));
      } else if (key == "fortran_order") {
        seen = &haveOrder;
        SHARDC_RETURN_IF_ERROR(parseBool(fortranOrder));
      } else if (key == "shape") {
        seen = &haveShape;
        SHARDC_RETURN_IF_ERROR(parseShape(shape));
      } else {
        return error("unexpected key '" + key + "'");
      }
      if (*seen)
        return error("duplicate key '" + key + "'");
      *seen = true;
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        break;
      }
      return error("expected ',' or '}' after the value of '" + key + "'");
    }
    skipSpace();
    if (pos_ != size_)
      return error("unexpected text after the closing '}'");
    if (!haveDescr)
      return error("missing key 'descr'");
    if (!haveOrder)
      return error("missing key 'fortran_order'");
    if (!haveShape)
      return error("missing key 'shape'");
    return Status::ok();
  }

private:
  // End of input reads as '\0', which matches no expected token.
  char peek() const { return pos_ < size_ ? text_[pos_] : '\0'; }

  void skipSpace() {
    while (pos_ < size_ && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                            text_[pos_] == '\r'))
      ++pos_;
  }

  Status error(const std::string &what) const { return Status::error("malformed header: " + what); }

  Status expect(char c, const std::string &what) {
    if (peek() != c)
      return error("expected " + what);
    ++pos_;
    return Status::ok();
  }

  // A quoted string without escapes: no valid key or dtype needs one.
  Status parseString(std::string *out, const std::string &what) {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      return error("expected " + what);
    size_t start = ++pos_;
    while (pos_ < size_ && text_[pos_] != quote) {
      char c = text_[pos_];
      if (c == '\\' || c == '\n' || static_cast<unsigned char>(c) < 0x20 ||
          static_cast<unsigned char>(c) >= 0x7F)
        return error("unsupported character in a string");
      ++pos_;
    }
    if (pos_ >= size_)
      return error("unterminated string");
    out->assign(text_ + start, pos_ - start);
    ++pos_;
    return Status::ok();
  }

  bool consumeWord(const char *word) {
    size_t n = std::strlen(word);
    if (size_ - pos_ < n || std::memcmp(text_ + pos_, word, n) != 0)
      return false;
    pos_ += n;
    return true;
  }

  Status parseBool(bool *out) {
    if (consumeWord("True"))
      *out = true;
    else if (consumeWord("False"))
      *out = false;
    else
      return error("expected True or False after 'fortran_order'");
    return Status::ok();
  }

  Status parseDim(int64_t *out) {
    if (peek() == '-')
      return error("negative dimension in 'shape'");
    if (peek() < '0' || peek() > '9')
      return error("expected a dimension or ')' in 'shape'");
    int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      int digit = peek() - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        return error("dimension too large in 'shape'");
      value = value * 10 + digit;
      ++pos_;
    }
    *out = value;
    return Status::ok();
  }

  // "()", "(3,)", "(2, 3)" or "(2, 3,)"; "(3)" is an int in Python, not a shape tuple.
  Status parseShape(std::vector<int64_t> *shape) {
    shape->clear();
    SHARDC_RETURN_IF_ERROR(expect('(', "a tuple after 'shape'"));
    bool trailingComma = false;
    while (true) {
      skipSpace();
      if (peek() == ')') {
        ++pos_;
        break;
      }
      if (shape->size() == kMaxRank)
        return error("more than " + std::to_string(kMaxRank) + " dimensions in 'shape'");
      int64_t dim = 0;
      SHARDC_RETURN_IF_ERROR(parseDim(&dim));
      shape->push_back(dim);
      skipSpace();
      trailingComma = peek() == ',';
      if (trailingComma) {
        ++pos_;
        continue;
      }
      SHARDC_RETURN_IF_ERROR(expect(')', "',' or ')' in 'shape'"));
      break;
    }
    if (shape->size() == 1 && !trailingComma)
      return error("'shape' is not a tuple (a 1-d shape is written (n,))");
    return Status::ok();
  }

  const char *text_;
  size_t size_;
  size_t pos_ = 0;
};

uint32_t readLittleEndian(const uint8_t *p, size_t bytes) {
  uint32_t value = 0;
  for (size_t i = 0; i < bytes; ++i)
    value |= static_cast<uint32_t>(p[i]) << (8 * i);
  return value;
}

// The magic, the version and the header length: enough to know where the data starts.
constexpr size_t kMaxPreamble = kMagicSize + 2 + 4;

// Where the header of the .npy image starting with `data` (at least its preamble when the
// file has one) ends; false when `data` is too short or not a known version to tell.
bool headerEndOf(const uint8_t *data, size_t size, uint64_t *end) {
  if (size < kMagicSize + 2)
    return false;
  uint8_t major = data[6];
  size_t lengthBytes = major == 1 ? 2 : 4;
  if (major < 1 || major > 3 || size < kMagicSize + 2 + lengthBytes)
    return false;
  *end = kMagicSize + 2 + lengthBytes + readLittleEndian(data + kMagicSize + 2, lengthBytes);
  return true;
}

// Parses everything before the array data and checks the data length; errors lack the source
// name (the callers add it). `data` holds `size` bytes: at least the header when the file has
// a whole one. `fileSize` is the size of the whole image (by default `size`: all of it).
Status parseHeader(const uint8_t *data, size_t size, NpyHeader *out, uint64_t fileSize = 0) {
  // The header checks read only the first `size` bytes; the data length is checked against
  // the file's size.
  if (fileSize == 0)
    fileSize = size;
  if (size < kMagicSize || std::memcmp(data, kMagic, kMagicSize) != 0)
    return Status::error("not a .npy file (bad magic)");
  if (size < kMagicSize + 2)
    return Status::error("truncated: the file ends inside the header");
  uint8_t major = data[6], minor = data[7];
  if (major < 1 || major > 3 || minor != 0)
    return Status::error("unsupported .npy format version " + std::to_string(major) + "." +
                         std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  size_t lengthBytes = major == 1 ? 2 : 4;
  size_t preamble = kMagicSize + 2 + lengthBytes;
  if (size < preamble)
    return Status::error("truncated: the file ends inside the header");
  size_t headerLength = readLittleEndian(data + kMagicSize + 2, lengthBytes);
  if (size - preamble < headerLength)
    return Status::error("truncated: header length is " + std::to_string(headerLength) +
                         " bytes, file has " + std::to_string(size - preamble) +
                         " after the preamble");

  std::string descr;
  bool fortranOrder = false;
  HeaderParser parser(reinterpret_cast<const char *>(data + preamble), headerLength);
  SHARDC_RETURN_IF_ERROR(parser.parse(&descr, &fortranOrder, &out->shape));

  out->dtype = program::DTYPE_UNSPECIFIED;
  for (const DtypeCode &code : kDtypeCodes)
    if (descr == code.descr)
      out->dtype = code.dtype;
  if (out->dtype == program::DTYPE_UNSPECIFIED)
    return Status::error("unsupported dtype '" + descr + "' (supported: " + kSupportedDtypes + ")");
  if (fortranOrder)
    return Status::error("Fortran-order arrays are not supported (save a C-order array, e.g. "
                         "with numpy.ascontiguousarray)");

  uint64_t bytes = dtypeSize(out->dtype);
  const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (int64_t dim : out->shape) {
    if (dim != 0 && bytes > limit / static_cast<uint64_t>(dim))
      return Status::error("shape " + describeTensorType(out->dtype, out->shape) + " is too large");
    bytes *= static_cast<uint64_t>(dim);
  }
  out->dataOffset = preamble + headerLength;
  uint64_t available = fileSize - out->dataOffset;
  if (available < bytes)
    return Status::error("truncated: header says " + std::to_string(bytes) +
                         " bytes of data, file has " + std::to_string(available));
  if (available > bytes)
    return Status::error("header says " + std::to_string(bytes) + " bytes of data, file has " +
                         std::to_string(available) + " (trailing bytes)");
  out->dataBytes = static_cast<size_t>(bytes);
  return Status::ok();
}

// numpy reads any non-zero byte of a bool array as True; kernels rely on exactly 0 or 1.
void normaliseBoolBytes(DType dtype, uint8_t *bytes, size_t size) {
  if (dtype != program::BOOL)
    return;
  for (size_t i = 0; i < size; ++i)
    bytes[i] = bytes[i] != 0;
}

void normaliseBools(HostTensor *tensor) {
  normaliseBoolBytes(tensor->dtype, tensor->bytes.data(), tensor->bytes.size());
}

} // namespace

Status parseNpy(const uint8_t *data, size_t size, const std::string &source, HostTensor *out) {
  NpyHeader header;
  Status status = parseHeader(data, size, &header);
  if (!status.isOk())
    return Status::error(source + ": " + status.message());
  out->dtype = header.dtype;
  out->shape = std::move(header.shape);
  out->bytes.assign(data + header.dataOffset, data + header.dataOffset + header.dataBytes);
  normaliseBools(out);
  return Status::ok();
}

namespace {

// The header of `path`: read up to the end of the preamble first, then the whole header, so
// that the (possibly large) data is never read twice.
Status readHeaderOf(const std::string &path, NpyHeader *header) {
  uint64_t fileSize = 0;
  SHARDC_RETURN_IF_ERROR(regularFileSize(path, &fileSize));
  std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(fileSize, kMaxPreamble)));
  SHARDC_RETURN_IF_ERROR(readFileRange(path, 0, head.size(), head.data()));
  uint64_t headerEnd = 0;
  if (headerEndOf(head.data(), head.size(), &headerEnd) && headerEnd > head.size()) {
    head.resize(static_cast<size_t>(std::min(headerEnd, fileSize)));
    SHARDC_RETURN_IF_ERROR(readFileRange(path, 0, head.size(), head.data()));
  }
  Status status = parseHeader(head.data(), head.size(), header, fileSize);
  if (!status.isOk())
    return Status::error(path + ": " + status.message());
  return Status::ok();
}

} // namespace

Status readNpy(const std::string &path, HostTensor *out) {
  // The data goes straight into the tensor: it is neither copied nor held twice, and the
  // tensor's storage is exactly its size (what the memory plan counts for an input read from a
  // file).
  NpyHeader header;
  SHARDC_RETURN_IF_ERROR(readHeaderOf(path, &header));
  out->dtype = header.dtype;
  out->shape = std::move(header.shape);
  out->bytes.resize(header.dataBytes);
  SHARDC_RETURN_IF_ERROR(
      readFileRange(path, header.dataOffset, header.dataBytes, out->bytes.data()));
  normaliseBools(out);
  return Status::ok();
}

Status readNpyInfo(const std::string &path, NpyFileInfo *out) {
  NpyHeader header;
  SHARDC_RETURN_IF_ERROR(readHeaderOf(path, &header));
  out->dtype = header.dtype;
  out->shape = std::move(header.shape);
  out->dataOffset = header.dataOffset;
  return Status::ok();
}

Status readNpyRows(const std::string &path, const NpyFileInfo &info, int64_t firstRow, int64_t rows,
                   uint8_t *dst) {
  if (info.shape.empty() || firstRow < 0 || rows < 0 || firstRow > info.shape[0] ||
      rows > info.shape[0] - firstRow)
    return Status::error(path + ": rows [" + std::to_string(firstRow) + ", " +
                         std::to_string(firstRow + rows) + ") lie outside " +
                         describeTensorType(info.dtype, info.shape));
  // readNpyInfo checked that the whole array's size fits in 64 bits, so a row's does too.
  uint64_t rowBytes = dtypeSize(info.dtype);
  for (size_t d = 1; d < info.shape.size(); ++d)
    rowBytes *= static_cast<uint64_t>(info.shape[d]);
  uint64_t bytes = rowBytes * static_cast<uint64_t>(rows);
  SHARDC_RETURN_IF_ERROR(readFileRange(
      path, info.dataOffset + rowBytes * static_cast<uint64_t>(firstRow), bytes, dst));
  normaliseBoolBytes(info.dtype, dst, static_cast<size_t>(bytes));
  return Status::ok();
}

Status encodeNpy(const HostTensor &tensor, const std::string &target, std::vector<uint8_t> *out) {
  const char *descr = descrOf(tensor.dtype);
  if (descr == nullptr)
    return Status::error(target + ": cannot write a tensor of unknown dtype " +
                         std::to_string(tensor.dtype));
  uint64_t bytes = dtypeSize(tensor.dtype);
  for (int64_t dim : tensor.shape) {
    if (dim < 0 || (dim != 0 && bytes > std::numeric_limits<uint64_t>::max() / dim))
      return Status::error(target + ": cannot write a tensor of shape " + tensor.describe());
    bytes *= static_cast<uint64_t>(dim);
  }
  if (bytes != tensor.bytes.size())
    return Status::error(target + ": cannot write " + tensor.describe() + ": it holds " +
                         std::to_string(tensor.bytes.size()) + " bytes, expected " +
                         std::to_string(bytes));

  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.shape.size(); ++i) {
    if (i)
      header += ", ";
    header += std::to_string(tensor.shape[i]);
  }
  if (tensor.shape.size() == 1)
    header += ',';
  header += "), }";
  // Version 1.0: magic, 2 version bytes, 2 length bytes; the header (ending in '\n') is padded
  // with spaces so the data starts at a multiple of 64 bytes.
  const size_t preamble = kMagicSize + 4;
  size_t total = preamble + header.size() + 1;
  total = (total + 63) / 64 * 64;
  header.append(total - preamble - header.size() - 1, ' ');
  header += '\n';
  if (header.size() > 0xFFFF)
    return Status::error(target + ": header too long for .npy version 1.0");

  out->clear();
  out->reserve(total + tensor.bytes.size());
  out->insert(out->end(), kMagic, kMagic + kMagicSize);
  out->push_back(1);
  out->push_back(0);
  out->push_back(static_cast<uint8_t>(header.size() & 0xFF));
  out->push_back(static_cast<uint8_t>(header.size() >> 8));
  out->insert(out->end(), header.begin(), header.end());
  out->insert(out->end(), tensor.bytes.begin(), tensor.bytes.end());
  return Status::ok();
}

Status writeNpy(const std::string &path, const HostTensor &tensor) {
  std::vector<uint8_t> image;
  SHARDC_RETURN_IF_ERROR(encodeNpy(tensor, path, &image));
  return writeFileAtomically(path, image.data(), image.size());
}

} // namespace shardc::runtime
