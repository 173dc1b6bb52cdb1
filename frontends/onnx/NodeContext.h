//===- NodeContext.h - importing one ONNX node ------------------------------------------===//
//
// What an op importer needs: the node's inputs as values, its attributes with ONNX's
// defaults, the values of compile-time inputs, op creation that reports failures as node
// errors instead of crashing, and the binding of the node's outputs.
//
// Every op is created, verified and then offered to shardc::tryFoldToConstants, so constant
// subgraphs (Shape -> Gather -> Concat -> Reshape and the like) collapse while importing and
// later nodes can read their values.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_NODECONTEXT_H
#define SHARDC_FRONTENDS_ONNX_NODECONTEXT_H

#include "frontends/onnx/GraphBuilder.h"
#include "frontends/onnx/SupportedOps.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace shardc::onnx_import {

class NodeContext {
public:
  NodeContext(GraphBuilder &graph, const onnx::NodeProto &node, const OpInfo &info,
              std::string displayName, int64_t opset);

  // Checks input/output counts and resolves the input names; called before the importer.
  mlir::LogicalResult prepare();

  const onnx::NodeProto &proto() const { return node_; }
  int64_t opset() const { return opset_; }
  mlir::Location loc() const { return loc_; }
  mlir::OpBuilder &builder() { return graph_.builder(); }
  GraphBuilder &graph() { return graph_; }
  mlir::MLIRContext *context() { return &graph_.context(); }

  //===--- Inputs --------------------------------------------------------------------===//
  // ONNX omits an optional input by leaving it off the end or by giving it an empty name;
  // input(i) is then null.
  unsigned numInputs() const { return inputs_.size(); }
  mlir::Value input(unsigned i) const { return i < inputs_.size() ? inputs_[i] : mlir::Value(); }
  bool hasInput(unsigned i) const { return static_cast<bool>(input(i)); }
  mlir::FailureOr<mlir::Value> requiredInput(unsigned i, llvm::StringRef name);
  static mlir::RankedTensorType typeOf(mlir::Value v) {
    return mlir::cast<mlir::RankedTensorType>(v.getType());
  }
  // Input i's elements when it is a sequence (the table lets only some inputs be one), else
  // nullptr; sequenceInput fails naming the input when it is not a sequence.
  const llvm::SmallVector<mlir::Value> *sequenceAt(unsigned i) const {
    return i < sequenceInputs_.size() ? sequenceInputs_[i] : nullptr;
  }
  mlir::FailureOr<llvm::ArrayRef<mlir::Value>> sequenceInput(unsigned i, llvm::StringRef name);
  unsigned numOutputs() const { return node_.output_size(); }
  bool hasOutput(unsigned i) const {
    return static_cast<int>(i) < node_.output_size() && !node_.output(i).empty();
  }

  //===--- Attributes (absent: the default) ------------------------------------------===//
  const onnx::AttributeProto *findAttr(llvm::StringRef name) const;
  mlir::FailureOr<int64_t> intAttr(llvm::StringRef name, int64_t defaultValue);
  mlir::FailureOr<float> floatAttr(llvm::StringRef name, float defaultValue);
  mlir::FailureOr<std::string> stringAttr(llvm::StringRef name, llvm::StringRef defaultValue);
  // nullopt when absent.
  mlir::FailureOr<std::optional<llvm::SmallVector<int64_t>>> intsAttr(llvm::StringRef name);
  mlir::FailureOr<std::optional<int64_t>> optionalIntAttr(llvm::StringRef name);

  //===--- Compile-time inputs -------------------------------------------------------===//
  // The value of input i ("must be a compile-time constant (it depends on ...)" otherwise).
  mlir::FailureOr<mlir::DenseElementsAttr> constantInput(unsigned i, llvm::StringRef name);
  // An integer (i64/i32) tensor of rank <= 1 with at most `maxCount` entries, as int64.
  mlir::FailureOr<llvm::SmallVector<int64_t>> constantInts(unsigned i, llvm::StringRef name,
                                                           int64_t maxCount);
  // A one-element integer tensor.
  mlir::FailureOr<int64_t> constantInt(unsigned i, llvm::StringRef name);

  //===--- Axes ----------------------------------------------------------------------===//
  // An axis in [-rank, rank) as a non-negative one.
  mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank, llvm::StringRef what);
  // Each axis normalised; sorted; duplicates are an error.
  mlir::FailureOr<llvm::SmallVector<int64_t>> normalizeAxes(llvm::ArrayRef<int64_t> axes,
                                                            int64_t rank, llvm::StringRef what);

  //===--- Creating ops --------------------------------------------------------------===//
  // Creates OpT (whose result types the dialect infers) with `numResults` results, verifies it
  // and folds it if it can. Returns the values that stand for its results.
  template <typename OpT, typename... Args>
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> createInferred(unsigned numResults,
                                                                 Args &&...args) {
    llvm::SmallVector<mlir::Type> placeholders(numResults, placeholderType());
    auto op =
        builder().create<OpT>(loc_, mlir::TypeRange(placeholders), std::forward<Args>(args)...);
    llvm::SmallVector<mlir::Type> inferred;
    if (mlir::failed(OpT::inferReturnTypes(context(), loc_, typename OpT::Adaptor(op), inferred)) ||
        inferred.size() != numResults) {
      op->erase();
      return failFromDiagnostics("invalid operands");
    }
    for (auto [result, type] : llvm::zip(op->getResults(), inferred))
      result.setType(type);
    return finish(op);
  }
  // Same for ops that carry their result types (Reshape, Expand, unary ops, ...).
  template <typename OpT, typename... Args>
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> createTyped(mlir::TypeRange resultTypes,
                                                              Args &&...args) {
    auto op = builder().create<OpT>(loc_, resultTypes, std::forward<Args>(args)...);
    return finish(op);
  }
  // Single-result shorthands.
  template <typename OpT, typename... Args>
  mlir::FailureOr<mlir::Value> createInferred1(Args &&...args) {
    auto results = createInferred<OpT>(1, std::forward<Args>(args)...);
    return mlir::failed(results) ? mlir::FailureOr<mlir::Value>(mlir::failure())
                                 : mlir::FailureOr<mlir::Value>((*results)[0]);
  }
  template <typename OpT, typename... Args>
  mlir::FailureOr<mlir::Value> createTyped1(mlir::Type resultType, Args &&...args) {
    auto results = createTyped<OpT>(mlir::TypeRange(resultType), std::forward<Args>(args)...);
    return mlir::failed(results) ? mlir::FailureOr<mlir::Value>(mlir::failure())
                                 : mlir::FailureOr<mlir::Value>((*results)[0]);
  }
  // A graph.constant at the node's location.
  mlir::Value constant(mlir::DenseElementsAttr value);
  // A scalar f32 graph.constant (the coefficients of ops the importer decomposes).
  mlir::Value scalarF32(float value);

  //===--- Outputs and errors --------------------------------------------------------===//
  // Binds output i of the node to values[i] (outputs with empty names are skipped), after
  // comparing the value's type with ONNX's.
  mlir::LogicalResult setOutputs(mlir::ValueRange values);
  mlir::LogicalResult setOutput(mlir::FailureOr<mlir::Value> value);
  // Binds output i to a sequence of tensors.
  mlir::LogicalResult setSequenceOutput(unsigned i, llvm::SmallVector<mlir::Value> elements);
  // Binds output i to one tensor (nodes whose outputs mix tensors and sequences: Loop).
  mlir::LogicalResult setTensorOutput(unsigned i, mlir::Value value);
  bool outputsSet() const { return outputsSet_; }
  // Records "<model>: node 'NAME' (OpType): <message>".
  mlir::LogicalResult fail(const llvm::Twine &message);
  // Records the MLIR diagnostic the failure produced, or `fallback` when there was none.
  mlir::LogicalResult failFromDiagnostics(llvm::StringRef fallback);

private:
  mlir::Type placeholderType();
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> finish(mlir::Operation *op);
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> fold(mlir::Operation *op);

  GraphBuilder &graph_;
  const onnx::NodeProto &node_;
  const OpInfo &info_;
  std::string name_;
  int64_t opset_;
  mlir::Location loc_;
  llvm::SmallVector<mlir::Value> inputs_; // null for an omitted input and for a sequence
  llvm::SmallVector<const llvm::SmallVector<mlir::Value> *> sequenceInputs_;
  bool outputsSet_ = false;
};

} // namespace shardc::onnx_import

#endif
