//===- ModuleUnit.cpp -------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/ModuleUnit.h"

#include "mlir/IR/Location.h"

#include <regex>

namespace shardc::graph {

std::string nodeNameOf(mlir::Operation *op) {
  auto loc = mlir::dyn_cast<mlir::NameLoc>(op->getLoc());
  return loc ? loc.getName().str() : std::string();
}

std::string moduleUnitOf(mlir::Operation *op) {
  static const std::regex repeated(R"([^/]*\.[0-9]+)");
  const std::string name = nodeNameOf(op);
  size_t start = 0;
  while (!name.empty() && start <= name.size()) {
    size_t end = name.find('/', start);
    std::string part =
        name.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (std::regex_match(part, repeated))
      return name.substr(0, end);
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return "";
}

} // namespace shardc::graph
