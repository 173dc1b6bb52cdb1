// fused_elementwise's attributes (docs/kernels.md) for a program the tests write as (opcode, a,
// b) triples: `steps` names the opcodes, `args` holds a and b. Shared by the CPU and CUDA tests.
#pragma once

#include "tests/unit/kernels/test_support.h"

#include "runtime/kernels/fused_elementwise_code.h"

#include <string>
#include <utility>
#include <vector>

namespace shardc::runtime::testing {

inline Attrs encodeFusedProgram(const std::vector<int64_t> &code,
                                const std::vector<int64_t> &results) {
  std::string steps;
  std::vector<int64_t> args;
  for (size_t i = 0; i + 3 <= code.size(); i += 3) {
    steps += (i ? " " : "") + std::string(fusedOpName(static_cast<FusedOp>(code[i])));
    args.insert(args.end(), {code[i + 1], code[i + 2]});
  }
  Attrs a;
  a.s("steps", steps).ints("args", args).ints("results", results);
  return a;
}

// Every ordered pair of `values`, as two operands of equal length: a[i] op b[i] meets each pair
// once (the NaN, infinity and signed-zero cases of max and min).
template <typename T>
std::pair<std::vector<T>, std::vector<T>> everyPair(const std::vector<T> &values) {
  std::pair<std::vector<T>, std::vector<T>> pairs;
  for (const T &u : values)
    for (const T &v : values) {
      pairs.first.push_back(u);
      pairs.second.push_back(v);
    }
  return pairs;
}

} // namespace shardc::runtime::testing
