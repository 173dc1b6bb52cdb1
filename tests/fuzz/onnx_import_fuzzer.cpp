//===- onnx_import_fuzzer.cpp - libFuzzer entry point for the ONNX importer -------------===//
//
// Feeds arbitrary bytes to importOnnxModelFromBytes. Import errors are the expected outcome
// for most inputs and are discarded; crashes, leaks, timeouts and runaway memory are bugs.
// External data resolves relative to the current directory (the test runs in a scratch
// directory holding the seed models' weights file) and may be absent (requireWeights false).
//
//===-------------------------------------------------------------------------------------===//
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: types and attributes are uniqued in the context and live as
  // long as it does, so a shared context would grow with every input and hide leaks.
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  shardc::onnx_import::ImportOptions options;
  options.modelPath = "fuzz.onnx";
  options.requireWeights = false;
  std::string error;
  (void)shardc::onnx_import::importOnnxModelFromBytes(
      ctx, llvm::StringRef(reinterpret_cast<const char *>(data), size), options, error);
  return 0;
}
