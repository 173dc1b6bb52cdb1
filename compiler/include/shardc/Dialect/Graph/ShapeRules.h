//===- ShapeRules.h - shape arithmetic shared by verifiers and the importer -------------===//
//
// Pure functions on static shapes. They return std::nullopt (and fill `why`) when the shapes
// are incompatible, so callers can report the error in their own context (an op verifier, an
// ONNX node, a kernel).
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_SHAPERULES_H
#define SHARDC_DIALECT_GRAPH_SHAPERULES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace shardc::graph {

using Shape = llvm::SmallVector<int64_t, 6>;

// NumPy multidirectional broadcasting of two shapes.
std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                                     std::string &why);
// True when `from` broadcasts to exactly `to` (unidirectional, as in Expand's result).
bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);
// numpy.matmul result shape (1-D operands promoted and the added dimension removed).
std::optional<Shape> matmulShape(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                                 std::string &why);
// A sliding window's geometry (conv, pooling) over the spatial dims of an NC + spatial
// tensor: per spatial dim the kernel extent, stride, dilation, and the pads (all begins, then
// all ends).
struct WindowGeometry {
  llvm::ArrayRef<int64_t> kernel, strides, pads, dilations;
  bool ceilMode = false;
};
// [N, channels, *O] for `input` [N, C, *S]. O = floor or, with ceilMode, ceil of
// (S + pad_begin + pad_end - dilation*(K-1) - 1) / stride, plus 1; in ceil mode a last window
// that would start past the input and its begin padding is dropped (PyTorch's rule).
std::optional<Shape> windowOutputShape(llvm::ArrayRef<int64_t> input, int64_t channels,
                                       const WindowGeometry &g, std::string &why);
// Product of the dimensions (1 for a scalar).
int64_t numElements(llvm::ArrayRef<int64_t> shape);
// Number of elements a slice start:end:step (already clamped) produces.
int64_t sliceLength(int64_t start, int64_t end, int64_t step);
// "2x3x4" ("scalar" for rank 0), for messages.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

} // namespace shardc::graph

#endif
