//===- GraphBuilder.h - the @forward function being built -------------------------------===//
//
// Owns the module and @forward while the importer fills them: ONNX names -> SSA values,
// arguments (graph inputs, then parameters), constants, results (graph outputs), and
// locations (NameLoc(name, FileLineColLoc(model path, 0, 0))). It also compares the types
// the dialect infers with ONNX's view of them.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_GRAPHBUILDER_H
#define SHARDC_FRONTENDS_ONNX_GRAPHBUILDER_H

#include "frontends/onnx/ErrorReporting.h"
#include "frontends/onnx/Initializers.h"
#include "frontends/onnx/ModelValidation.h"

#include "onnx/onnx_pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <optional>
#include <string>

namespace shardc::onnx_import {

class GraphBuilder {
public:
  // `declared`: the types the model declares, checked as each node is imported.
  GraphBuilder(mlir::MLIRContext &ctx, ErrorReporter &errors, OnnxTypes declared);

  // Creates the module and @forward: one argument per graph input (in order, graph.input)
  // and per parameter (graph.param), then one graph.constant per constant initializer.
  mlir::LogicalResult begin(const onnx::GraphProto &graph, const InitializerSet &initializers);
  // Returns the graph outputs (graph.output), fixes the function type and verifies the module.
  mlir::LogicalResult finish(const onnx::GraphProto &graph);
  mlir::OwningOpRef<mlir::ModuleOp> takeModule() { return std::move(module_); }

  // The value of an ONNX tensor name, or null when nothing defined it (yet).
  mlir::Value lookup(llvm::StringRef name) const { return values_.lookup(name); }
  // Binds `name`; fails (without recording an error) when it is already bound.
  mlir::LogicalResult define(llvm::StringRef name, mlir::Value value);
  // ONNX sequence values are lists of tensors whose length and elements are known while
  // importing (SequenceOps.cpp): a name is bound to a tensor or to a sequence, never both.
  const llvm::SmallVector<mlir::Value> *lookupSequence(llvm::StringRef name) const {
    auto it = sequences_.find(name);
    return it == sequences_.end() ? nullptr : &it->second;
  }
  mlir::LogicalResult defineSequence(llvm::StringRef name, llvm::SmallVector<mlir::Value> elements);
  // A Loop imports its body once per iteration under the same names: the names bound between
  // enterScope() and leaveScope() are unbound again (the ops stay in the function).
  void enterScope() { scopes_.emplace_back(); }
  void leaveScope();
  // Nodes imported by unrolling Loops so far; bounded (ImportLimits.h) so that nested loops
  // cannot make the importer build an unbounded function.
  int64_t &unrolledNodes() { return unrolledNodes_; }

  // Compares `value`'s type with the declared type of `name`, if any. On a mismatch returns
  // failure() and sets `why`.
  mlir::LogicalResult checkOnnxType(llvm::StringRef name, mlir::Value value,
                                    std::string &why) const {
    return checkType(declared_, name, mlir::cast<mlir::RankedTensorType>(value.getType()), why);
  }
  // After finish(): compares every node output and graph output with the types libonnx's
  // shape inference gave them; a mismatch is an importer bug, reported at the node.
  mlir::LogicalResult checkInferredTypes(const onnx::GraphProto &graph, const OnnxTypes &inferred);
  // Why `value` is not a compile-time constant: "it depends on graph input 'x'", ...
  std::string describeDependency(mlir::Value value) const;

  mlir::Location locationFor(llvm::StringRef name);

  // Whether training-mode Dropout nodes keep their random mask (ImportOptions::trainingDropout).
  void setTrainingDropout(bool enabled) { trainingDropout_ = enabled; }
  bool trainingDropout() const { return trainingDropout_; }
  // Whether addBufferUpdate records updates (ImportOptions::updateBuffers).
  void setUpdateBuffers(bool enabled) { updateBuffers_ = enabled; }
  // The random stream of the next Dropout node: its position among the model's Dropout nodes
  // in graph order, so that a reference implementation can reproduce the masks.
  int64_t nextDropoutStream() { return dropoutStreams_++; }
  // The parameter argument `value` is, or null when it is something else.
  mlir::BlockArgument parameterOf(mlir::Value value);
  // Keeps parameter `param` out of training; `why` becomes its graph.not_trainable reason.
  void markNotTrainable(mlir::BlockArgument param, const std::string &why);
  // Records that parameter `param` is a buffer the model updates as it runs: after each step
  // it holds `updated` (a graph.buffer result of @forward), and it is never trained. Fails,
  // without recording an error, when the parameter already has an update.
  mlir::LogicalResult addBufferUpdate(mlir::BlockArgument param, mlir::Value updated,
                                      const std::string &why);
  // How many If branches the node being imported sits in (ops/ControlFlowOps.cpp).
  int branchDepth() const { return branchDepth_; }
  void enterBranch() { ++branchDepth_; }
  void leaveBranch() { --branchDepth_; }
  // The embeddings' padding rows the model records (TrainableRecord.h): initializer -> row.
  void setPaddingRows(std::map<std::string, int64_t> rows) { paddingRows_ = std::move(rows); }
  std::optional<int64_t> paddingIdxOf(const std::string &initializer) const {
    auto it = paddingRows_.find(initializer);
    return it == paddingRows_.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  // The model's producer_name ("pytorch", ...), for semantics its exporter leaves implicit.
  void setProducerName(std::string name) { producerName_ = std::move(name); }
  const std::string &producerName() const { return producerName_; }
  mlir::OpBuilder &builder() { return builder_; }
  mlir::MLIRContext &context() { return ctx_; }
  ErrorReporter &errors() { return errors_; }
  DiagnosticCapture &diagnostics() { return diagnostics_; }

private:
  struct Argument {
    std::string name;
    mlir::RankedTensorType type;
    llvm::StringRef attrName; // graph.input or graph.param
    std::string notTrainable; // a parameter's graph.not_trainable reason, if any
  };
  mlir::LogicalResult collectArguments(const onnx::GraphProto &graph,
                                       const InitializerSet &initializers,
                                       std::vector<Argument> &arguments);
  mlir::FailureOr<mlir::RankedTensorType> inputType(const onnx::ValueInfoProto &input);
  std::string argumentName(mlir::BlockArgument arg) const;
  void eraseDeadConstants();
  mlir::LogicalResult checkType(const OnnxTypes &types, llvm::StringRef name,
                                mlir::RankedTensorType ours, std::string &why) const;

  mlir::MLIRContext &ctx_;
  ErrorReporter &errors_;
  OnnxTypes declared_;
  DiagnosticCapture diagnostics_;
  mlir::OpBuilder builder_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  mlir::func::FuncOp func_;
  llvm::StringMap<mlir::Value> values_;           // cleared by finish(): folding erased some
  llvm::StringMap<mlir::RankedTensorType> types_; // of every name ever bound
  llvm::StringMap<llvm::SmallVector<mlir::Value>> sequences_;
  std::vector<std::vector<std::string>> scopes_; // the names each open scope bound
  int64_t unrolledNodes_ = 0;
  struct BufferUpdate {
    mlir::BlockArgument param;
    mlir::Value updated;
  };
  std::vector<BufferUpdate> bufferUpdates_;
  std::string producerName_;
  std::map<std::string, int64_t> paddingRows_;
  bool trainingDropout_ = false;
  bool updateBuffers_ = true;
  int branchDepth_ = 0;
  int64_t dropoutStreams_ = 0;
};

} // namespace shardc::onnx_import

#endif
