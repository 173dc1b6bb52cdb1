//===- GraphDialect.cpp -----------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace shardc::graph;

#include "shardc/Dialect/Graph/GraphDialect.cpp.inc"
#include "shardc/Dialect/Graph/GradientInterface.cpp.inc"
#include "shardc/Dialect/Graph/ShardingRuleInterface.cpp.inc"
#include "shardc/Dialect/Graph/KernelOpInterface.cpp.inc"
#include "shardc/Dialect/Graph/CostInterface.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "shardc/Dialect/Graph/GraphAttributes.cpp.inc"

void GraphDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "shardc/Dialect/Graph/GraphAttributes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "shardc/Dialect/Graph/GraphOps.cpp.inc"
      >();
}

Operation *GraphDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}

Location shardc::graph::suffixedLoc(Location loc, StringRef suffix) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return NameLoc::get(StringAttr::get(loc.getContext(), name.getName().str() + suffix.str()),
                        name.getChildLoc());
  return loc;
}

std::string shardc::graph::nodeName(Operation *op) {
  std::string kind = op->getName().stripDialect().str();
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return "node '" + name.getName().str() + "' (" + kind + ")";
  return "op " + op->getName().getStringRef().str();
}
