//===- shardc-opt.cpp - run shardc passes on textual IR (for lit tests) -----------------===//
#include "passes/Passes.h"
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Pipelines/PipelineRegistration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, mlir::mesh::MeshDialect, shardc::graph::GraphDialect>();
  shardc::registerShardcPasses();
  shardc::registerShardcPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "shardc optimizer driver\n", registry));
}
