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

Status checkCrossEntropyOperands(const KernelArgs &args, CrossEntropyOperands *ops) {
  const char *kernel = "softmax_cross_entropy_loss";
  SHARDC_RETURN_IF_ERROR(
      checkOperands(kernel, args, Arity::withOptional(2, 1), Arity::withOptional(1, 1)));
  static const Tensor absent;
  ops->scores = &args.inputs[0];
  ops->labels = &args.inputs[1];
  ops->weights = args.inputs.size() > 2 ? &args.inputs[2] : &absent;
  ops->loss = &args.outputs[0];
  ops->logProbOut = args.outputs.size() > 1 ? &args.outputs[1] : &absent;
  if (hasIndexBlockAttrs(args))
    return Status::error(std::string(kernel) +
                         ": index_offset/index_size (a split class dimension) are not supported: "
                         "the softmax needs every class of a row");
  SHARDC_RETURN_IF_ERROR(checkLossOperands(kernel, args, *ops->scores, "input", *ops->labels,
                                           *ops->weights, *ops->loss, "loss", &ops->spec));
  if (ops->logProbOut->present()) {
    SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "log_prob", *ops->logProbOut, program::F32));
    SHARDC_RETURN_IF_ERROR(expectShape(kernel, "log_prob", *ops->logProbOut, ops->scores->shape));
  }
  return Status::ok();
}

Status checkNllLossOperands(const KernelArgs &args, LossSpec *spec) {
  const char *kernel = "nll_loss";
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::withOptional(2, 1), Arity::exactly(1)));
  const Tensor absent;
  const Tensor &weight = args.inputs.size() > 2 ? args.inputs[2] : absent;
  return checkLossOperands(kernel, args, args.inputs[0], "input", args.inputs[1], weight,
                           args.outputs[0], "loss", spec);
}

Status checkLossGradOperands(const char *kernel, const KernelArgs &args, bool withLogProb,
                             LossSpec *spec) {
  const Arity inputs = withLogProb ? Arity::withOptional(3, 1) : Arity::withOptional(2, 1);
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, inputs, Arity::exactly(1)));
  const size_t targetIndex = withLogProb ? 2 : 1;
  const Tensor absent;
  const Tensor &weight = args.inputs.size() > targetIndex + 1 ? args.inputs[targetIndex + 1] : absent;
  const Tensor &gradient = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(checkLossOperands(kernel, args, gradient, "gradient output",
                                           args.inputs[targetIndex], weight, args.inputs[0],
                                           "dloss", spec));
  if (withLogProb) {
    const Tensor &logProb = args.inputs[1];
    SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "log_prob", logProb, program::F32));
    SHARDC_RETURN_IF_ERROR(expectShape(kernel, "log_prob", logProb, gradient.shape));
  }
  return Status::ok();
}

} // namespace shardc::runtime::cpu
