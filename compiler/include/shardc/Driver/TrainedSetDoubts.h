//===- TrainedSetDoubts.h - guessed parameters whose values look like buffers -----------===//
//
// Without the model's record of what PyTorch trains, shardc trains every float initializer
// the loss depends on. Some of those are buffers PyTorch keeps fixed, and their values often
// say so where their names cannot: no random initialisation writes a table of sinusoids
// (Whisper's and Pegasus's position tables) or a matrix holding one value throughout (BART's
// and Pegasus's final_logits_bias, zeros). Nor does it leave exactly one row of an embedding
// table at zero: nn.Embedding(padding_idx=...) does, and PyTorch's lookups never train that
// row, which ONNX's Gather cannot record. The warning names them so that the user can settle
// them with --freeze or --padding-row before a run drifts from PyTorch's.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DRIVER_TRAINEDSETDOUBTS_H
#define SHARDC_DRIVER_TRAINEDSETDOUBTS_H

#include "shardc/Support/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace shardc {

// The parameters the training step trains (returns updated) whose values in `weights` look
// like a buffer's: "'NAME' (a sinusoidal table)", "'NAME' (one value throughout)" or "'NAME'
// (row R all zeros: ...)", in argument order. Parameters whose bytes are absent (--no-weights)
// are not judged.
std::vector<std::string> doubtfulTrainedParameters(mlir::ModuleOp module,
                                                   const WeightStore &weights);

} // namespace shardc

#endif
