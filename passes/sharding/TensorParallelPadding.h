//===- TensorParallelPadding.h - padding a dimension tensor parallelism does not divide --===//
//
// A vocabulary of 50257 on 8 tensor-parallel devices: the class of that dimension
// (DimensionClasses.h) is padded to 50264, the next multiple of the devices (Megatron's
// --make-vocab-size-divisible-by does the same for its embedding), so that every device holds
// an equal block and the last one ends in 7 padded entries. The padded program keeps the
// global meaning exactly:
//  - every padded entry of every value is zero: parameters and their optimizer state start
//    zero there, ops whose rule keepsZeroPadding keep it (a product, a sum, a move, an
//    optimizer update), and the result of any other op is zeroed there after it (a where
//    over a mask of the padding);
//  - a reduction over the dimension gains nothing from zeros: a sum where the op is linear in
//    an operand holding it, a norm; an op that reduces it to a maximum, or reads every entry
//    of it through a softmax (the cross-entropy's scores: the rule's negInfPadding), gets
//    that operand with -inf there;
//  - an index that picks along it (a lookup, a label) never names a padded entry.
// A class is padded only when every op over it is one of these, and otherwise stays whole
// as before (attention heads: a reshape merges them with the head size, so their dimension is
// not the class's). The bundle's Sharding records the size before padding (program.proto):
// the padding is never saved, checkpointed or exported.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SHARDING_TENSORPARALLELPADDING_H
#define SHARDC_PASSES_SHARDING_TENSORPARALLELPADDING_H

#include "passes/sharding/DimensionClasses.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <string>

namespace shardc::sharding {

// Why class `cls` cannot be padded without changing the program's meaning ("node 'X' (op)
// averages over it"); empty when it can.
std::string whyNotPaddable(mlir::func::FuncOp func, const DimensionClasses &dc, int cls);

struct PaddedClass {
  int64_t size = 0, padded = 0;
  int negInfMasks = 0; // operands given -inf at the padding
  int zeroings = 0;    // results zeroed there after their op
};

// Pads every value of class `cls` to `padded` along its dimension in that class: retypes
// them, records graph.tp_padding on the function's arguments and results that hold it, and
// inserts the masks above (whose constants join the class). Only for a class whyNotPaddable
// accepts; the classes of `dc` are stale afterwards.
mlir::FailureOr<PaddedClass> padClass(mlir::func::FuncOp func, const DimensionClasses &dc,
                                      int cls, int64_t padded);

} // namespace shardc::sharding

#endif
