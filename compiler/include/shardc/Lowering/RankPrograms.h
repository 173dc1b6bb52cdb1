//===- RankPrograms.h - one program per data-parallel rank ------------------------------===//
//
// shardc compiles the training step once per distinct number of rows a rank gets (an uneven
// batch split gives two), then derives each rank's program from the compiled one: its rank,
// its rows of the global batch, its part of every sharded parameter's initial value, and the
// bytes its collectives send. All ranks share one weights file.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_RANKPROGRAMS_H
#define SHARDC_LOWERING_RANKPROGRAMS_H

#include "shardc/Lowering/ProgramEmitter.h"

#include <cstdint>
#include <vector>

namespace shardc {

// Rows of a global batch of `globalRows` that rank r of `ranks` gets: the first
// globalRows % ranks ranks get one more.
struct RowSlice {
  int64_t begin = 0;
  int64_t rows = 0;
};
std::vector<RowSlice> splitRows(int64_t globalRows, int ranks);

// Moves `variant`'s WEIGHTS bytes into `base.weights` and its initial values into
// `base.initialValues` (what all programs share), reusing identical byte ranges already there
// (parameters are the same in every variant), and rewrites the variant's offsets to match.
// Afterwards layOutWeightsFile(base.weights, base.initialValues, every program) makes the file.
void mergeWeightsInto(EmittedProgram &base, EmittedProgram &variant);

// Bytes one rank sends in one run of `program` (program.proto, planned_comm_bytes).
uint64_t plannedCommBytes(const program::Program &program);

// Rank `rank`'s program, derived from the program compiled for its number of rows.
program::Program programForRank(const program::Program &compiled, int rank, int worldSize,
                                RowSlice slice, int64_t globalRows);

} // namespace shardc

#endif
