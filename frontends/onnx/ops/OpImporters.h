//===- OpImporters.h - one function per supported ONNX operator -------------------------===//
//
// Each function turns one ONNX node into graph-dialect ops through NodeContext, which has
// already checked the node's input/output counts against SupportedOps' table. The functions
// normalise every attribute/input form of opsets 13-20 into the dialect's single form.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_OPS_OPIMPORTERS_H
#define SHARDC_FRONTENDS_ONNX_OPS_OPIMPORTERS_H

#include "mlir/IR/Value.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"

namespace shardc::onnx_import {

class NodeContext;

// ElementwiseOps.cpp
mlir::LogicalResult importAdd(NodeContext &node);
mlir::LogicalResult importSub(NodeContext &node);
mlir::LogicalResult importMul(NodeContext &node);
mlir::LogicalResult importDiv(NodeContext &node);
mlir::LogicalResult importPow(NodeContext &node);
mlir::LogicalResult importEqual(NodeContext &node);
mlir::LogicalResult importLess(NodeContext &node);
mlir::LogicalResult importGreater(NodeContext &node);
mlir::LogicalResult importAnd(NodeContext &node);
mlir::LogicalResult importOr(NodeContext &node);
mlir::LogicalResult importNot(NodeContext &node);
mlir::LogicalResult importSqrt(NodeContext &node);
mlir::LogicalResult importReciprocal(NodeContext &node);
mlir::LogicalResult importNeg(NodeContext &node);
mlir::LogicalResult importExp(NodeContext &node);
mlir::LogicalResult importLog(NodeContext &node);
mlir::LogicalResult importTanh(NodeContext &node);
mlir::LogicalResult importErf(NodeContext &node);
mlir::LogicalResult importPad(NodeContext &node);
mlir::LogicalResult importSin(NodeContext &node);
mlir::LogicalResult importCos(NodeContext &node);
mlir::LogicalResult importSigmoid(NodeContext &node);
mlir::LogicalResult importSoftplus(NodeContext &node);
mlir::LogicalResult importMod(NodeContext &node);
mlir::LogicalResult importRelu(NodeContext &node);
mlir::LogicalResult importAbs(NodeContext &node);
mlir::LogicalResult importGelu(NodeContext &node);
mlir::LogicalResult importMax(NodeContext &node);
mlir::LogicalResult importMin(NodeContext &node);
mlir::LogicalResult importClip(NodeContext &node);
mlir::LogicalResult importWhere(NodeContext &node);
mlir::LogicalResult importHardSigmoid(NodeContext &node);
mlir::LogicalResult importHardSwish(NodeContext &node);
mlir::LogicalResult importCumSum(NodeContext &node);
mlir::LogicalResult importCast(NodeContext &node);

// LinalgNormOps.cpp
mlir::LogicalResult importMatMul(NodeContext &node);
mlir::LogicalResult importGemm(NodeContext &node);
mlir::LogicalResult importLayerNormalization(NodeContext &node);
mlir::LogicalResult importSoftmax(NodeContext &node);
mlir::LogicalResult importLogSoftmax(NodeContext &node);

// ConvPoolOps.cpp
mlir::LogicalResult importConv(NodeContext &node);
mlir::LogicalResult importMaxPool(NodeContext &node);
mlir::LogicalResult importAveragePool(NodeContext &node);
mlir::LogicalResult importGlobalAveragePool(NodeContext &node);
mlir::LogicalResult importGlobalMaxPool(NodeContext &node);

// BatchNormOps.cpp
mlir::LogicalResult importBatchNormalization(NodeContext &node);
mlir::LogicalResult importInstanceNormalization(NodeContext &node);
mlir::LogicalResult importScatterElements(NodeContext &node);
mlir::LogicalResult importEyeLike(NodeContext &node);

// ReductionOps.cpp
mlir::LogicalResult importReduceMean(NodeContext &node);
mlir::LogicalResult importReduceSum(NodeContext &node);
mlir::LogicalResult importReduceMax(NodeContext &node);
mlir::LogicalResult importReduceMin(NodeContext &node);
mlir::LogicalResult importOneHot(NodeContext &node);
mlir::LogicalResult importReduceSumSquare(NodeContext &node);
mlir::LogicalResult importReduceL1(NodeContext &node);
mlir::LogicalResult importReduceL2(NodeContext &node);
mlir::LogicalResult importReduceLogSum(NodeContext &node);
mlir::LogicalResult importReduceLogSumExp(NodeContext &node);
mlir::LogicalResult importArgMax(NodeContext &node);

// ShapeOps.cpp: ops whose result shape comes from operand values or attributes.
mlir::LogicalResult importReshape(NodeContext &node);
mlir::LogicalResult importUnsqueeze(NodeContext &node);
mlir::LogicalResult importSqueeze(NodeContext &node);
mlir::LogicalResult importFlatten(NodeContext &node);
mlir::LogicalResult importExpand(NodeContext &node);
mlir::LogicalResult importTile(NodeContext &node);
mlir::LogicalResult importShape(NodeContext &node);
mlir::LogicalResult importConstantOfShape(NodeContext &node);
mlir::LogicalResult importRange(NodeContext &node);

// DataMovementOps.cpp
mlir::LogicalResult importTranspose(NodeContext &node);
mlir::LogicalResult importConcat(NodeContext &node);
mlir::LogicalResult importSplit(NodeContext &node);
mlir::LogicalResult importSlice(NodeContext &node);
mlir::LogicalResult importGather(NodeContext &node);
mlir::LogicalResult importGatherElements(NodeContext &node);
mlir::LogicalResult importTopK(NodeContext &node);
mlir::LogicalResult importTrilu(NodeContext &node);
mlir::LogicalResult importScatterND(NodeContext &node);

// LossMiscOps.cpp
mlir::LogicalResult importSoftmaxCrossEntropyLoss(NodeContext &node);
mlir::LogicalResult importNegativeLogLikelihoodLoss(NodeContext &node);
mlir::LogicalResult importDropout(NodeContext &node);
mlir::LogicalResult importIdentity(NodeContext &node);

// ControlFlowOps.cpp
mlir::LogicalResult importIf(NodeContext &node);
mlir::LogicalResult importLoop(NodeContext &node);

// SequenceOps.cpp
mlir::LogicalResult importSequenceEmpty(NodeContext &node);
mlir::LogicalResult importSequenceConstruct(NodeContext &node);
mlir::LogicalResult importSplitToSequence(NodeContext &node);
mlir::LogicalResult importSequenceAt(NodeContext &node);
mlir::LogicalResult importSequenceInsert(NodeContext &node);
mlir::LogicalResult importSequenceErase(NodeContext &node);
mlir::LogicalResult importSequenceLength(NodeContext &node);
mlir::LogicalResult importConcatFromSequence(NodeContext &node);
// The tensors (at least one, of one rank) stacked along a new dimension `axis` (each gets a
// dimension of 1 there, then they are joined): ConcatFromSequence's new_axis, Loop's scan
// outputs.
mlir::FailureOr<mlir::Value> stackTensors(NodeContext &node, llvm::ArrayRef<mlir::Value> tensors,
                                          int64_t axis);
mlir::LogicalResult importConstant(NodeContext &node);

} // namespace shardc::onnx_import

#endif
