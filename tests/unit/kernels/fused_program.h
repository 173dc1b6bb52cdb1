// fused_elementwise's attributes (docs/kernels.md) for a program the tests write as (opcode, a,
// b) triples: `steps` names the opcodes, `args` holds a and b. Shared by the CPU and CUDA tests.
#pragma once

#include "tests/unit/kernels/test_support.h"

#include "runtime/kernels/fused_elementwise_code.h"

#include <string>
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

} // namespace shardc::runtime::testing
