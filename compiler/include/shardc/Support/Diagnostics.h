//===- Diagnostics.h - compiler-style one-line errors from MLIR diagnostics -------------===//
#ifndef SHARDC_SUPPORT_DIAGNOSTICS_H
#define SHARDC_SUPPORT_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <string>

namespace shardc {

// Captures errors emitted while it is alive and keeps the first, formatted as
// "FILE: node 'NAME': message" from the op's NameLoc(node, FileLineColLoc(file)).
class FirstErrorCollector {
public:
  FirstErrorCollector(mlir::MLIRContext &ctx, std::string fallbackFile);
  bool hasError() const { return !first_.empty(); }
  const std::string &message() const { return first_; }

private:
  std::string fallbackFile_;
  std::string first_;
  mlir::ScopedDiagnosticHandler handler_;
};

// Prints "shardc: error: MESSAGE" on one line (newlines in MESSAGE become "; ").
void printError(const std::string &message);

} // namespace shardc

#endif
