//===- TruncateUnits.cpp ----------------------------------------------------------------===//
#include "shardc/Cost/TruncateUnits.h"

#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ModuleUnit.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>

namespace shardc::cost {

using namespace mlir;

std::optional<Truncation> truncateRepeatedUnits(ModuleOp module) {
  auto func = module.lookupSymbol<func::FuncOp>("forward");
  if (!func || func.getBody().getBlocks().size() != 1)
    return std::nullopt;
  Block &body = func.getBody().front();
  std::vector<std::string> units;
  std::map<std::string, int> index;
  llvm::DenseMap<Operation *, int> unitOf;
  for (Operation &op : body.without_terminator()) {
    std::string unit = graph::moduleUnitOf(&op);
    if (unit.empty())
      continue;
    auto [it, added] = index.try_emplace(unit, static_cast<int>(units.size()));
    if (added)
      units.push_back(unit);
    unitOf[&op] = it->second;
  }
  const int L = static_cast<int>(units.size());
  if (L < 5)
    return std::nullopt;
  auto inMiddle = [&](Operation *op) {
    auto it = unitOf.find(op);
    return it != unitOf.end() && it->second >= 2 && it->second <= L - 2;
  };
  // What flows in from the second unit, and out of the middle.
  llvm::SetVector<Value> fromSecond, out;
  for (Operation &op : body.without_terminator()) {
    if (!inMiddle(&op))
      continue;
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def || inMiddle(def) || isa<graph::ConstantOp>(def))
        continue;
      auto it = unitOf.find(def);
      if (it != unitOf.end() && it->second == 1)
        fromSecond.insert(v);
      else if (it != unitOf.end() && it->second != 0)
        return std::nullopt; // read from a later unit: not a chain
    }
    for (Value r : op.getResults())
      for (Operation *user : r.getUsers())
        if (!inMiddle(user))
          out.insert(r);
  }
  if (fromSecond.size() != 1 || out.size() != 1 ||
      fromSecond.front().getType() != out.front().getType())
    return std::nullopt;
  Value in = fromSecond.front(), through = out.front();
  if (Operation *def = through.getDefiningOp(); !def || unitOf[def] != L - 2)
    return std::nullopt;
  through.replaceAllUsesWith(in);
  // Erase the middle, readers first.
  std::vector<Operation *> middle;
  for (Operation &op : body.without_terminator())
    if (inMiddle(&op))
      middle.push_back(&op);
  for (auto it = middle.rbegin(); it != middle.rend(); ++it) {
    if (!(*it)->use_empty())
      return std::nullopt; // cannot happen once the chain checked out
    (*it)->erase();
  }
  // Constants and parameters only the middle read.
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
      if (op.use_empty() && isa<graph::ConstantOp>(op)) {
        op.erase();
        erased = true;
      }
  }
  llvm::BitVector unused(func.getNumArguments());
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    unused[i] = func.getArgument(i).use_empty() && func.getArgAttr(i, graph::kParamAttr);
  func.eraseArguments(unused);
  return Truncation{{units[0], units[1], units[static_cast<size_t>(L - 1)]},
                    {1, L - 2, 1}};
}

} // namespace shardc::cost
