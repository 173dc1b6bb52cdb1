//===- KernelCallBuilder.h - what an op writes into its kernel call ---------------------===//
//
// The graph ops describe their runtime kernel call (KernelOpInterface) through this builder,
// which the lowering implements (shardc/Lowering/KernelMapping.cpp): the dialect knows the
// kernels' attribute names and operand order, not the program's encoding of them.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_KERNELCALLBUILDER_H
#define SHARDC_DIALECT_GRAPH_KERNELCALLBUILDER_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>

namespace shardc::graph {

class KernelCallBuilder {
public:
  virtual ~KernelCallBuilder() = default;

  // Kernel attributes, by the names docs/kernels.md gives them.
  virtual void setInt(llvm::StringRef name, int64_t value) = 0;
  virtual void setFloat(llvm::StringRef name, float value) = 0;
  virtual void setDouble(llvm::StringRef name, double value) = 0;
  virtual void setString(llvm::StringRef name, llvm::StringRef value) = 0;
  virtual void setInts(llvm::StringRef name, llvm::ArrayRef<int64_t> values) = 0;
  // The program dtype of `elementType`, as an int attribute.
  virtual void setDType(llvm::StringRef name, mlir::Type elementType) = 0;

  // Operands. The call starts with the op's operands and results in order; a null Value is
  // an absent optional operand.
  virtual void addAbsentInput() = 0;
  virtual void setOperands(llvm::ArrayRef<mlir::Value> inputs,
                           llvm::ArrayRef<mlir::Value> outputs) = 0;

  // A collective's rank count and, on a mesh of several axes, its group: those of the ranks
  // that differ only along `axes` of `mesh`. Failure when the mesh does not resolve or no
  // group covers the axes.
  virtual mlir::LogicalResult setCollectiveGroup(mlir::FlatSymbolRefAttr mesh,
                                                 llvm::ArrayRef<int16_t> axes) = 0;
};

} // namespace shardc::graph

#endif
