// The contracts of the elementwise kernels (operand counts, dtypes, shapes, the broadcast walk),
// written once for every device: the CPU and CUDA kernels of a name call the same check, which
// reads only the operands' dtypes and shapes and the attributes, never their data.
#pragma once

#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/kernel.h"

namespace shardc::runtime::cpu {

// One input, one output of the same dtype and shape.
Status checkUnary(const char *kernel, const KernelArgs &args);
// checkUnary on f32.
Status checkFloatUnary(const char *kernel, const KernelArgs &args);
// checkUnary on f32, i64 or i32.
Status checkNumericUnary(const char *kernel, const KernelArgs &args);

// Two inputs and one output whose shape is their broadcast; plans the walk.
Status checkBinary(const char *kernel, const KernelArgs &args, StridedLoop *loop);
// checkBinary with a, b and y of one numeric dtype.
Status checkNumericBinary(const char *kernel, const KernelArgs &args, StridedLoop *loop);
// mod(a, b) -> y: checkNumericBinary, and attribute 'fmod' 0 or 1 (*fmod), 1 for f32 (the
// only float form ONNX defines).
Status checkMod(const KernelArgs &args, StridedLoop *loop, bool *fmod);
// checkBinary with a and b of one dtype (numeric, or also bool when `allowBool`) and y bool.
Status checkComparison(const char *kernel, const KernelArgs &args, bool allowBool,
                       StridedLoop *loop);
// checkBinary with a, b and y bool.
Status checkLogical(const char *kernel, const KernelArgs &args, StridedLoop *loop);

// where(cond, x, y) -> z: cond bool, x, y and z one dtype, z the broadcast of the three.
Status checkWhere(const KernelArgs &args, StridedLoop *loop);
// cast(x) -> y: attribute 'to' is y's dtype, y has x's shape.
Status checkCast(const KernelArgs &args);

} // namespace shardc::runtime::cpu
