// The frozen-weight formats of shardc --base-dtype (quantized_weights.h).
#include "runtime/support/quantized_weights.h"

#include "runtime/support/half_float.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>

namespace shardc::runtime {

const float kNf4Values[16] = {
    -1.0f,
    -0.6961928009986877f,
    -0.5250730514526367f,
    -0.39491748809814453f,
    -0.28444138169288635f,
    -0.18477343022823334f,
    -0.09105003625154495f,
    0.0f,
    0.07958029955625534f,
    0.16093020141124725f,
    0.24611230194568634f,
    0.33791524171829224f,
    0.44070982933044434f,
    0.5626170039176941f,
    0.7229568362236023f,
    1.0f,
};

namespace {

// The decision points between consecutive NF4 values: their midpoints (bitsandbytes'
// dQuantizeNF4 compares against the same midpoints, written out as literals).
struct Nf4Thresholds {
  float t[15];
  Nf4Thresholds() {
    for (int i = 0; i < 15; ++i)
      t[i] = static_cast<float>((static_cast<double>(kNf4Values[i]) +
                                 static_cast<double>(kNf4Values[i + 1])) /
                                2.0);
  }
};

uint8_t nf4Code(float normalized) {
  static const Nf4Thresholds thresholds;
  uint8_t code = 0;
  while (code < 15 && normalized > thresholds.t[code])
    ++code;
  return code;
}

float absmaxOf(const float *x, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    m = std::max(m, std::fabs(x[i]));
  return m;
}

} // namespace

const char *weightFormatName(WeightFormat format) {
  switch (format) {
  case WeightFormat::Bf16:
    return "bf16";
  case WeightFormat::Int8:
    return "int8";
  case WeightFormat::Nf4:
    return "nf4";
  }
  return "?";
}

std::optional<WeightFormat> weightFormatFromName(const std::string &name) {
  for (WeightFormat f : {WeightFormat::Bf16, WeightFormat::Int8, WeightFormat::Nf4})
    if (name == weightFormatName(f))
      return f;
  return std::nullopt;
}

int64_t quantizedCodeBytes(WeightFormat format, int64_t rows, int64_t cols) {
  switch (format) {
  case WeightFormat::Bf16:
    return 2 * rows * cols;
  case WeightFormat::Int8:
    return rows * cols;
  case WeightFormat::Nf4:
    return rows * cols / 2;
  }
  return 0;
}

int64_t quantizedScaleCount(WeightFormat format, int64_t rows, int64_t cols) {
  switch (format) {
  case WeightFormat::Bf16:
    return 0;
  case WeightFormat::Int8:
    return rows;
  case WeightFormat::Nf4:
    return rows * cols / kNf4BlockSize;
  }
  return 0;
}

std::vector<float> transposedMatrix(const float *m, int64_t rows, int64_t cols) {
  std::vector<float> t(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      t[c * rows + r] = m[r * cols + c];
  return t;
}

QuantizedWeight quantizeWeight(WeightFormat format, const float *w, int64_t rows, int64_t cols) {
  QuantizedWeight q;
  q.codes.assign(static_cast<size_t>(quantizedCodeBytes(format, rows, cols)), 0);
  q.scales.assign(static_cast<size_t>(quantizedScaleCount(format, rows, cols)), 0.0f);
  const int64_t n = rows * cols;
  switch (format) {
  case WeightFormat::Bf16:
    for (int64_t i = 0; i < n; ++i) {
      const BFloat16 b = toBFloat16(w[i]);
      std::memcpy(q.codes.data() + 2 * i, &b.bits, 2);
    }
    break;
  case WeightFormat::Int8: {
    // std::nearbyint rounds in the current mode: to nearest, ties to even, as torch.round.
    const int mode = std::fegetround();
    std::fesetround(FE_TONEAREST);
    for (int64_t r = 0; r < rows; ++r) {
      const float *row = w + r * cols;
      const float absmax = absmaxOf(row, cols);
      q.scales[r] = absmax;
      if (absmax == 0.0f)
        continue;
      const float scale = 127.0f / absmax;
      for (int64_t c = 0; c < cols; ++c) {
        const float v = std::clamp(std::nearbyint(row[c] * scale), -127.0f, 127.0f);
        q.codes[r * cols + c] = static_cast<uint8_t>(static_cast<int8_t>(v));
      }
    }
    std::fesetround(mode);
    break;
  }
  case WeightFormat::Nf4:
    for (int64_t b = 0; b < n / kNf4BlockSize; ++b) {
      const float *block = w + b * kNf4BlockSize;
      const float absmax = absmaxOf(block, kNf4BlockSize);
      q.scales[b] = absmax;
      const float inverse = absmax == 0.0f ? 0.0f : 1.0f / absmax;
      for (int64_t i = 0; i < kNf4BlockSize; i += 2) {
        const uint8_t hi = nf4Code(block[i] * inverse), lo = nf4Code(block[i + 1] * inverse);
        q.codes[(b * kNf4BlockSize + i) / 2] = static_cast<uint8_t>((hi << 4) | lo);
      }
    }
    break;
  }
  return q;
}

void dequantizeRows(WeightFormat format, const uint8_t *codes, const float *scales, int64_t cols,
                    int64_t begin, int64_t end, float *out) {
  switch (format) {
  case WeightFormat::Bf16: {
    for (int64_t i = begin * cols; i < end * cols; ++i) {
      BFloat16 b;
      std::memcpy(&b.bits, codes + 2 * i, 2);
      *out++ = toFloat(b);
    }
    break;
  }
  case WeightFormat::Int8:
    for (int64_t r = begin; r < end; ++r) {
      const float scale = scales[r] / 127.0f;
      const int8_t *row = reinterpret_cast<const int8_t *>(codes) + r * cols;
      for (int64_t c = 0; c < cols; ++c)
        *out++ = static_cast<float>(row[c]) * scale;
    }
    break;
  case WeightFormat::Nf4:
    // Element i (flat) is the high nibble of byte i/2 when i is even; its block is i/64.
    for (int64_t i = begin * cols; i < end * cols; ++i) {
      const uint8_t byte = codes[i / 2];
      const uint8_t code = (i % 2 == 0) ? (byte >> 4) : (byte & 0x0f);
      *out++ = kNf4Values[code] * scales[i / kNf4BlockSize];
    }
    break;
  }
}

} // namespace shardc::runtime
