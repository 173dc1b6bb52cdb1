//===- GraphOps.cpp - result-shape inference, verifiers and folders ---------------------===//
//
// Shape inference follows the ONNX operator specifications (opset 13-20). Inference
// functions report *why* shapes are incompatible; the ODS-generated verifier uses them to
// reject ops whose declared result types disagree.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ShapeRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace shardc::graph;

namespace {

RankedTensorType rankedType(Value v) {
  return v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

bool isBool(Type t) { return t.isInteger(1); }

enum class BinaryKind { Arith, Pow, Compare, Logical };

LogicalResult inferBinary(std::optional<Location> loc, Value lhs, Value rhs, BinaryKind kind,
                          SmallVectorImpl<Type> &out) {
  auto a = rankedType(lhs), b = rankedType(rhs);
  if (!a || !b)
    return emitOptionalError(loc, "operands must be ranked tensors");
  Type ea = a.getElementType(), eb = b.getElementType();
  switch (kind) {
  case BinaryKind::Arith:
  case BinaryKind::Compare:
    if (ea != eb)
      return emitOptionalError(loc, "operand element types differ: ", ea, " vs ", eb);
    if (kind == BinaryKind::Arith && isBool(ea))
      return emitOptionalError(loc, "arithmetic on bool tensors is not defined");
    break;
  case BinaryKind::Pow:
    if (isBool(ea) || isBool(eb))
      return emitOptionalError(loc, "pow needs numeric operands");
    break;
  case BinaryKind::Logical:
    if (!isBool(ea) || !isBool(eb))
      return emitOptionalError(loc, "logical ops need bool operands");
    break;
  }
  std::string why;
  auto shape = broadcastShapes(a.getShape(), b.getShape(), why);
  if (!shape)
    return emitOptionalError(loc, why);
  Type elem = kind == BinaryKind::Compare ? IntegerType::get(a.getContext(), 1) : ea;
  out.push_back(RankedTensorType::get(*shape, elem));
  return success();
}

// The ranked type of `v` when `axis` is one of its dimensions; otherwise emits an error and
// returns a null type.
RankedTensorType rankedWithAxis(std::optional<Location> loc, Value v, uint64_t axis) {
  auto t = rankedType(v);
  if (!t) {
    (void)emitOptionalError(loc, "operands must be ranked tensors");
    return {};
  }
  if (static_cast<int64_t>(axis) >= t.getRank()) {
    (void)emitOptionalError(loc, "axis ", axis, " out of range for rank ", t.getRank());
    return {};
  }
  return t;
}

LogicalResult checkAxes(std::optional<Location> loc, ArrayRef<int64_t> axes, int64_t rank,
                        bool allowEmpty) {
  if (axes.empty() && !allowEmpty)
    return emitOptionalError(loc, "axes must not be empty");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= rank)
      return emitOptionalError(loc, "axis ", axes[i], " out of range for rank ", rank);
    if (i && axes[i] <= axes[i - 1])
      return emitOptionalError(loc, "axes must be sorted and unique");
  }
  return success();
}

// Shared by both losses: scores/input [N, C, d1..], labels/target [N, d1..], weights [C].
LogicalResult inferLoss(std::optional<Location> loc, Value scores, Value labels, Value weights,
                        StringRef reduction, SmallVectorImpl<Type> &out) {
  auto s = rankedType(scores), l = rankedType(labels);
  if (!s || !l)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (s.getRank() < 2)
    return emitOptionalError(loc, "scores must have shape [N, C, ...]");
  SmallVector<int64_t> expected{s.getDimSize(0)};
  llvm::append_range(expected, s.getShape().drop_front(2));
  if (l.getShape() != ArrayRef<int64_t>(expected))
    return emitOptionalError(loc, "labels shape ", formatShape(l.getShape()),
                             " does not match scores ", formatShape(s.getShape()),
                             " (expected ", formatShape(expected), ")");
  if (auto w = rankedType(weights))
    if (w.getRank() != 1 || w.getDimSize(0) != s.getDimSize(1))
      return emitOptionalError(loc, "weights must have shape [C] = [", s.getDimSize(1), "]");
  if (reduction == "none")
    out.push_back(RankedTensorType::get(expected, s.getElementType()));
  else if (reduction == "mean" || reduction == "sum")
    out.push_back(RankedTensorType::get({}, s.getElementType()));
  else
    return emitOptionalError(loc, "reduction must be mean, sum or none, got '", reduction, "'");
  return success();
}

} // namespace

//===-------------------------------------------------------------------------------------===//
// Constants
//===-------------------------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor, SmallVectorImpl<Type> &out) {
  auto type = dyn_cast<RankedTensorType>(adaptor.getValue().getType());
  if (!type)
    return emitOptionalError(loc, "constant value must be a ranked tensor");
  out.push_back(type);
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }

//===-------------------------------------------------------------------------------------===//
// Elementwise
//===-------------------------------------------------------------------------------------===//

#define GRAPH_BINARY_INFER(OP, KIND)                                                           \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc,               \
                                     Adaptor adaptor, SmallVectorImpl<Type> &out) {            \
    return inferBinary(loc, adaptor.getLhs(), adaptor.getRhs(), BinaryKind::KIND, out);        \
  }
GRAPH_BINARY_INFER(AddOp, Arith)
GRAPH_BINARY_INFER(SubOp, Arith)
GRAPH_BINARY_INFER(MulOp, Arith)
GRAPH_BINARY_INFER(DivOp, Arith)
GRAPH_BINARY_INFER(MaxOp, Arith)
GRAPH_BINARY_INFER(MinOp, Arith)
GRAPH_BINARY_INFER(PowOp, Pow)
GRAPH_BINARY_INFER(EqualOp, Compare)
GRAPH_BINARY_INFER(LessOp, Compare)
GRAPH_BINARY_INFER(GreaterOp, Compare)
GRAPH_BINARY_INFER(AndOp, Logical)
GRAPH_BINARY_INFER(OrOp, Logical)
GRAPH_BINARY_INFER(ModOp, Arith)
#undef GRAPH_BINARY_INFER

LogicalResult ModOp::verify() {
  if (!getFmod() && !isa<IntegerType>(getLhs().getType().getElementType()))
    return emitOpError("on floats needs fmod (the dividend's sign): ONNX defines no other "
                       "float form");
  return success();
}

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &out) {
  auto c = rankedType(adaptor.getCondition()), x = rankedType(adaptor.getX()),
       y = rankedType(adaptor.getY());
  if (!c || !x || !y)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (x.getElementType() != y.getElementType())
    return emitOptionalError(loc, "x and y element types differ");
  std::string why;
  auto xy = broadcastShapes(x.getShape(), y.getShape(), why);
  if (!xy)
    return emitOptionalError(loc, why);
  auto all = broadcastShapes(c.getShape(), *xy, why);
  if (!all)
    return emitOptionalError(loc, why);
  out.push_back(RankedTensorType::get(*all, x.getElementType()));
  return success();
}

LogicalResult ClipOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &out) {
  auto x = rankedType(adaptor.getInput());
  if (!x)
    return emitOptionalError(loc, "input must be a ranked tensor");
  for (Value bound : {adaptor.getMin(), adaptor.getMax()}) {
    auto b = rankedType(bound);
    if (!b || b.getElementType() != x.getElementType() || numElements(b.getShape()) != 1)
      return emitOptionalError(loc, "min and max must be one-element tensors of type ",
                               x.getElementType());
  }
  out.push_back(x);
  return success();
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &out) {
  auto x = rankedType(adaptor.getInput());
  Type to = adaptor.getTo();
  if (!x)
    return emitOptionalError(loc, "input must be a ranked tensor");
  if (!(to.isF32() || to.isBF16() || to.isF16() || to.isInteger(64) || to.isInteger(32) ||
        to.isInteger(1)))
    return emitOptionalError(loc, "cast target must be f32, bf16, f16, i64, i32 or i1, got ", to);
  out.push_back(RankedTensorType::get(x.getShape(), to));
  return success();
}

// A cast to the type the input already has (torch emits bool -> bool casts) is the identity.
OpFoldResult CastOp::fold(FoldAdaptor) {
  return getInput().getType() == getType() ? getInput() : Value();
}

//===-------------------------------------------------------------------------------------===//
// Linear algebra, normalisation, softmax
//===-------------------------------------------------------------------------------------===//

namespace {
// An operand's shape as numpy.matmul sees it: with the last two dimensions swapped back when
// the product reads it transposed.
SmallVector<int64_t> untransposed(ArrayRef<int64_t> shape, bool transposed) {
  SmallVector<int64_t> logical(shape);
  if (transposed && logical.size() >= 2)
    std::swap(logical[logical.size() - 2], logical[logical.size() - 1]);
  return logical;
}
} // namespace

SmallVector<int64_t> MatMulOp::logicalLhsShape() {
  return untransposed(cast<RankedTensorType>(getLhs().getType()).getShape(), getTransLhs());
}

SmallVector<int64_t> MatMulOp::logicalRhsShape() {
  return untransposed(cast<RankedTensorType>(getRhs().getType()).getShape(), getTransRhs());
}

int64_t MatMulOp::contractedSize() { return logicalLhsShape().back(); }

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &out) {
  auto a = rankedType(adaptor.getLhs()), b = rankedType(adaptor.getRhs());
  if (!a || !b)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if ((adaptor.getTransLhs() && a.getRank() < 2) || (adaptor.getTransRhs() && b.getRank() < 2))
    return emitOptionalError(loc, "a transposed operand (trans_lhs, trans_rhs) must have rank >= 2");
  std::string why;
  auto shape = matmulShape(untransposed(a.getShape(), adaptor.getTransLhs()),
                           untransposed(b.getShape(), adaptor.getTransRhs()), why);
  if (!shape)
    return emitOptionalError(loc, why);
  out.push_back(RankedTensorType::get(*shape, a.getElementType()));
  return success();
}

namespace {
// A product's result may be stored in any of the float types (see GraphOps.td, MatMulOp):
// only the shape must be the inferred one.
bool productTypesCompatible(TypeRange inferred, TypeRange actual) {
  if (inferred.size() != 1 || actual.size() != 1)
    return false;
  auto a = dyn_cast<RankedTensorType>(inferred[0]), b = dyn_cast<RankedTensorType>(actual[0]);
  if (!a || !b || a.getShape() != b.getShape())
    return false;
  Type e = b.getElementType();
  return e.isF32() || e.isBF16() || e.isF16();
}
} // namespace

bool MatMulOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return productTypesCompatible(l, r);
}

bool GemmOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return productTypesCompatible(l, r);
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &out) {
  auto a = rankedType(adaptor.getA()), b = rankedType(adaptor.getB());
  if (!a || !b || a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(loc, "gemm operands a and b must be 2-D");
  int64_t m = adaptor.getTransA() ? a.getDimSize(1) : a.getDimSize(0);
  int64_t ka = adaptor.getTransA() ? a.getDimSize(0) : a.getDimSize(1);
  int64_t kb = adaptor.getTransB() ? b.getDimSize(1) : b.getDimSize(0);
  int64_t n = adaptor.getTransB() ? b.getDimSize(0) : b.getDimSize(1);
  if (ka != kb)
    return emitOptionalError(loc, "gemm contraction dimensions differ: ", ka, " vs ", kb);
  SmallVector<int64_t> shape{m, n};
  if (auto c = rankedType(adaptor.getC())) {
    std::string why;
    auto bc = broadcastShapes(c.getShape(), shape, why);
    if (!bc || ArrayRef<int64_t>(*bc) != ArrayRef<int64_t>(shape))
      return emitOptionalError(loc, "c of shape ", formatShape(c.getShape()),
                               " does not broadcast to ", formatShape(shape));
  }
  out.push_back(RankedTensorType::get(shape, a.getElementType()));
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &out) {
  RankedTensorType x = rankedWithAxis(loc, adaptor.getInput(), adaptor.getAxis());
  if (!x)
    return failure();
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  ArrayRef<int64_t> normalized = x.getShape().drop_front(axis);
  for (Value v : {adaptor.getScale(), adaptor.getBias()}) {
    auto t = rankedType(v);
    if (!v)
      continue;
    if (!t || !broadcastsTo(t.getShape(), normalized))
      return emitOptionalError(loc, "scale and bias must broadcast to the normalised shape ",
                               formatShape(normalized));
  }
  SmallVector<int64_t> stats(x.getShape());
  for (int64_t d = axis; d < x.getRank(); ++d)
    stats[d] = 1;
  out.push_back(x);
  out.push_back(RankedTensorType::get(stats, x.getElementType()));
  out.push_back(RankedTensorType::get(stats, x.getElementType()));
  return success();
}

static LogicalResult verifySoftmaxAxis(Operation *op, int64_t axis, Type input) {
  if (axis >= cast<RankedTensorType>(input).getRank())
    return op->emitOpError("axis ") << axis << " out of range";
  return success();
}
LogicalResult SoftmaxOp::verify() { return verifySoftmaxAxis(*this, getAxis(), getType()); }
LogicalResult LogSoftmaxOp::verify() { return verifySoftmaxAxis(*this, getAxis(), getType()); }

//===-------------------------------------------------------------------------------------===//
// Reductions
//===-------------------------------------------------------------------------------------===//

static LogicalResult inferReduce(std::optional<Location> loc, Value input, ArrayRef<int64_t> axes,
                                 bool keepdims, SmallVectorImpl<Type> &out) {
  auto x = rankedType(input);
  if (!x)
    return emitOptionalError(loc, "input must be a ranked tensor");
  if (failed(checkAxes(loc, axes, x.getRank(), /*allowEmpty=*/false)))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < x.getRank(); ++d) {
    bool reduced = llvm::is_contained(axes, d);
    if (!reduced)
      shape.push_back(x.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  out.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

#define GRAPH_REDUCE_INFER(OP)                                                                 \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc,               \
                                     Adaptor adaptor, SmallVectorImpl<Type> &out) {            \
    return inferReduce(loc, adaptor.getInput(), adaptor.getAxes(), adaptor.getKeepdims(),      \
                       out);                                                                   \
  }
GRAPH_REDUCE_INFER(ReduceSumOp)
GRAPH_REDUCE_INFER(ReduceMeanOp)
GRAPH_REDUCE_INFER(ReduceMaxOp)
#undef GRAPH_REDUCE_INFER

LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &out) {
  auto x = rankedType(adaptor.getInput());
  if (!x)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (isBool(x.getElementType()))
    return emitOptionalError(loc, "arg_max needs a numeric input");
  const int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  SmallVector<Type> reduced;
  if (failed(inferReduce(loc, adaptor.getInput(), ArrayRef<int64_t>(axis), adaptor.getKeepdims(),
                         reduced)))
    return failure();
  out.push_back(RankedTensorType::get(cast<RankedTensorType>(reduced.front()).getShape(),
                                      IntegerType::get(ctx, 64)));
  return success();
}

//===-------------------------------------------------------------------------------------===//
// Shapes and data movement
//===-------------------------------------------------------------------------------------===//

static LogicalResult verifyReshapeLike(Operation *op) {
  auto in = cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = cast<RankedTensorType>(op->getResult(0).getType());
  if (in.getElementType() != out.getElementType())
    return op->emitOpError("must not change the element type");
  if (!in.hasStaticShape() || !out.hasStaticShape())
    return success(); // checked once shapes are static
  if (in.getNumElements() != out.getNumElements())
    return op->emitOpError("cannot reshape ")
           << formatShape(in.getShape()) << " (" << in.getNumElements() << " elements) to "
           << formatShape(out.getShape()) << " (" << out.getNumElements() << " elements)";
  return success();
}

static OpFoldResult foldReshapeLike(Operation *op, Attribute input) {
  auto outType = cast<RankedTensorType>(op->getResult(0).getType());
  if (op->getOperand(0).getType() == outType)
    return op->getOperand(0);
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(input))
    return dense.reshape(outType);
  return {};
}

#define GRAPH_RESHAPE_LIKE(OP)                                                                 \
  LogicalResult OP::verify() { return verifyReshapeLike(*this); }                              \
  OpFoldResult OP::fold(FoldAdaptor adaptor) { return foldReshapeLike(*this, adaptor.getInput()); }
GRAPH_RESHAPE_LIKE(ReshapeOp)
GRAPH_RESHAPE_LIKE(FlattenOp)
GRAPH_RESHAPE_LIKE(SqueezeOp)
GRAPH_RESHAPE_LIKE(UnsqueezeOp)
#undef GRAPH_RESHAPE_LIKE

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &out) {
  auto x = rankedType(adaptor.getInput());
  if (!x)
    return emitOptionalError(loc, "input must be a ranked tensor");
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (static_cast<int64_t>(perm.size()) != x.getRank())
    return emitOptionalError(loc, "perm has ", perm.size(), " entries for rank ", x.getRank());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.getRank() || seen[p])
      return emitOptionalError(loc, "perm is not a permutation");
    seen[p] = true;
    shape.push_back(x.getDimSize(p));
  }
  out.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &out) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "concat needs at least one input");
  auto first = rankedType(inputs[0]);
  if (!first)
    return emitOptionalError(loc, "inputs must be ranked tensors");
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  if (axis >= first.getRank())
    return emitOptionalError(loc, "axis ", axis, " out of range for rank ", first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value v : inputs) {
    auto t = rankedType(v);
    if (!t || t.getElementType() != first.getElementType() || t.getRank() != first.getRank())
      return emitOptionalError(loc, "concat inputs must share element type and rank");
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(loc, "concat inputs differ in dimension ", d, ": ",
                                 formatShape(first.getShape()), " vs ",
                                 formatShape(t.getShape()));
    shape[axis] += t.getDimSize(axis);
  }
  out.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &out) {
  RankedTensorType x = rankedWithAxis(loc, adaptor.getInput(), adaptor.getAxis());
  if (!x)
    return failure();
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  int64_t total = 0;
  for (int64_t s : adaptor.getSizes()) {
    if (s < 0)
      return emitOptionalError(loc, "split sizes must be non-negative");
    total += s;
    SmallVector<int64_t> shape(x.getShape());
    shape[axis] = s;
    out.push_back(RankedTensorType::get(shape, x.getElementType()));
  }
  if (total != x.getDimSize(axis))
    return emitOptionalError(loc, "split sizes sum to ", total, " but dimension ", axis,
                             " has ", x.getDimSize(axis));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor, SmallVectorImpl<Type> &out) {
  auto x = rankedType(adaptor.getInput());
  if (!x)
    return emitOptionalError(loc, "input must be a ranked tensor");
  ArrayRef<int64_t> pads = adaptor.getPads();
  const int64_t rank = x.getRank();
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return emitOptionalError(loc, "pads needs 2 entries per dimension (", 2 * rank, "), got ",
                             pads.size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    // Bounded first, so that the sum cannot overflow.
    if (std::abs(pads[d]) > (int64_t(1) << 40) || std::abs(pads[d + rank]) > (int64_t(1) << 40))
      return emitOptionalError(loc, "pads of dimension ", d, " are out of range");
    const int64_t size = x.getDimSize(d) + pads[d] + pads[d + rank];
    if (size < 0)
      return emitOptionalError(loc, "pads of dimension ", d, " (", pads[d], ", ", pads[d + rank],
                               ") remove more than its ", x.getDimSize(d), " elements");
    shape.push_back(size);
  }
  out.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &out) {
  auto x = rankedType(adaptor.getInput());
  if (!x)
    return emitOptionalError(loc, "input must be a ranked tensor");
  ArrayRef<int64_t> starts = adaptor.getStarts(), ends = adaptor.getEnds(),
                    steps = adaptor.getSteps();
  int64_t rank = x.getRank();
  if (static_cast<int64_t>(starts.size()) != rank || static_cast<int64_t>(ends.size()) != rank ||
      static_cast<int64_t>(steps.size()) != rank)
    return emitOptionalError(loc, "starts, ends and steps need one entry per dimension");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (steps[d] == 0)
      return emitOptionalError(loc, "slice step must not be 0");
    int64_t n = sliceLength(starts[d], ends[d], steps[d]);
    int64_t last = starts[d] + (n - 1) * steps[d];
    if (n > 0 && (starts[d] < 0 || starts[d] >= x.getDimSize(d) || last < 0 ||
                  last >= x.getDimSize(d)))
      return emitOptionalError(loc, "slice of dimension ", d, " reads outside [0, ",
                               x.getDimSize(d), ")");
    shape.push_back(n);
  }
  out.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &out) {
  RankedTensorType data = rankedWithAxis(loc, adaptor.getData(), adaptor.getAxis());
  if (!data)
    return failure();
  auto indices = rankedType(adaptor.getIndices());
  if (!indices)
    return emitOptionalError(loc, "indices must be a ranked tensor");
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  out.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult ExpandOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  if (in.getElementType() != out.getElementType())
    return emitOpError("must not change the element type");
  if (!broadcastsTo(in.getShape(), out.getShape()))
    return emitOpError("cannot broadcast ")
           << formatShape(in.getShape()) << " to " << formatShape(out.getShape());
  return success();
}

LogicalResult CumSumOp::verify() {
  auto type = cast<RankedTensorType>(getType());
  if (type.getElementType().isInteger(1))
    return emitOpError("input must be numeric, not bool");
  if (static_cast<int64_t>(getAxis()) >= type.getRank())
    return emitOpError("axis ") << getAxis() << " is out of range for rank " << type.getRank();
  return success();
}

LogicalResult ScatterNDOp::verify() {
  auto data = cast<RankedTensorType>(getData().getType());
  auto indices = cast<RankedTensorType>(getIndices().getType());
  auto updates = cast<RankedTensorType>(getUpdates().getType());
  if (getOutput().getType() != data)
    return emitOpError("result must have the data's type");
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, getReduction()))
    return emitOpError("reduction '") << getReduction() << "' is not none, add, mul, max or min";
  if (updates.getElementType() != data.getElementType())
    return emitOpError("updates must have the data's element type");
  if (indices.getRank() < 1)
    return emitOpError("indices must have rank >= 1");
  const int64_t k = indices.getShape().back();
  if (k < 1 || k > data.getRank())
    return emitOpError("the index tuples' length ") << k << " must be in [1, " << data.getRank()
                                                    << "] (the data's rank)";
  SmallVector<int64_t> expected(indices.getShape().drop_back());
  llvm::append_range(expected, data.getShape().drop_front(k));
  if (updates.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("updates ") << formatShape(updates.getShape()) << " must be "
                                   << formatShape(expected)
                                   << " (indices.shape[:-1] + data.shape[k:])";
  return success();
}

LogicalResult TriluOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError("input must have rank >= 2");
  return success();
}

LogicalResult ShapeOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &out) {
  auto x = rankedType(adaptor.getInput());
  if (!x)
    return emitOptionalError(loc, "input must be a ranked tensor");
  int64_t start = static_cast<int64_t>(adaptor.getStart());
  int64_t end = static_cast<int64_t>(adaptor.getEnd());
  if (start < 0 || end > x.getRank() || start > end)
    return emitOptionalError(loc, "start/end must satisfy 0 <= start <= end <= rank");
  out.push_back(RankedTensorType::get({end - start}, IntegerType::get(ctx, 64)));
  return success();
}

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  auto x = cast<RankedTensorType>(getInput().getType());
  if (!x.hasStaticShape())
    return {};
  ArrayRef<int64_t> dims = x.getShape().slice(getStart(), getEnd() - getStart());
  return DenseElementsAttr::get(getType(), dims);
}

LogicalResult ConstantOfShapeOp::verify() {
  auto shape = cast<RankedTensorType>(getShape().getType());
  if (shape.getRank() != 1 || !shape.getElementType().isInteger(64))
    return emitOpError("shape operand must be a 1-D i64 tensor");
  if (shape.hasStaticShape() && shape.getDimSize(0) != getType().getRank())
    return emitOpError("shape operand has ")
           << shape.getDimSize(0) << " entries but the result has rank " << getType().getRank();
  auto value = getValue();
  if (value.getNumElements() != 1 || value.getElementType() != getType().getElementType())
    return emitOpError("value must be one element of the result's element type");
  return success();
}

OpFoldResult ConstantOfShapeOp::fold(FoldAdaptor) {
  auto value = dyn_cast<DenseElementsAttr>(getValue());
  if (!value || !getType().hasStaticShape())
    return {};
  return DenseElementsAttr::get(getType(), value.getValues<Attribute>()[0]);
}

LogicalResult RangeOp::verify() {
  for (Value v : {getStart(), getLimit(), getDelta()}) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() != 0 || t.getElementType() != getType().getElementType())
      return emitOpError("start, limit and delta must be scalars of the result's element type");
  }
  if (getType().getRank() != 1)
    return emitOpError("result must be 1-D");
  return success();
}

OpFoldResult RangeOp::fold(FoldAdaptor adaptor) {
  auto start = dyn_cast_or_null<DenseElementsAttr>(adaptor.getStart());
  auto limit = dyn_cast_or_null<DenseElementsAttr>(adaptor.getLimit());
  auto delta = dyn_cast_or_null<DenseElementsAttr>(adaptor.getDelta());
  if (!start || !limit || !delta || !getType().hasStaticShape())
    return {};
  int64_t n = getType().getDimSize(0);
  Type elem = getType().getElementType();
  if (elem.isF32()) {
    float s = start.getValues<float>()[0], d = delta.getValues<float>()[0];
    SmallVector<float> values;
    for (int64_t i = 0; i < n; ++i)
      values.push_back(s + static_cast<float>(i) * d);
    return DenseElementsAttr::get(getType(), ArrayRef<float>(values));
  }
  if (elem.isInteger(64) || elem.isInteger(32)) {
    SmallVector<APInt> values;
    APInt s = start.getValues<APInt>()[0], d = delta.getValues<APInt>()[0];
    for (int64_t i = 0; i < n; ++i)
      values.push_back(s + d * APInt(s.getBitWidth(), i));
    return DenseElementsAttr::get(getType(), values);
  }
  return {};
}

LogicalResult DropoutOp::verify() {
  if (getMask().getType().getShape() != getOutput().getType().getShape())
    return emitOpError("mask must have the input's shape");
  if (getOutput().getType() != getInput().getType())
    return emitOpError("output must have the input's type");
  float ratio = getRatio().convertToFloat();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return emitOpError("ratio must be in [0, 1), got ") << ratio;
  if (!getKey().empty() && getKey().size() != 2)
    return emitOpError("key must be (seed, step), got ") << getKey().size() << " operands";
  if (!getKey().empty() && !getTraining())
    return emitOpError("only a training dropout takes a key");
  if (getTraining() && !getInput().getType().getElementType().isF32())
    return emitOpError("training dropout needs an f32 input");
  if (getStream() < 0 || getStream() >= 0xFFFFFFFFll)
    return emitOpError("stream must be in [0, 2^32 - 1), got ") << getStream();
  return success();
}

// Inference dropout (and training dropout with ratio 0, whose mask is all true) is the
// identity.
LogicalResult DropoutOp::fold(FoldAdaptor, SmallVectorImpl<OpFoldResult> &results) {
  if (isRandom() || !getMask().getType().hasStaticShape())
    return failure();
  results.push_back(getInput());
  results.push_back(DenseElementsAttr::get(getMask().getType(), true));
  return success();
}

//===-------------------------------------------------------------------------------------===//
// Losses
//===-------------------------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyLossOp::inferReturnTypes(MLIRContext *,
                                                          std::optional<Location> loc,
                                                          Adaptor adaptor,
                                                          SmallVectorImpl<Type> &out) {
  if (failed(inferLoss(loc, adaptor.getScores(), adaptor.getLabels(), adaptor.getWeights(),
                       adaptor.getReduction(), out)))
    return failure();
  out.push_back(adaptor.getScores().getType());
  return success();
}

LogicalResult NegativeLogLikelihoodLossOp::inferReturnTypes(MLIRContext *,
                                                            std::optional<Location> loc,
                                                            Adaptor adaptor,
                                                            SmallVectorImpl<Type> &out) {
  return inferLoss(loc, adaptor.getInput(), adaptor.getTarget(), adaptor.getWeight(),
                   adaptor.getReduction(), out);
}

#define GET_OP_CLASSES
#include "shardc/Dialect/Graph/GraphOps.cpp.inc"
