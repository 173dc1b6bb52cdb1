//===- RankPrograms.h - the shared programs of a placed bundle --------------------------===//
//
// shardc compiles the training step once per distinct number of rows a rank gets (an uneven
// batch split gives two) and writes each compiled program once, shared by every rank that runs
// it (program.proto, a placed bundle): the shared program has the mesh and its groups' axes,
// the bytes its collectives send, and the initial value of every sharded parameter whole and
// per tensor-parallel block; each rank's placement adds its rows of the global batch, and the
// runtime derives the rest from its rank (runtime/loader/rank_program.h). Compile time and
// bundle size so do not grow with the number of ranks. All ranks share one weights file.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_RANKPROGRAMS_H
#define SHARDC_LOWERING_RANKPROGRAMS_H

#include "shardc/Lowering/ProgramEmitter.h"

#include <cstdint>
#include <map>
#include <utility>
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

// Bytes one rank sends in one call of collective kernel `kernel` ("all_reduce",
// "reduce_scatter", "all_gather"; 0 for any other) over `ranks` ranks, whose inputs hold
// `inputElements` and outputs `outputElements` elements in all, of `elementBytes` bytes each
// (an all_gather of tensors of several dtypes moves raw bytes: its counts are then in bytes
// and elementBytes is 1): the ring formulas of runtime/common/comm_cost.h. plannedCommBytes and
// the IR's StepCost.h both count by it.
uint64_t collectiveCallBytesSent(const std::string &kernel, int ranks, uint64_t inputElements,
                                 uint64_t outputElements, uint64_t elementBytes);

// The same for a call whose operands hold these (elements, bytes per element): the kernel
// moves elements of their common size, or raw bytes when the sizes differ.
using CollectiveOperand = std::pair<uint64_t, uint64_t>;
uint64_t collectiveCallBytesSent(const std::string &kernel, int ranks,
                                 const std::vector<CollectiveOperand> &inputs,
                                 const std::vector<CollectiveOperand> &outputs);

// The bytes one call of `op` (a collective kernel of `program`) sends over `ranks` ranks, from
// its operand buffers' sizes and dtypes.
uint64_t opCollectiveBytesSent(const program::Program &program, const program::Op &op, int ranks);

// The initial values of every rank's tensor-parallel blocks, added to the initial values of
// the whole parameters (the bytes a compiled program's state_init points at) once per block:
// a block of a parameter split along any dimension but its first is not contiguous there.
class InitialValueParts {
public:
  explicit InitialValueParts(WeightsRegion &initialValues);
  // The offset of block `index` of the parameter whose whole value is at `wholeOffset`, of
  // elements of `elementBytes` bytes.
  uint64_t block(uint64_t wholeOffset, const program::Sharding &sharding, int64_t index,
                 size_t elementBytes);

private:
  WeightsRegion &values_;
  std::map<std::pair<uint64_t, int64_t>, uint64_t> placed_;
};

// The shared program of the ranks that hold `rows` rows of a global batch of `globalRows` on a
// world of `worldSize`, from the program compiled for them: its world, its rows, its groups
// (MeshGroups.h), the initial value of each of its sharded parameters' blocks (from `parts`,
// before layOutWeightsFile) and the bytes its collectives send.
program::Program sharedProgram(const program::Program &compiled, int worldSize, int64_t rows,
                               int64_t globalRows, InitialValueParts &parts);

} // namespace shardc

#endif
