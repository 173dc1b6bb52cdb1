//===- DimensionClasses.h - which dimensions of a function must split together ----------===//
//
// Every dimension of every value of a function is a node, and so is every minor part of a
// dimension some op sees as several factors (ShardingRule.h): (value, dim, groups) is the part
// after the first `groups` groups, groups = 1 the dimension itself. Each op's sharding rule
// links the parts whose major factor is the same factor of the op. The connected classes are
// the units a mesh axis can split: splitting a class splits every part in it into blocks (a
// part with groups > 1 is a strided split of its dimension), and every op computes its own
// blocks, with no communication except the pending sums of the reductions over it.
//
// A factor is the same loop wherever an op places it, so a part inside one of its places is
// that part inside every other: the Split of a fused QKV projection cuts its result into 3
// groups, and the matmul that computes it carries those groups to its weight. Minor parts are
// split only where the op allows it (a concat or split into equal parts); a reshape's minor
// factors stay whole. A class is *blocked* when some op needs one of its factors whole (or any part of it: a
// strided part inside a whole factor, a strided part of a dimension whose positions a kernel
// reads), or has no rule; the first such op and its reason are kept for messages and
// plan.txt.
//
// The batch of a training step is such a class: the dimension along which rows never
// interact, found from the graph (never assumed to be dim 0).
//
// Resharding: the ops of `wholeOps` take every operand whole (the partitioner all-gathers what
// is split before them and slices what they yield where a split value is wanted), so they link
// nothing and block nothing; a class an op blocked falls apart there into classes a mesh axis
// can split on either side of it.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SHARDING_DIMENSIONCLASSES_H
#define SHARDC_PASSES_SHARDING_DIMENSIONCLASSES_H

#include "shardc/Dialect/Graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <map>
#include <set>

#include <string>
#include <vector>

namespace shardc::sharding {

struct DimRef {
  mlir::Value value;
  unsigned dim = 0;
  int64_t groups = 1; // > 1: the minor part after that many groups (a strided split)
};

struct DimClass {
  int64_t unit = 0;              // gcd of the major-factor sizes: a split cuts blocks of it
  mlir::Operation *blocker = nullptr; // the first op that prevents a split (null: none)
  std::string why;                    // what that op needs
  mlir::Operation *maxBy = nullptr;   // the first op that leaves a pending maximum over it
  // The first op that picks positions of it by index values (ShardingRule.h: index blocks).
  // Tensor parallelism splits such a factor (a vocabulary-parallel embedding); the batch's
  // rows are not one block of fixed offset in every program, so the batch may not be.
  mlir::Operation *indexedBy = nullptr;
  // The first op that strides it by a reshape (a batch-only strided part): null when none.
  // The batch may be split so; tensor parallelism only behind the batch on one data-parallel
  // device (OpShardingRule::stridedBatchParts).
  mlir::Operation *stridedBy = nullptr;
  std::vector<DimRef> members;
};

class DimensionClasses {
public:
  // Links the dimensions of every value in `func`'s body through the ops' sharding rules, but
  // for the ops of `wholeOps` (resharding points: they take their operands whole).
  explicit DimensionClasses(mlir::func::FuncOp func,
                            const llvm::SmallPtrSetImpl<mlir::Operation *> *wholeOps = nullptr);

  // The class of dimension `dim` of `value` (of its part after `groups` groups); -1 for a
  // dimension of size 1 (never split) or a part no op sees.
  int classOf(mlir::Value value, unsigned dim, int64_t groups = 1) const;
  const DimClass &info(int cls) const { return classes_[cls]; }
  // The groups of every part of dimension `dim` of `value` some op sees: 1 (the dimension
  // itself) and those of its minor parts, increasing.
  std::vector<int64_t> partGroups(mlir::Value value, unsigned dim) const;
  // "node 'NAME' (op): WHY", for messages; empty when nothing prevents a split of the class.
  std::string describeBlocker(int cls) const;
  // The same for a split of the batch, which an op picking positions of it by index also
  // prevents.
  std::string describeBatchBlocker(int cls) const;
  // The op that prevents a split of class `cls` along the batch (it needs a part whole, pairs
  // its blocks, has no rule, leaves a pending maximum over it or picks its positions by
  // index): the place to reshard; null when none.
  mlir::Operation *splitPreventedBy(int cls) const;
  // The same for a split on tensor parallelism, which a reshape's strided part also prevents.
  std::string describeTensorParallelBlocker(int cls) const;
  int numClasses() const { return static_cast<int>(classes_.size()); }
  // For every op with a rule: the class of each of its factors (-1 for a factor no dimension
  // of size > 1 carries). Two classes split on the same mesh axis must never be two factors
  // of one op (it would compute only the pairs of blocks a device holds). An op whose rule
  // reduces its operands separately has an entry per operand.
  const std::vector<std::pair<mlir::Operation *, std::vector<int>>> &opFactorClasses() const {
    return opFactorClasses_;
  }

private:
  int node(mlir::Value value, unsigned dim, int64_t groups = 1);
  int find(int n) const;
  void unite(int a, int b);
  void block(int n, mlir::Operation *op, const std::string &why);
  // Gives every place of a factor the minor parts inside it that any other place has.
  void shareMinorParts();

  // A range of the parts of a dimension an op needs whole: parts with groups in [lo, hi).
  struct WholeParts {
    mlir::Value value;
    unsigned dim;
    int64_t lo, hi;
    mlir::Operation *op;
    std::string why;
  };

  // The places of one factor of an op (its nodes), for shareMinorParts.
  struct FactorParts {
    int64_t size = 1;
    std::vector<int> at;
  };

  llvm::DenseMap<std::tuple<void *, unsigned, int64_t>, int> ids_;
  std::vector<FactorParts> factorParts_;
  std::vector<WholeParts> wholeParts_;
  std::map<std::pair<void *, unsigned>, std::set<int64_t>> partsOf_; // groups > 1 per dim
  std::vector<DimRef> refs_;
  mutable std::vector<int> parent_;
  std::vector<int64_t> unit_;
  std::vector<std::pair<mlir::Operation *, std::string>> blocked_;
  std::vector<mlir::Operation *> max_; // per root: the first op leaving a pending maximum
  std::vector<mlir::Operation *> indexedBy_; // per root: the first op picking it by index
  std::vector<mlir::Operation *> stridedBy_; // per root: the first reshape striding it
  std::vector<int> classIndex_; // root -> index into classes_
  std::vector<DimClass> classes_;
  std::vector<std::pair<mlir::Operation *, std::vector<int>>> opFactorClasses_;
};

// The op's name for messages (the dialect's: the op hooks of the partitioner use it too).
using graph::nodeName;
// The name of argument `i` of `func` for messages: its graph input, parameter or state name,
// else "argument i".
std::string argName(mlir::func::FuncOp func, unsigned i);
// "'NAME'" for a function argument, "the result of node 'X' (op)" for any other value.
std::string valueName(mlir::Value v);

} // namespace shardc::sharding

#endif
