//===- DoubleConstants.h - float64 constants that only feed casts to float32 ----------===//
//
// Exporters trace Python float scalars as float64 constants followed by a Cast to float32
// (BLOOM's attention scale, `torch.tensor(x)` in a float32 model), or as a float64 branch of a
// Where whose other branch is a float32 tensor (Gemma2's `torch.where(mask, finfo.min, x)`,
// which PyTorch computes in float32). shardc has no float64 tensors; such a constant is
// narrowed to the float32 value PyTorch computes with, so the model imports. A float64
// constant read by anything else still gets the one-line refusal naming it.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_DOUBLECONSTANTS_H
#define SHARDC_FRONTENDS_ONNX_DOUBLECONSTANTS_H

#include "onnx/onnx_pb.h"

namespace shardc::onnx_import {

// Rewrites, in `graph`, every Constant node whose `value` is a float64 tensor, which is not a
// graph output and whose every reader is a Cast to float32 or such a Where, into a float32
// Constant holding the values rounded to nearest (the Cast's result; the Casts become no-ops). The declared type of
// its output (value_info) follows. Constants with external data must have been inlined.
void narrowDoubleConstantsCastToFloat(onnx::GraphProto &graph);

} // namespace shardc::onnx_import

#endif
