// A frozen weight stored in fewer bits (shardc --base-dtype): the formats, the quantizer the
// compiler writes the bundle's weights with, and the dequantization the product kernels do row
// by row. Shared by the compiler (which quantizes) and the kernels (which dequantize), so that
// both read one definition of each format.
//
// Every format stores the weight W as [rows, cols] row-major: nn.Linear's [out, in] (a GPT-2
// Conv1D weight, [in, out], is transposed first), the layout bitsandbytes quantizes.
//
//   bf16  W rounded to bfloat16 (nearest, ties to even)                      2 bytes / element
//   int8  per row r: absmax_r = max |W[r, :]|, q = round(W * (127 / absmax_r)) (ties to even),
//         W' = q * (absmax_r / 127): bitsandbytes' vector-wise LLM.int8 quantization, without
//         its outlier decomposition (no column is kept in 16 bits)           1 byte + 4 per row
//   nf4   QLoRA's NormalFloat4 (Dettmers et al. 2023): W flattened, blocks of 64 consecutive
//         elements, absmax_b = max |x| per block; each x / absmax_b becomes the index of the
//         nearest of the 16 NF4 values (the midpoints between them decide, a value on one goes
//         to the lower code, as bitsandbytes' kernel does), two codes per byte, the first in the
//         high nibble; W' = NF4[code] * absmax_b                  half a byte + 4 per 64 elements
//
// A zero row (int8) or block (nf4) stores zeros and dequantizes to zeros.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardc::runtime {

enum class WeightFormat : int { Bf16 = 0, Int8 = 1, Nf4 = 2 };

// Elements per nf4 block (bitsandbytes' and QLoRA's blocksize 64).
constexpr int64_t kNf4BlockSize = 64;

// The format's name on the command line and in programs ("bf16", "int8", "nf4").
const char *weightFormatName(WeightFormat format);
std::optional<WeightFormat> weightFormatFromName(const std::string &name);

// The 16 NF4 values, as bitsandbytes stores them.
extern const float kNf4Values[16];

// A weight's quantized storage: `codes` (bf16 bits, int8 values or packed nf4 codes) and
// `scales` (int8: absmax per row; nf4: absmax per block; bf16: none).
struct QuantizedWeight {
  std::vector<uint8_t> codes;
  std::vector<float> scales;
};

// Bytes of the codes and number of scales of a [rows, cols] weight in `format`.
int64_t quantizedCodeBytes(WeightFormat format, int64_t rows, int64_t cols);
int64_t quantizedScaleCount(WeightFormat format, int64_t rows, int64_t cols);

// The [rows, cols] row-major matrix `m` transposed: [cols, rows]. A weight stored [in, out]
// (a GPT-2 Conv1D's) becomes the formats' [out, in] so, and back.
std::vector<float> transposedMatrix(const float *m, int64_t rows, int64_t cols);

// Quantizes the [rows, cols] row-major f32 weight `w` (nf4: rows * cols a multiple of 64).
QuantizedWeight quantizeWeight(WeightFormat format, const float *w, int64_t rows, int64_t cols);

// Writes rows [begin, end) of the dequantized weight into `out` ((end - begin) * cols floats),
// from the codes and scales of the whole weight.
void dequantizeRows(WeightFormat format, const uint8_t *codes, const float *scales, int64_t cols,
                    int64_t begin, int64_t end, float *out);

} // namespace shardc::runtime
