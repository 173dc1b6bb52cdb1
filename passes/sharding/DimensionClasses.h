//===- DimensionClasses.h - which dimensions of a function must split together ----------===//
//
// Every dimension of every value of a function is a node; each op's sharding rule links the
// dimensions whose major factor is the same factor of the op (ShardingRule.h). The connected
// classes are the units a mesh axis can split: splitting a class splits every dimension in it
// into blocks, and every op computes its own blocks, with no communication except the pending
// sums of the reductions over it. A class is *blocked* when some op needs one of its factors
// whole, holds it as the minor part of a merged dimension, or has no rule; the first such op
// and its reason are kept for messages and plan.txt.
//
// The batch of a training step is such a class: the dimension along which rows never
// interact, found from the graph (never assumed to be dim 0).
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SHARDING_DIMENSIONCLASSES_H
#define SHARDC_PASSES_SHARDING_DIMENSIONCLASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <string>
#include <vector>

namespace shardc::sharding {

struct DimRef {
  mlir::Value value;
  unsigned dim = 0;
};

struct DimClass {
  int64_t unit = 0;              // gcd of the major-factor sizes: a split cuts blocks of it
  mlir::Operation *blocker = nullptr; // the first op that prevents a split (null: none)
  std::string why;                    // what that op needs
  bool maxReduction = false;          // some op leaves a pending maximum over it
  std::vector<DimRef> members;
};

class DimensionClasses {
public:
  // Links the dimensions of every value in `func`'s body through the ops' sharding rules.
  explicit DimensionClasses(mlir::func::FuncOp func);

  // The class of dimension `dim` of `value`; -1 for a dimension of size 1 (never split).
  int classOf(mlir::Value value, unsigned dim) const;
  const DimClass &info(int cls) const { return classes_[cls]; }
  // "node 'NAME' (op): WHY", for messages.
  std::string describeBlocker(int cls) const;
  int numClasses() const { return static_cast<int>(classes_.size()); }
  // For every op with a rule: the class of each of its factors (-1 for a factor no dimension
  // of size > 1 carries). Two classes split on the same mesh axis must never be two factors
  // of one op (it would compute only the pairs of blocks a device holds). An op whose rule
  // reduces its operands separately has an entry per operand.
  const std::vector<std::pair<mlir::Operation *, std::vector<int>>> &opFactorClasses() const {
    return opFactorClasses_;
  }

private:
  int node(mlir::Value value, unsigned dim);
  int find(int n) const;
  void unite(int a, int b);
  void block(int n, mlir::Operation *op, const std::string &why);

  llvm::DenseMap<std::pair<void *, unsigned>, int> ids_;
  std::vector<DimRef> refs_;
  mutable std::vector<int> parent_;
  std::vector<int64_t> unit_;
  std::vector<std::pair<mlir::Operation *, std::string>> blocked_;
  std::vector<bool> max_;
  std::vector<int> classIndex_; // root -> index into classes_
  std::vector<DimClass> classes_;
  std::vector<std::pair<mlir::Operation *, std::vector<int>>> opFactorClasses_;
};

// The op's name for messages: its ONNX node name (the location's name), else its op name.
std::string nodeName(mlir::Operation *op);

} // namespace shardc::sharding

#endif
