//===- FillLargeSplats.cpp - large one-value constants computed at run time --------------===//
//
// The program stores every constant expanded in the weights file, so a ConstantOfShape of a
// few bytes in the model could take gigabytes of memory to compile and of disk to ship. Such a
// constant is cheap to compute instead: one element broadcast by the `expand` kernel into an
// arena buffer, which the memory plan places just before each reader and frees after it.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/lowering/LoweringPasses.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Lowering/TensorBytes.h"

#include "llvm/ADT/SetVector.h"

namespace shardc {
#define GEN_PASS_DEF_FILLLARGESPLATS
#include "passes/lowering/LoweringPasses.h.inc"

namespace {

// One-value constants up to this size stay stored (scalars, small broadcasts: a kernel call
// would cost more than reading them); larger ones are filled. Every rank's program stores its
// own constants, so a stored splat costs its bytes once per rank in weights.bin.
constexpr int64_t kLargestStoredSplatBytes = 64 << 10;

// The constant's value when it is one value repeated and larger than that.
std::optional<mlir::DenseElementsAttr> largeSplat(graph::ConstantOp constant) {
  auto dense = mlir::dyn_cast<mlir::DenseElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  auto type = mlir::cast<mlir::RankedTensorType>(dense.getType());
  const int64_t bytes =
      type.getNumElements() * static_cast<int64_t>(runtimeElementSize(type.getElementType()));
  if (bytes <= kLargestStoredSplatBytes)
    return std::nullopt;
  return dense;
}

struct FillLargeSplatsPass : impl::FillLargeSplatsBase<FillLargeSplatsPass> {
  void runOnOperation() override {
    llvm::SmallVector<std::pair<graph::ConstantOp, mlir::DenseElementsAttr>> splats;
    getOperation().walk([&](graph::ConstantOp constant) {
      if (auto value = largeSplat(constant))
        splats.push_back({constant, *value});
    });
    for (auto [constant, value] : splats) {
      auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
      auto scalarType = mlir::RankedTensorType::get({}, type.getElementType());
      // One fill per reading op, placed just before it: a buffer shared by readers far apart
      // would stay live (and take its bytes of the arena) from the first to the last.
      llvm::SetVector<mlir::Operation *> readers;
      for (mlir::OpOperand &use : constant->getUses())
        readers.insert(use.getOwner());
      for (mlir::Operation *reader : readers) {
        mlir::OpBuilder b(reader);
        auto one = b.create<graph::ConstantOp>(constant.getLoc(), value.resizeSplat(scalarType));
        auto filled = b.create<graph::ExpandOp>(constant.getLoc(), type, one.getResult());
        reader->replaceUsesOfWith(constant.getResult(), filled.getResult());
      }
      constant.erase();
    }
  }
};

} // namespace
} // namespace shardc
