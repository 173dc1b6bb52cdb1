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
#include <map>
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

// The initial values of every rank's tensor-parallel blocks, added to the initial values of
// the whole parameters (the bytes a compiled program's state_init points at) once per block:
// a block of a parameter split along any dimension but its first is not contiguous there.
class InitialValueParts {
public:
  explicit InitialValueParts(std::vector<char> &initialValues);
  // The offset of block `index` of the parameter whose whole value is at `wholeOffset`.
  uint64_t block(uint64_t wholeOffset, const program::Sharding &sharding, int64_t index);

private:
  std::vector<char> &values_;
  std::map<std::pair<uint64_t, int64_t>, uint64_t> placed_;
};

// Rank `rank`'s program, derived from the program compiled for its number of rows: its rank,
// its rows, its coordinate and groups on the program's mesh (MeshGroups.h), its part of every
// sharded parameter's initial value (from `parts`, before layOutWeightsFile), its dropout
// offsets and the bytes its collectives send.
program::Program programForRank(const program::Program &compiled, int rank, int worldSize,
                                RowSlice slice, int64_t globalRows, InitialValueParts &parts);

} // namespace shardc

#endif
