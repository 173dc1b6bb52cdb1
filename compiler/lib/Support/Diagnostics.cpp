//===- Diagnostics.cpp ------------------------------------------------------------------===//
#include "shardc/Support/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"

#include <cstdio>

namespace shardc {

namespace {

std::string describeLocation(mlir::Location loc, const std::string &fallbackFile) {
  std::string file = fallbackFile, node;
  loc->walk([&](mlir::Location l) {
    if (auto name = mlir::dyn_cast<mlir::NameLoc>(l); name && node.empty())
      node = name.getName().str();
    if (auto flc = mlir::dyn_cast<mlir::FileLineColLoc>(l))
      file = flc.getFilename().str();
    return mlir::WalkResult::advance();
  });
  return node.empty() ? file + ": " : file + ": node '" + node + "': ";
}

} // namespace

FirstErrorCollector::FirstErrorCollector(mlir::MLIRContext &ctx, std::string fallbackFile)
    : fallbackFile_(std::move(fallbackFile)),
      handler_(&ctx, [this](mlir::Diagnostic &diag) {
        if (diag.getSeverity() == mlir::DiagnosticSeverity::Error && first_.empty())
          first_ = describeLocation(diag.getLocation(), fallbackFile_) + diag.str();
        return mlir::success();
      }) {}

void printError(const std::string &message) {
  std::string line;
  for (char c : message) {
    if (c == '\n')
      line += "; ";
    else
      line += c;
  }
  std::fprintf(stderr, "shardc: error: %s\n", line.c_str());
}

} // namespace shardc
