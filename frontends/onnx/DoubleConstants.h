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

#include <string>
#include <vector>

namespace shardc::onnx_import {

// Rewrites, in `graph`, every Constant node whose `value` is a float64 tensor, which is not a
// graph output and whose every reader is a Cast to float32 or such a Where, into a float32
// Constant holding the values rounded to nearest (the Cast's result; the Casts become no-ops). The declared type of
// its output (value_info) follows. Constants with external data must have been inlined.
void narrowDoubleConstantsCastToFloat(onnx::GraphProto &graph);

// A float64 region: the values computed from a Cast of float32 to float64 (and float64
// constants beside them) that end, on every path, in a Cast back to float32 (Gemma2's
// attention scores cast to float64 to meet a mask the exporter typed float64, softmaxed, cast
// back). shardc has no float64 arithmetic; such a region is computed in float32, which is what
// PyTorch computes where the float64 came from a Python scalar's type. Each region's casts
// become float32 casts (no-ops) and its values float32. Returns one line per region for the
// user's warning ("nodes 'A'..'B' (N nodes) compute in float64 ..."); a float64 value that
// leaves the graph, is read by a subgraph or reaches no Cast to float32 keeps its type (the
// importer then refuses it by name).
std::vector<std::string> narrowFloat64Regions(onnx::GraphProto &graph);

} // namespace shardc::onnx_import

#endif
