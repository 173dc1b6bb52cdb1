//===- PropagateSharding.cpp - the batch, found through the ops' sharding rules ---------===//
//
// The batch split is a sharding like any other: the class of dimensions (DimensionClasses.h)
// that contains one dimension of every graph input, none of any parameter, and that no op
// needs whole. It is found, not assumed: a model whose dim 0 is its sequence (PyTorch's
// nn.Transformer with batch_first=False) is split along dim 1, and a model that mixes rows
// across the batch (a batch-wide normalisation computed with ops that have no rule for it) is
// refused with the op that does it.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/sharding/ShardingPasses.h"
#include "passes/sharding/DimensionClasses.h"
#include "passes/sharding/SequenceParallel.h"
#include "passes/sharding/TensorParallelPadding.h"
#include "passes/sharding/ValueSharding.h"

#include "shardc/Autodiff/TrainStep.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"

#include <cctype>
#include <regex>

#include <map>

namespace shardc {
#define GEN_PASS_DEF_PROPAGATESHARDING
#include "passes/sharding/ShardingPasses.h.inc"

namespace {

using namespace mlir;
using sharding::DimensionClasses;

using sharding::argName;
using sharding::valueName;

// The trained parameters of a training step: those it returns updated. A forward function
// returns none: all its parameters count.
llvm::StringSet<> trainedParams(func::FuncOp func) {
  llvm::StringSet<> trained;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto n = func.getResultAttrOfType<StringAttr>(i, graph::kParamAttr))
      trained.insert(n.getValue());
  if (trained.empty())
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto n = func.getArgAttrOfType<StringAttr>(i, graph::kParamAttr))
        trained.insert(n.getValue());
  return trained;
}

struct PropagateShardingPass : impl::PropagateShardingBase<PropagateShardingPass> {
  using PropagateShardingBase::PropagateShardingBase;

  // One --shard override: parameters whose name matches `pattern` entirely get `dims` (per
  // dimension: split on tp or not), or stay replicated.
  struct ShardOverride {
    std::string text;
    std::regex pattern;
    bool replicated = false;
    SmallVector<bool> tpDims;
    SmallVector<int64_t> groups; // per dimension: Nx{tp} splits its part in N groups
    bool used = false;
  };

  // Parses REGEX=SPEC (SPEC: "replicated" or "[{}, {tp}, ...]"); an error message on failure.
  std::optional<std::string> parseOverride(const std::string &text, ShardOverride &out) {
    out.text = text;
    size_t eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0)
      return "expected REGEX=SPEC";
    try {
      out.pattern = std::regex(text.substr(0, eq));
    } catch (const std::regex_error &e) {
      return std::string("invalid regex: ") + e.what();
    }
    std::string spec;
    for (char ch : text.substr(eq + 1))
      if (!std::isspace(static_cast<unsigned char>(ch)))
        spec += ch;
    if (spec == "replicated") {
      out.replicated = true;
      return std::nullopt;
    }
    if (spec.size() < 2 || spec.front() != '[' || spec.back() != ']')
      return "SPEC must be 'replicated' or a list of per-dimension axes like [{},{tp}]";
    std::string body = spec.substr(1, spec.size() - 2);
    size_t pos = 0;
    while (pos < body.size()) {
      // "3x{tp}": the dimension's part in 3 groups (a fused projection's), strided.
      int64_t groups = 1;
      size_t digits = pos;
      while (digits < body.size() && std::isdigit(static_cast<unsigned char>(body[digits])))
        ++digits;
      if (digits > pos && digits < body.size() && body[digits] == 'x' && digits - pos < 7) {
        groups = std::stoll(body.substr(pos, digits - pos));
        if (groups < 2)
          return "a strided split 'Nx{tp}' needs N of at least 2";
        pos = digits + 1;
      }
      size_t end = body.find('}', pos);
      if (pos >= body.size() || body[pos] != '{' || end == std::string::npos)
        return "SPEC must be 'replicated' or a list of per-dimension axes like [{},{tp}] "
               "(3x{tp}: split in 3 groups)";
      std::string axis = body.substr(pos + 1, end - pos - 1);
      if (!axis.empty() && axis != "tp")
        return "unknown axis '" + axis + "' (a parameter dimension is split on tp or not: {} "
                                         "or {tp}; dp is ZeRO's, see --strategy zero=N)";
      if (groups > 1 && axis != "tp")
        return "'" + std::to_string(groups) + "x{}' splits nothing; write {} or " +
               std::to_string(groups) + "x{tp}";
      out.tpDims.push_back(axis == "tp");
      out.groups.push_back(groups);
      pos = end + 1;
      if (pos < body.size() && body[pos] == ',')
        ++pos;
    }
    if (out.tpDims.empty())
      return "SPEC lists no dimension";
    return std::nullopt;
  }

  // Whether a member of class `cls` is a part of a dimension another part of which is in a
  // batch class (classAxis 0).
  static bool sharesDimensionWithBatch(const DimensionClasses &dc, int cls,
                                       const std::vector<int> &classAxis) {
    for (const sharding::DimRef &m : dc.info(cls).members)
      for (int64_t g : dc.partGroups(m.value, m.dim))
        if (int other = dc.classOf(m.value, m.dim, g);
            other >= 0 && other != cls && classAxis[other] == 0)
          return true;
    return false;
  }

  // Tensor parallelism: the classes to split on mesh axis 1 (classAxis[c] = 1), with a note
  // per class holding a trained parameter saying what was decided and why. Fails (with an
  // error naming the --shard override) when an override cannot be met.
  // Classes split with padding (a size tp does not divide, TensorParallelPadding.h): the padded
  // size per class, 0 for the others.
  LogicalResult chooseTensorParallel(func::FuncOp func, const DimensionClasses &dc, int batch,
                                     std::vector<int> &classAxis, std::vector<int64_t> &padTo,
                                     SmallVectorImpl<std::string> &notes) {
    llvm::StringSet<> trained = trainedParams(func);
    // What each class holds and why it could not be split (empty: it could).
    struct ClassInfo {
      int64_t elements = 0;
      int64_t padTo = 0; // the padded size when tp does not divide it
      std::string label, why;
    };
    std::vector<ClassInfo> classes(dc.numClasses());
    for (int c = 0; c < dc.numClasses(); ++c) {
      if (classAxis[c] == 0)
        continue;
      const sharding::DimClass &info = dc.info(c);
      ClassInfo &ci = classes[c];
      // What the class holds that must not differ between the devices of a tp group.
      std::string unsplittable;
      for (const sharding::DimRef &m : info.members) {
        auto type = cast<RankedTensorType>(m.value.getType());
        if (auto arg = dyn_cast<BlockArgument>(m.value)) {
          // Devices of one tp group are fed the same rows, whole: inputs never split on tp.
          if (auto input = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                             graph::kInputAttr))
            unsplittable = "input '" + input.str() + "', which every device reads whole";
          auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::kParamAttr);
          if (!name)
            continue;
          if (!trained.contains(name.getValue())) {
            unsplittable = "frozen parameter '" + name.str() + "', the same on every device";
            continue;
          }
          ci.elements += type.getNumElements();
          if (ci.label.empty())
            ci.label = "'" + name.str() + "' dim " + std::to_string(m.dim) + " (size " +
                       std::to_string(type.getDimSize(m.dim)) +
                       (m.groups > 1 ? ", its part in each of " + std::to_string(m.groups) +
                                           " groups"
                                     : std::string()) +
                       ")";
        } else if (auto constant = m.value.getDefiningOp<graph::ConstantOp>()) {
          auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
          if (!dense || !dense.isSplat())
            unsplittable = "a constant whose blocks would differ between devices";
        }
      }
      ci.why = dc.describeBlocker(c);
      // A part that a reshape strides stays whole on tp (its split would leave partial sums of
      // a head's size, [heads * head_size] split by head_size), except behind the batch on one
      // data-parallel device: the heads of nn.MultiheadAttention's [batch * heads] split as
      // the batch does on dp, each device holding its heads of every row, while the batch's
      // part, on a dp axis of one device, splits nothing. (With several, the dimension would
      // be split on two mesh axes.)
      if (ci.why.empty() && info.stridedBy) {
        const bool behindBatch = sharesDimensionWithBatch(dc, c, classAxis);
        if (!behindBatch || ranks > 1)
          ci.why = dc.describeTensorParallelBlocker(c) +
                   (behindBatch ? " with the batch, which dp=" + std::to_string(ranks) +
                                      " splits too"
                                : std::string());
      }
      if (ci.why.empty() && !unsplittable.empty())
        ci.why = "it holds " + unsplittable;
      if (ci.why.empty() && info.unit % tp) {
        // Padded to the next multiple of tp where the padding keeps the math (a vocabulary);
        // whole otherwise (the heads of attention, merged with the head size by a reshape).
        // (Less than one block of padding: every device holds some of the dimension.)
        const int64_t padded = (info.unit + tp - 1) / tp * tp;
        const bool onlyPadding = padded - info.unit >= padded / tp;
        std::string noPadding = onlyPadding ? "" : sharding::whyNotPaddable(func, dc, c);
        if (!onlyPadding && noPadding.empty())
          ci.padTo = padded;
        else
          ci.why = "--strategy tp=" + std::to_string(tp) + " does not divide its size " +
                   std::to_string(info.unit) +
                   (onlyPadding ? " and padding it to " + std::to_string(padded) +
                                      " would leave a device only padding"
                                : " and padding it would change the result: " + noPadding);
      }
    }

    // The user's overrides: classes forced onto tp, and classes kept whole.
    std::vector<bool> forced(dc.numClasses(), false), excluded(dc.numClasses(), false);
    std::vector<std::string> forcedBy(dc.numClasses());
    SmallVector<ShardOverride> overrides;
    for (const std::string &text : shardOverrides) {
      ShardOverride o;
      if (std::optional<std::string> error = parseOverride(text, o)) {
        func.emitError("--shard '") << text << "': " << *error;
        return failure();
      }
      overrides.push_back(std::move(o));
    }
    for (BlockArgument arg : func.getArguments()) {
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::kParamAttr);
      if (!name || !trained.contains(name.getValue()))
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      for (ShardOverride &o : overrides) {
        if (!std::regex_match(name.str(), o.pattern))
          continue;
        o.used = true;
        if (!o.replicated && o.tpDims.size() != static_cast<size_t>(type.getRank())) {
          func.emitError("--shard '") << o.text << "': '" << name.getValue() << "' has "
                                      << type.getRank() << " dimensions, the SPEC "
                                      << o.tpDims.size();
          return failure();
        }
        for (unsigned d = 0; d < type.getRank(); ++d) {
          const int64_t wanted = o.replicated ? 1 : o.groups[d];
          if (!o.replicated && o.tpDims[d] && dc.classOf(arg, d, wanted) < 0) {
            func.emitError("--shard '") << o.text << "': '" << name.getValue() << "' dim " << d
                                        << (wanted > 1 ? " has no part in " +
                                                             std::to_string(wanted) +
                                                             " groups (no equal Split or Concat "
                                                             "cuts it so)"
                                                       : std::string(" has size 1"));
            return failure();
          }
          // Every part of the dimension: the one the SPEC splits, the others kept whole.
          for (int64_t g : dc.partGroups(arg, d)) {
            int c = dc.classOf(arg, d, g);
            bool onTp = !o.replicated && o.tpDims[d] && g == wanted;
            if (c < 0)
              continue;
            (onTp ? forced : excluded)[c] = true;
            if (onTp && forcedBy[c].empty())
              forcedBy[c] = o.text;
            if (onTp && !classes[c].why.empty()) {
              func.emitError("--shard '") << o.text << "': '" << name.getValue() << "' dim " << d
                                          << " cannot be split on tp: " << classes[c].why;
              return failure();
            }
            if (forced[c] && excluded[c]) {
              func.emitError("--shard '")
                  << o.text << "': '" << name.getValue() << "' dim " << d
                  << " is split on tp by one override and kept whole by another (the dimensions "
                  << "a parameter shares with others through the model split together)";
              return failure();
            }
          }
        }
      }
    }
    for (const ShardOverride &o : overrides)
      if (!o.used) {
        func.emitError("--shard '") << o.text << "': the regex matches no trained parameter";
        return failure();
      }

    // One dimension is split once: a class with a part of a dimension that another split
    // class already cuts (a strided part of a dimension whose major part is split) stays whole.
    std::map<std::pair<void *, unsigned>, int> dimSplitBy;
    auto claimDims = [&](int cls) {
      for (const sharding::DimRef &m : dc.info(cls).members)
        dimSplitBy.try_emplace({m.value.getAsOpaquePointer(), m.dim}, cls);
    };
    auto dimAlreadySplit = [&](int cls) -> const sharding::DimRef * {
      for (const sharding::DimRef &m : dc.info(cls).members) {
        auto it = dimSplitBy.find({m.value.getAsOpaquePointer(), m.dim});
        if (it != dimSplitBy.end() && it->second != cls)
          return &m;
      }
      return nullptr;
    };
    // (The batch's parts, on a dp axis of one device, cut nothing.)
    for (int c = 0; c < dc.numClasses(); ++c)
      if (classAxis[c] >= 0 && (classAxis[c] != 0 || ranks > 1))
        claimDims(c);

    // A class that meets a class already split on tp in an op would compute only the pairs
    // of blocks a device holds.
    auto conflictWithSplit = [&](int cls) -> Operation * {
      for (const auto &[op, factorClasses] : dc.opFactorClasses()) {
        bool hasCls = llvm::is_contained(factorClasses, cls);
        bool hasSplit = llvm::any_of(factorClasses, [&](int c) {
          return c >= 0 && c != cls && classAxis[c] == 1;
        });
        if (hasCls && hasSplit)
          return op;
      }
      return nullptr;
    };
    for (int c = 0; c < dc.numClasses(); ++c) {
      if (!forced[c])
        continue;
      if (Operation *op = conflictWithSplit(c)) {
        func.emitError("--shard '") << forcedBy[c] << "': " << classes[c].label
                                    << " cannot be split on tp with the other forced "
                                       "dimensions: "
                                    << sharding::nodeName(op) << " pairs them";
        return failure();
      }
      if (const sharding::DimRef *m = dimAlreadySplit(c)) {
        func.emitError("--shard '") << forcedBy[c] << "': " << classes[c].label
                                    << " cannot be split on tp: dim " << m->dim << " of "
                                    << valueName(m->value) << " is already split";
        return failure();
      }
      classAxis[c] = 1;
      claimDims(c);
      padTo[c] = classes[c].padTo;
      notes.push_back("split on tp " + classes[c].label + " (--shard '" + forcedBy[c] + "')" +
                      (padTo[c] ? ", padded to " + std::to_string(padTo[c]) : std::string()));
    }

    // Then every other class that can be split, in order of parameter elements split per
    // element of communication: a split of a class that some op reduces over leaves a partial
    // sum of that op's result, which costs an all-reduce (Megatron's layout falls out of this:
    // the residual stream's features are contracted by every projection that reads them, the
    // MLP's inner features and the heads only by the layer that leaves them).
    // Reductions by index lookups (a gather's pending sum over the rows of its table) are
    // counted apart: they split no computation, only the table.
    std::vector<int64_t> reduced(dc.numClasses(), 0), computeReduced(dc.numClasses(), 0);
    for (const auto &[op, factorClasses] : dc.opFactorClasses()) {
      auto iface = dyn_cast<graph::ShardingRuleOpInterface>(op);
      std::optional<graph::OpShardingRule> rule = iface ? iface.getShardingRule() : std::nullopt;
      auto result = op->getNumResults() ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
                                        : RankedTensorType();
      if (!rule || !result)
        continue;
      std::vector<bool> inResult(rule->factors.size(), false);
      for (const graph::TensorFactors &t : rule->results)
        for (const graph::DimFactors &dim : t)
          for (int f : dim)
            inResult[f] = true;
      for (size_t f = 0; f < factorClasses.size() && f < inResult.size(); ++f)
        if (factorClasses[f] >= 0 && !inResult[f]) {
          reduced[factorClasses[f]] += result.getNumElements();
          if (!llvm::is_contained(rule->indexedFactors, static_cast<int>(f)))
            computeReduced[factorClasses[f]] += result.getNumElements();
        }
    }
    auto splitPerCommunicated = [&](int c) {
      return static_cast<double>(classes[c].elements) /
             static_cast<double>(std::max<int64_t>(reduced[c], 1));
    };
    SmallVector<int> candidates;
    for (int c = 0; c < dc.numClasses(); ++c) {
      if (classAxis[c] == 0 || !classes[c].elements || forced[c])
        continue;
      if (excluded[c]) {
        notes.push_back("replicated " + classes[c].label + ": --shard keeps it whole");
        continue;
      }
      if (!classes[c].why.empty()) {
        notes.push_back("replicated " + classes[c].label + ": " + classes[c].why);
        continue;
      }
      // A table only looked up by index (a position or token-type embedding, or a word
      // embedding smaller than its lookups): splitting it saves less memory than it moves.
      if (reduced[c] && !computeReduced[c] && classes[c].elements <= reduced[c]) {
        // (Kept as the reason too: the refusal below names it when nothing else splits.)
        classes[c].why = "a lookup table of " + std::to_string(classes[c].elements) +
                         " parameter elements, no more than the " +
                         std::to_string(reduced[c]) +
                         " elements of partial sums per step its split would cost";
        notes.push_back("replicated " + classes[c].label + ": " + classes[c].why);
        continue;
      }
      candidates.push_back(c);
    }
    llvm::stable_sort(candidates, [&](int a, int b) {
      return splitPerCommunicated(a) > splitPerCommunicated(b);
    });
    for (int c : candidates) {
      if (Operation *op = conflictWithSplit(c)) {
        notes.push_back("replicated " + classes[c].label + ": " + sharding::nodeName(op) +
                        " also has a dimension already split on tp");
        continue;
      }
      if (const sharding::DimRef *m = dimAlreadySplit(c)) {
        notes.push_back("replicated " + classes[c].label + ": dim " + std::to_string(m->dim) +
                        " of " + valueName(m->value) + " is already split by another part");
        continue;
      }
      classAxis[c] = 1;
      claimDims(c);
      padTo[c] = classes[c].padTo;
      notes.push_back("split on tp " + classes[c].label + ": " +
                      std::to_string(classes[c].elements) + " parameter elements, partial sums "
                      "of " + std::to_string(reduced[c]) + " elements per step" +
                      (padTo[c] ? ", padded to " + std::to_string(padTo[c]) + " (" +
                                      std::to_string(padTo[c] - dc.info(c).unit) +
                                      " entries of padding on the last tp rank, kept zero and "
                                      "never saved)"
                                : std::string()));
    }
    // A tp group that splits nothing would have every device compute the whole model: refuse
    // it, naming why the largest parameter dimensions stay whole.
    if (llvm::is_contained(classAxis, 1))
      return success();
    int largest = -1;
    for (int c = 0; c < dc.numClasses(); ++c)
      if (classAxis[c] != 0 && classes[c].elements &&
          (largest < 0 || classes[c].elements > classes[largest].elements))
        largest = c;
    std::string why = largest < 0 ? "the model has no trained parameter with a dimension to split"
                      : excluded[largest] ? classes[largest].label + " is kept whole by --shard"
                                          : classes[largest].label + ": " + classes[largest].why;
    func.emitError("--strategy tp=")
        << static_cast<int64_t>(tp) << ": no parameter dimension can be split on tp (the largest, " << why
        << "); every device of a tp group would compute the whole model";
    return failure();
  }

  // Why class `cls` cannot be the batch without resharding; empty when it can.
  std::string whyNotBatch(func::FuncOp func, const DimensionClasses &dc, int cls) {
    std::string blocker = dc.describeBatchBlocker(cls);
    if (!blocker.empty())
      return blocker;
    for (BlockArgument arg : func.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      unsigned inClass = 0;
      for (unsigned d = 0; d < type.getRank(); ++d)
        inClass += dc.classOf(arg, d) == cls;
      bool isInput = func.getArgAttr(arg.getArgNumber(), graph::kInputAttr) != nullptr;
      if (isInput && inClass != 1)
        return "input '" + argName(func, arg.getArgNumber()) + "' has " +
               std::to_string(inClass) + " dimensions in it, not one";
      if (!isInput && inClass)
        return "'" + argName(func, arg.getArgNumber()) +
               "' (a parameter or state, the same on every device) has it";
    }
    if (dc.info(cls).unit < ranks * microBatches)
      return "its size " + std::to_string(dc.info(cls).unit) + " is smaller than the " +
             std::to_string(ranks) + " data-parallel devices" +
             (microBatches > 1 ? " times " + std::to_string(microBatches) + " microbatches"
                               : std::string());
    return "";
  }

  // The batch split with resharding: where the class of a batch dimension is blocked by ops
  // that need it whole (a contrastive loss's logits pair the rows, a pooling gathers across
  // them, an op has no rule), those ops take their operands whole and the rest of the program
  // stays split. The result: the classes that hold the batch once those ops link nothing (one
  // per group of inputs they leave connected) and the ops, each with why it needs the batch
  // whole.
  struct WholeOperandsOp {
    Operation *op;
    std::string why;
    int64_t gatheredBytes = 0; // of its operands the batch's split cuts, whole
  };
  struct ReshardedBatch {
    std::unique_ptr<DimensionClasses> dc;
    std::vector<int> classes;
    SmallVector<WholeOperandsOp> wholeOps;
    int64_t gatheredBytes = 0; // of all of them
  };

  // Starting from `cls`, the class of a batch dimension in the program without resharding:
  // cuts the program at each op that blocks a class holding an input's batch dimension until
  // none does. Fails (an empty result) when the classes left do not all hold the batch's size.
  // The classes holding the batch before resharding, from `cls`, the class of a dimension of
  // the first input: inputs whose rows meet the first input's only in ops that need them whole
  // (the images and the texts of a SigLIP loss, joined by nothing but their product) have
  // their batch in a class of their own, the first of their dimensions of the same size that
  // no parameter shares. (Any such choice keeps the program's meaning: every op that would mix
  // rows takes them whole.) Empty, with `why`, when no set fits: an input with no such
  // dimension or two in the set, a parameter in it, or too few rows.
  std::vector<int> batchClassesFrom(func::FuncOp func, const DimensionClasses &dc, int cls,
                                    std::string &why) {
    const int64_t size = dc.info(cls).unit;
    std::vector<int> classes = {cls};
    auto holdsParameter = [&](int c) {
      for (const sharding::DimRef &m : dc.info(c).members)
        if (auto arg = dyn_cast<BlockArgument>(m.value))
          if (!func.getArgAttr(arg.getArgNumber(), graph::kInputAttr))
            return true;
      return false;
    };
    auto dimsIn = [&](BlockArgument arg, const std::vector<int> &set) {
      unsigned n = 0;
      auto type = cast<RankedTensorType>(arg.getType());
      for (unsigned d = 0; d < type.getRank(); ++d)
        n += llvm::is_contained(set, dc.classOf(arg, d));
      return n;
    };
    for (BlockArgument arg : func.getArguments()) {
      if (!func.getArgAttr(arg.getArgNumber(), graph::kInputAttr) || dimsIn(arg, classes))
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      for (unsigned d = 0; d < type.getRank(); ++d) {
        int c = dc.classOf(arg, d);
        if (c >= 0 && type.getDimSize(d) == size && dc.info(c).unit == size &&
            !holdsParameter(c)) {
          classes.push_back(c);
          break;
        }
      }
    }
    for (BlockArgument arg : func.getArguments()) {
      bool isInput = func.getArgAttr(arg.getArgNumber(), graph::kInputAttr) != nullptr;
      unsigned n = dimsIn(arg, classes);
      if (isInput && n != 1) {
        why = "input '" + argName(func, arg.getArgNumber()) + "' has " + std::to_string(n) +
              " dimensions of the batch's size in it, not one";
        return {};
      }
      if (!isInput && n) {
        why = "'" + argName(func, arg.getArgNumber()) +
              "' (a parameter or state, the same on every device) has it";
        return {};
      }
    }
    if (size < ranks * microBatches) {
      why = "its size " + std::to_string(size) + " is smaller than the devices";
      return {};
    }
    return classes;
  }

  std::optional<ReshardedBatch> reshardBatch(func::FuncOp func, const DimensionClasses &dc,
                                             const std::vector<int> &uncut) {
    // Every input has one dimension in the classes (batchClassesFrom): its batch dimension.
    SmallVector<std::pair<BlockArgument, unsigned>> batchDims;
    for (BlockArgument arg : func.getArguments()) {
      if (!func.getArgAttr(arg.getArgNumber(), graph::kInputAttr))
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      for (unsigned d = 0; d < type.getRank(); ++d)
        if (llvm::is_contained(uncut, dc.classOf(arg, d)))
          batchDims.emplace_back(arg, d);
    }
    const int cls = uncut.front();
    ReshardedBatch result;
    llvm::SmallPtrSet<Operation *, 16> whole;
    // Each round cuts at least one op more, so it ends; each op is cut once at most. A round
    // cuts the first blocker of each of the batch's classes; when there is none, every op
    // pairing two of them at once (a loss region after a cut product is many such ops, and a
    // round rebuilds the classes).
    for (;;) {
      result.dc = std::make_unique<DimensionClasses>(func, &whole);
      result.classes.clear();
      SmallVector<WholeOperandsOp> cuts;
      auto cut = [&](Operation *op, std::string why) {
        if (!llvm::any_of(cuts, [&](const WholeOperandsOp &w) { return w.op == op; }))
          cuts.push_back({op, std::move(why)});
      };
      for (auto [arg, d] : batchDims) {
        int c = result.dc->classOf(arg, d);
        if (!llvm::is_contained(result.classes, c))
          result.classes.push_back(c);
        if (Operation *op = result.dc->splitPreventedBy(c)) {
          const sharding::DimClass &info = result.dc->info(c);
          cut(op, info.blocker ? info.why
                  : info.maxBy ? "a maximum over it would be pending"
                               : "it picks positions of it by index values");
        }
      }
      // The batch's classes are split on one mesh axis: an op with factors in two of them (the
      // text rows and the image rows of contrastive logits, once the product that made them
      // is cut) would compute only the pairs of blocks a device holds.
      if (cuts.empty())
        for (const auto &[op, factorClasses] : result.dc->opFactorClasses()) {
          int inBatch = 0;
          for (int c : factorClasses)
            inBatch += c >= 0 && llvm::is_contained(result.classes, c);
          if (inBatch > 1)
            cut(op, "it pairs blocks of the batch with each other (two of its factors are "
                    "split along it)");
        }
      if (cuts.empty())
        break;
      for (WholeOperandsOp &w : cuts) {
        whole.insert(w.op);
        result.wholeOps.push_back(std::move(w));
      }
    }
    // What a resharding point gathers, every device holds an equal block of.
    const int64_t batch = dc.info(cls).unit;
    if (batch % ranks)
      return std::nullopt;
    for (int c : result.classes)
      if (result.dc->info(c).unit != batch)
        return std::nullopt;
    for (WholeOperandsOp &w : result.wholeOps) {
      for (Value v : w.op->getOperands()) {
        auto type = dyn_cast<RankedTensorType>(v.getType());
        if (!type)
          continue;
        bool split = false;
        for (unsigned d = 0; d < type.getRank(); ++d)
          for (int64_t g : result.dc->partGroups(v, d))
            split |= llvm::is_contained(result.classes, result.dc->classOf(v, d, g));
        if (split)
          w.gatheredBytes += type.getNumElements() * sharding::bytesPerElement(type);
      }
      result.gatheredBytes += w.gatheredBytes;
    }
    return result;
  }

  // Pads the classes of `padTo` (TensorParallelPadding.h), then rebuilds the classes of the
  // padded program, carrying over each class's mesh axis (and the batch's classes) through a
  // dimension it holds.
  LogicalResult padClasses(func::FuncOp func, std::unique_ptr<DimensionClasses> &dc,
                           const std::vector<int64_t> &padTo, std::vector<int> &classAxis,
                           std::vector<int> &batchClasses, int &batch,
                           SmallVectorImpl<std::string> &notes) {
    std::vector<sharding::DimRef> representative(dc->numClasses());
    for (int c = 0; c < dc->numClasses(); ++c)
      if (!dc->info(c).members.empty())
        representative[c] = dc->info(c).members.front();
    for (int c = 0; c < dc->numClasses(); ++c) {
      if (!padTo[c] || classAxis[c] != 1)
        continue;
      FailureOr<sharding::PaddedClass> padded = sharding::padClass(func, *dc, c, padTo[c]);
      if (failed(padded))
        return failure();
      notes.push_back("padded " + std::to_string(padded->size) + " to " +
                      std::to_string(padded->padded) + " along " +
                      valueName(representative[c].value) + " dim " +
                      std::to_string(representative[c].dim) + ": " +
                      std::to_string(padded->negInfMasks) +
                      " operands given -inf at the padding (a softmax or maximum over it), " +
                      std::to_string(padded->zeroings) + " results zeroed there");
    }
    // The ops that take their operands whole (resharding) stay cut.
    llvm::SmallPtrSet<Operation *, 16> whole;
    func.walk([&](Operation *op) {
      if (op->hasAttr(graph::kWholeOperandsAttr))
        whole.insert(op);
    });
    auto rebuilt = std::make_unique<DimensionClasses>(func, &whole);
    std::vector<int> axis(rebuilt->numClasses(), -1);
    auto carry = [&](int old) {
      const sharding::DimRef &r = representative[old];
      return r.value ? rebuilt->classOf(r.value, r.dim, r.groups) : -1;
    };
    for (int c = 0; c < dc->numClasses(); ++c)
      if (classAxis[c] >= 0)
        if (int n = carry(c); n >= 0)
          axis[n] = classAxis[c];
    for (int &c : batchClasses)
      c = carry(c);
    if (batch >= 0)
      batch = carry(batch);
    dc = std::move(rebuilt);
    classAxis = std::move(axis);
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("train_step");
    if (!func)
      func = module.lookupSymbol<func::FuncOp>("forward");
    if (!func) {
      module.emitError("no @train_step or @forward function to shard");
      return signalPassFailure();
    }
    if (ranks < 1) {
      func.emitError("propagate-sharding needs ranks >= 1, got ") << static_cast<int64_t>(ranks);
      return signalPassFailure();
    }
    SmallVector<BlockArgument> inputs;
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), graph::kInputAttr))
        inputs.push_back(arg);
    if (inputs.empty()) {
      func.emitError("the model has no graph inputs whose batch to split across devices");
      return signalPassFailure();
    }

    auto dc = std::make_unique<DimensionClasses>(func);
    BlockArgument first = inputs.front();
    auto firstType = cast<RankedTensorType>(first.getType());
    int batch = -1;
    std::string rejected;
    for (unsigned d = 0; d < firstType.getRank() && batch < 0; ++d) {
      int cls = dc->classOf(first, d);
      std::string why = cls < 0 ? "it has size 1" : whyNotBatch(func, *dc, cls);
      if (why.empty()) {
        batch = cls;
        break;
      }
      rejected += (rejected.empty() ? "" : "; ") + std::string("dim ") + std::to_string(d) +
                  " (size " + std::to_string(firstType.getDimSize(d)) + "): " + why;
    }
    // Tensor parallelism alone (one data-parallel device) splits no batch: every device of the
    // tp group takes the whole batch, so a model whose rows mix (PyTorch's sequence-first
    // nn.MultiheadAttention folds the batch into its heads) can still be split on tp.
    bool noBatch = batch < 0 && ranks == 1 && tp > 1 && microBatches == 1;
    // Where every candidate is blocked by ops that need it whole: reshard at those ops, on the
    // candidate whose ops take the fewest bytes whole.
    std::vector<int> batchClasses;
    if (batch >= 0)
      batchClasses.push_back(batch);
    std::optional<ReshardedBatch> resharded;
    int64_t batchSize = batch >= 0 ? dc->info(batch).unit : 0;
    if (batch < 0 && !noBatch) {
      for (unsigned d = 0; d < firstType.getRank(); ++d) {
        int cls = dc->classOf(first, d);
        std::string why;
        std::vector<int> uncut = cls < 0 ? std::vector<int>() : batchClassesFrom(func, *dc, cls, why);
        if (uncut.empty())
          continue;
        std::optional<ReshardedBatch> r = reshardBatch(func, *dc, uncut);
        if (r && (!resharded || r->gatheredBytes < resharded->gatheredBytes)) {
          resharded = std::move(r);
          batchSize = dc->info(cls).unit;
        }
      }
    }
    if (resharded && !resharded->wholeOps.empty() && microBatches > 1) {
      // A microbatch's op would see only its own rows of the batch it needs whole.
      const WholeOperandsOp &first = resharded->wholeOps.front();
      func.emitError("--micro-batches ")
          << static_cast<int64_t>(microBatches) << ": " << sharding::nodeName(first.op)
          << " needs the whole batch (" << first.why << "); gradient accumulation would "
          << "compute it per microbatch, not over the batch";
      return signalPassFailure();
    }
    if (batch < 0 && !noBatch && !resharded) {
      auto diag = func.emitError("cannot split the batch across ")
                  << static_cast<int64_t>(ranks) << " data-parallel devices";
      if (microBatches > 1)
        diag << " and " << static_cast<int64_t>(microBatches) << " microbatches";
      diag << ": no dimension of input '"
          << argName(func, first.getArgNumber())
          << "' is one along which rows never interact: " << rejected;
      return signalPassFailure();
    }
    if (resharded) {
      dc = std::move(resharded->dc);
      batchClasses = resharded->classes;
      batch = batchClasses.front();
      SmallVector<std::string> lines;
      for (const WholeOperandsOp &w : resharded->wholeOps) {
        w.op->setAttr(graph::kWholeOperandsAttr, StringAttr::get(&getContext(), w.why));
        lines.push_back(sharding::nodeName(w.op) + ": " + w.why + "; " +
                        std::to_string(w.gatheredBytes) + " bytes of its operands gathered "
                        "whole on every rank");
      }
      SmallVector<StringRef> refs(lines.begin(), lines.end());
      func->setAttr(graph::kReshardingAttr, OpBuilder(func).getStrArrayAttr(refs));
    }

    OpBuilder b(&getContext());
    bool twoAxes = tp > 1;
    StringRef name = twoAxes ? StringRef("mesh") : StringRef(meshName);
    SmallVector<int64_t> shape = {ranks};
    SmallVector<StringRef> axisNames = {"dp"};
    if (twoAxes) {
      shape.push_back(tp);
      axisNames.push_back("tp");
    }
    auto meshOp = module.lookupSymbol<mesh::MeshOp>(name);
    if (!meshOp) {
      b.setInsertionPointToStart(module.getBody());
      meshOp = b.create<mesh::MeshOp>(module.getLoc(), name, shape);
      meshOp->setAttr("graph.axis_names", b.getStrArrayAttr(axisNames));
    }
    auto meshRef = FlatSymbolRefAttr::get(&getContext(), meshOp.getSymName());
    // The batch's rows; without a batch class, dim 0 of the first input, the rows shardrun
    // feeds every device whole.
    func->setAttr(graph::kBatchSizeAttr,
                  b.getI64IntegerAttr(noBatch ? (firstType.getRank() ? firstType.getDimSize(0) : 1)
                                          : batchSize));

    // The mesh axis of each class: the batch on dp (axis 0), the tensor-parallel layout on tp.
    std::vector<int> classAxis(dc->numClasses(), -1);
    SmallVector<std::string> notes;
    if (noBatch)
      notes.push_back("no batch dimension to split (" + rejected + "); with dp=1 every device "
                      "of the tp group takes the whole batch");
    for (int c : batchClasses)
      classAxis[c] = 0;
    if (sequenceParallel && !twoAxes) {
      func.emitError("--strategy sp=1 needs tensor parallelism (tp > 1): the sequence is split "
                     "on the tp axis");
      return signalPassFailure();
    }
    std::vector<int64_t> padTo(dc->numClasses(), 0);
    if (twoAxes && failed(chooseTensorParallel(func, *dc, batch, classAxis, padTo, notes)))
      return signalPassFailure();
    if (llvm::any_of(padTo, [](int64_t p) { return p > 0; })) {
      if (failed(padClasses(func, dc, padTo, classAxis, batchClasses, batch, notes)))
        return signalPassFailure();
    }
    // Every class split on tp holds equal blocks now (padded where tp does not divide it): the
    // last guard against local types that would drop elements.
    for (int c = 0; c < dc->numClasses(); ++c)
      if (classAxis[c] == 1 && dc->info(c).unit % tp) {
        func.emitError("internal error: a dimension of size ")
            << dc->info(c).unit << " split on tp=" << static_cast<int64_t>(tp)
            << " without padding";
        return signalPassFailure();
      }

    // Every value with a dimension in a split class is split along it on that class's axis
    // (strided, in groups, for a minor part of the dimension).
    struct ValueSplit {
      SmallVector<SmallVector<mesh::MeshAxis>> axes;
      SmallVector<int64_t> groups;
    };
    llvm::MapVector<Value, ValueSplit> split;
    for (int c = 0; c < dc->numClasses(); ++c) {
      if (classAxis[c] < 0)
        continue;
      for (const sharding::DimRef &ref : dc->info(c).members) {
        auto [it, inserted] = split.try_emplace(ref.value);
        if (inserted) {
          auto rank = cast<RankedTensorType>(ref.value.getType()).getRank();
          it->second.axes.resize(rank);
          it->second.groups.assign(rank, 1);
        }
        // A mesh axis splits one dimension of a value: two would leave each device only the
        // blocks where its coordinates meet (the rules above keep such classes apart; this is
        // the last guard against a wrong program).
        for (auto [d, axes] : llvm::enumerate(it->second.axes))
          if (d != ref.dim && llvm::is_contained(axes, classAxis[c])) {
            func.emitError("internal error: ")
                << valueName(ref.value) << " would be split along dims " << d << " and "
                << ref.dim << " on the same mesh axis";
            return signalPassFailure();
          }
        // One mesh axis per dimension. With one data-parallel device the batch's part of a
        // dimension whose strided part tp splits (the batch of [batch * heads]) splits nothing:
        // tp's part takes the dimension.
        SmallVector<mesh::MeshAxis> &dimAxes = it->second.axes[ref.dim];
        if (!dimAxes.empty() && dimAxes.front() != classAxis[c]) {
          if (ranks == 1 && classAxis[c] == 0)
            continue;
          if (!(ranks == 1 && dimAxes.front() == 0)) {
            func.emitError("internal error: ")
                << valueName(ref.value) << " dim " << ref.dim
                << " would be split on two mesh axes";
            return signalPassFailure();
          }
        }
        dimAxes = {static_cast<mesh::MeshAxis>(classAxis[c])};
        it->second.groups[ref.dim] = ref.groups;
      }
    }
    for (auto &[value, s] : split) {
      sharding::setSharding(value, sharding::makeSharding(meshRef, s.axes));
      sharding::setSplitGroups(value, s.groups);
    }
    if (sequenceParallel &&
        failed(sharding::chooseSequenceParallel(func, *dc, batch, classAxis, tp, meshRef, notes)))
      return signalPassFailure();
    if (twoAxes) {
      SmallVector<StringRef> refs(notes.begin(), notes.end());
      func->setAttr(graph::kTpLayoutAttr, b.getStrArrayAttr(refs));
    }
  }
};

} // namespace
} // namespace shardc
