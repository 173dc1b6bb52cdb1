// Shared operand checks of the loss kernels and their backwards.
#include "runtime/kernels/cpu/loss_operands.h"

#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/index_block.h"

#include <string>
#include <vector>

namespace shardc::runtime::cpu {

Status checkLossOperands(const char *kernel, const KernelArgs &args, const Tensor &classes,
                         const char *classesName, const Tensor &target, const Tensor &weight,
                         const Tensor &loss, const char *lossName, LossSpec *spec) {
  std::string reduction;
  int64_t hasIgnoreIndex = 0;
  SHARDC_RETURN_IF_ERROR(getStringAttr(args, "reduction", &reduction));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "has_ignore_index", &hasIgnoreIndex));
  spec->hasIgnoreIndex = hasIgnoreIndex != 0;
  if (spec->hasIgnoreIndex)
    SHARDC_RETURN_IF_ERROR(getIntAttr(args, "ignore_index", &spec->ignoreIndex));
  if (reduction == "none")
    spec->reduction = LossReduction::None;
  else if (reduction == "sum")
    spec->reduction = LossReduction::Sum;
  else if (reduction == "mean")
    spec->reduction = LossReduction::Mean;
  else
    return Status::error(std::string(kernel) + ": attribute 'reduction' must be \"mean\", " +
                         "\"sum\" or \"none\", got \"" + reduction + "\"");

  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, classesName, classes, program::F32));
  if (classes.rank() < 2)
    return Status::error(std::string(kernel) + ": " + classesName + " must be [N, C, d1..], got " +
                         classes.describe());
  if (target.dtype != program::I64 && target.dtype != program::I32)
    return Status::error(std::string(kernel) + ": target is " + dtypeName(target.dtype) +
                         ", expected i64 or i32");
  std::vector<int64_t> targetShape = classes.shape;
  targetShape.erase(targetShape.begin() + 1);
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "target", target, targetShape));
  spec->n = classes.shape[0];
  spec->c = classes.shape[1];
  spec->d = dimsProduct(classes.shape, 2, classes.shape.size());
  IndexBlock block;
  SHARDC_RETURN_IF_ERROR(readIndexBlock(kernel, args, spec->c, &block));
  spec->classOffset = block.offset;
  spec->classesWhole = block.whole;
  if (weight.present()) {
    // The mean's denominator needs every target's class weight, most of them other blocks'.
    if (block.split)
      return Status::error(std::string(kernel) +
                           ": class weights with a split class dimension are not supported");
    SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "weight", weight, program::F32));
    SHARDC_RETURN_IF_ERROR(expectShape(kernel, "weight", weight, {spec->c}));
  }
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, lossName, loss, program::F32));
  return expectShape(kernel, lossName, loss,
                     spec->reduction == LossReduction::None ? targetShape : std::vector<int64_t>{});
}

} // namespace shardc::runtime::cpu
