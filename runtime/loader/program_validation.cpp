#include "runtime/loader/program_validation.h"

#include "runtime/common/mesh.h"
#include "runtime/kernels/kernel.h"
#include "runtime/loader/op_workspace.h"
#include "runtime/program/bindings.h"
#include "runtime/support/aligned_buffer.h"
#include "runtime/support/quote.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace shardc::runtime {

namespace {

using program::Buffer;
using program::Op;
using program::Program;

std::string describeBuffer(int index, const Buffer &buffer) {
  return "buffer " + std::to_string(index) + " (" + quoteForMessage(buffer.name()) + ")";
}

std::string describeOp(int index, const Op &op) {
  return "op " + std::to_string(index) + " (" + quoteForMessage(op.name()) + ")";
}

std::string shapeText(const Buffer &buffer) {
  std::string s = "[";
  for (int i = 0; i < buffer.shape_size(); ++i) {
    if (i)
      s += 'x';
    s += std::to_string(buffer.shape(i));
  }
  return s + "]";
}

bool knownDtype(int dtype) { return dtypeSize(static_cast<DType>(dtype)) != 0; }

const char *regionName(program::Region region) {
  return region == program::WEIGHTS ? "WEIGHTS" : "ARENA";
}

Status validateBuffer(const Program &program, int index) {
  const Buffer &buffer = program.buffers(index);
  std::string what = describeBuffer(index, buffer);
  if (!knownDtype(buffer.dtype()))
    return Status::error(what + ": unknown dtype " + std::to_string(buffer.dtype()));
  if (buffer.region() != program::ARENA && buffer.region() != program::WEIGHTS)
    return Status::error(what + ": unknown region " + std::to_string(buffer.region()));

  // numel * element size must fit in an int64 (the Tensor API computes it that way).
  const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t bytes = dtypeSize(buffer.dtype());
  for (int64_t dim : buffer.shape()) {
    if (dim < 0)
      return Status::error(what + ": negative dimension " + std::to_string(dim) + " in shape " +
                           shapeText(buffer));
    if (dim != 0 && bytes > limit / static_cast<uint64_t>(dim))
      return Status::error(what + ": shape " + shapeText(buffer) + " is too large");
    bytes *= static_cast<uint64_t>(dim);
  }
  if (buffer.size_bytes() != bytes)
    return Status::error(what + ": size_bytes is " + std::to_string(buffer.size_bytes()) + " but " +
                         std::string(dtypeName(buffer.dtype())) + shapeText(buffer) + " needs " +
                         std::to_string(bytes));
  if (buffer.offset() % kBufferAlignment != 0)
    return Status::error(what + ": offset " + std::to_string(buffer.offset()) + " is not " +
                         std::to_string(kBufferAlignment) + "-byte aligned");

  uint64_t regionBytes =
      buffer.region() == program::WEIGHTS ? program.weights_bytes() : program.arena_bytes();
  std::string regionText = std::string(regionName(buffer.region())) + " region (" +
                           (buffer.region() == program::WEIGHTS ? "weights_bytes" : "arena_bytes") +
                           " = " + std::to_string(regionBytes) + ")";
  if (buffer.offset() > regionBytes)
    return Status::error(what + ": offset " + std::to_string(buffer.offset()) +
                         " lies outside the " + regionText);
  if (buffer.size_bytes() > regionBytes - buffer.offset())
    return Status::error(what + ": bytes [" + std::to_string(buffer.offset()) + ", " +
                         std::to_string(buffer.offset() + buffer.size_bytes()) +
                         ") lie outside the " + regionText);
  return Status::ok();
}

// Byte ranges of two buffers share memory (zero-size buffers never do).
bool overlaps(const Buffer &a, const Buffer &b) {
  if (a.region() != b.region() || a.size_bytes() == 0 || b.size_bytes() == 0)
    return false;
  return a.offset() < b.offset() + b.size_bytes() && b.offset() < a.offset() + a.size_bytes();
}

// Whether a and b are the same bytes: an in-place update's input and output.
bool sameBytes(const Buffer &a, const Buffer &b) {
  return a.region() == b.region() && a.offset() == b.offset() && a.size_bytes() == b.size_bytes();
}

std::string describeGroup(int index, const program::CommGroup &group) {
  return "group " + std::to_string(index) + " (" + quoteForMessage(group.name()) + ")";
}

std::string intsText(const google::protobuf::RepeatedField<int32_t> &values) {
  std::string text = "[";
  for (int i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values.Get(i));
  return text + "]";
}

// The attributes the collective kernels share with the program: "group" (an index into
// Program.groups, whose size must then be the op's num_ranks) and "dtype" (a DType). Which
// dtypes a kernel moves is the kernel's to say, when it runs.
Status validateCollectiveAttrs(const Program &program, const Op &op, const std::string &what) {
  auto attr = [&](const char *name) -> const program::Attribute * {
    auto it = op.attrs().find(name);
    return it == op.attrs().end() ? nullptr : &it->second;
  };
  if (const program::Attribute *dtype = attr("dtype")) {
    if (dtype->value_case() != program::Attribute::kI)
      return Status::error(what + ": attribute 'dtype' is not an int");
    if (dtype->i() < 0 || dtype->i() > std::numeric_limits<int>::max() ||
        !program::DType_IsValid(static_cast<int>(dtype->i())) ||
        !knownDtype(static_cast<int>(dtype->i())))
      return Status::error(what + ": unknown dtype " + std::to_string(dtype->i()));
  }
  const program::Attribute *group = attr("group");
  if (group == nullptr)
    return Status::ok();
  if (group->value_case() != program::Attribute::kI)
    return Status::error(what + ": attribute 'group' is not an int");
  if (group->i() < 0 || group->i() >= program.groups_size())
    return Status::error(what + ": group " + std::to_string(group->i()) +
                         " does not exist (the program has " +
                         std::to_string(program.groups_size()) + " group" +
                         (program.groups_size() == 1 ? "" : "s") + ")");
  const int index = static_cast<int>(group->i());
  const program::CommGroup &g = program.groups(index);
  const program::Attribute *ranks = attr("num_ranks");
  if (ranks != nullptr && ranks->value_case() == program::Attribute::kI &&
      ranks->i() != g.ranks_size())
    return Status::error(what + ": num_ranks is " + std::to_string(ranks->i()) + ", but " +
                         describeGroup(index, g) + " has " + std::to_string(g.ranks_size()) +
                         " rank" + (g.ranks_size() == 1 ? "" : "s"));
  return Status::ok();
}

// An asynchronous collective (Op.completes_before) runs while the ops up to that point do: none
// of them may touch its results' bytes, or write over its operands'.
Status validateAsyncCollective(const Program &program, int index, const std::string &what) {
  const Op &op = program.ops(index);
  const int64_t until = op.completes_before();
  if (!kernelMovesDataBetweenRanks(op.kernel()))
    return Status::error(what + ": completes_before is set, but kernel " + op.kernel() +
                         " is not an all_reduce, reduce_scatter, all_gather or all_to_all");
  if (until <= index + 1 || until > program.ops_size())
    return Status::error(what + ": completes_before is " + std::to_string(until) +
                         ", not after the next op and at most the number of ops (" +
                         std::to_string(program.ops_size()) + ")");
  // The later ops' buffer indices are validated with those ops: an invalid one touches nothing.
  auto valid = [&](int buffer) { return buffer >= 0 && buffer < program.buffers_size(); };
  auto touches = [&](int buffer, const google::protobuf::RepeatedField<int32_t> &of) {
    for (int other : of)
      if (valid(other) && valid(buffer) &&
          overlaps(program.buffers(buffer), program.buffers(other)))
        return true;
    return false;
  };
  for (int j = index + 1; j < until; ++j) {
    const Op &between = program.ops(j);
    for (int in : between.inputs())
      if (touches(in, op.outputs()))
        return Status::error(what + ": op " + std::to_string(j) +
                             " reads its results before it completes (completes_before " +
                             std::to_string(until) + ")");
    for (int out : between.outputs())
      if (touches(out, op.outputs()) || touches(out, op.inputs()))
        return Status::error(what + ": op " + std::to_string(j) +
                             " writes over its operands or results before it completes "
                             "(completes_before " +
                             std::to_string(until) + ")");
  }
  return Status::ok();
}

Status validateOp(const Program &program, int index) {
  const Op &op = program.ops(index);
  std::string what = describeOp(index, op);
  if (findCpuKernel(op.kernel()) == nullptr)
    return Status::error(what + ": unknown kernel " + quoteForMessage(op.kernel()));
  if (isCollectiveKernel(op.kernel()))
    SHARDC_RETURN_IF_ERROR(validateCollectiveAttrs(program, op, what));

  const int numBuffers = program.buffers_size();
  auto checkIndex = [&](const char *role, int position, int buffer) -> Status {
    if (buffer >= 0 && buffer < numBuffers)
      return Status::ok();
    std::string prefix = what + ": " + role + " " + std::to_string(position) + " is ";
    if (buffer == -1 && std::string(role) == "output")
      return Status::error(prefix + "-1, but only inputs may be absent");
    return Status::error(prefix + "buffer " + std::to_string(buffer) + ", but the program has " +
                         std::to_string(numBuffers) + " buffers");
  };
  for (int i = 0; i < op.inputs_size(); ++i)
    if (op.inputs(i) != -1)
      SHARDC_RETURN_IF_ERROR(checkIndex("input", i, op.inputs(i)));
  for (int i = 0; i < op.outputs_size(); ++i)
    SHARDC_RETURN_IF_ERROR(checkIndex("output", i, op.outputs(i)));

  // Kernels write outputs while still reading inputs, and weights are shared read-only.
  for (int i = 0; i < op.outputs_size(); ++i) {
    const Buffer &out = program.buffers(op.outputs(i));
    std::string outWhat =
        what + ": output " + std::to_string(i) + " (" + describeBuffer(op.outputs(i), out) + ")";
    if (out.region() != program::ARENA)
      return Status::error(outWhat + " is in the read-only WEIGHTS region");
    for (int j = 0; j < op.inputs_size(); ++j)
      if (op.inputs(j) != -1 && overlaps(out, program.buffers(op.inputs(j))) &&
          !(sameBytes(out, program.buffers(op.inputs(j))) &&
            kernelUpdatesInPlace(op.kernel(), j, i)))
        return Status::error(outWhat + " overlaps input " + std::to_string(j) + " (" +
                             describeBuffer(op.inputs(j), program.buffers(op.inputs(j))) + ")");
    for (int j = 0; j < i; ++j)
      if (op.outputs(j) == op.outputs(i) || overlaps(out, program.buffers(op.outputs(j))))
        return Status::error(outWhat + " overlaps output " + std::to_string(j) + " (" +
                             describeBuffer(op.outputs(j), program.buffers(op.outputs(j))) + ")");
  }

  if (op.completes_before() != 0)
    SHARDC_RETURN_IF_ERROR(validateAsyncCollective(program, index, what));

  // The kernel's scratch comes from the one workspace (an asynchronous collective's from the
  // communication workspace). An op whose operands its kernel's size function rejects is left
  // to fail when it runs, with the kernel's own message.
  const bool async = op.completes_before() != 0;
  const uint64_t available = async ? program.comm_workspace_bytes() : program.workspace_bytes();
  uint64_t workspace = 0;
  if (opWorkspaceBytes(program, index, &workspace).isOk() && workspace > available)
    return Status::error(what + ": kernel " + op.kernel() + " needs " + std::to_string(workspace) +
                         " bytes of workspace, but " +
                         (async ? "comm_workspace_bytes" : "workspace_bytes") + " is " +
                         std::to_string(available));
  return Status::ok();
}

Status validateBindings(const Program &program, bool areInputs) {
  const auto &bindings = areInputs ? program.inputs() : program.outputs();
  const char *kind = areInputs ? "input" : "output";
  std::set<std::string> seen;
  for (const program::Binding &binding : bindings) {
    std::string what = std::string(kind) + " binding " + quoteForMessage(binding.name());
    if (binding.name().empty())
      return Status::error(std::string(kind) + " binding with an empty name");
    if (!seen.insert(binding.name()).second)
      return Status::error("duplicate " + what);
    if (binding.buffer() < 0 || binding.buffer() >= program.buffers_size())
      return Status::error(what + ": buffer " + std::to_string(binding.buffer()) +
                           " out of range (the program has " +
                           std::to_string(program.buffers_size()) + " buffers)");
    // Inputs are copied in before every run; copying into the shared weights would corrupt
    // them for every other rank.
    if (areInputs && program.buffers(binding.buffer()).region() != program::ARENA)
      return Status::error(what + ": " +
                           describeBuffer(binding.buffer(), program.buffers(binding.buffer())) +
                           " is not in the ARENA region");
  }
  return Status::ok();
}

// State updated in place (Binding.in_place): an input and the output of the same name, both
// flagged, whose buffers are the same bytes of the arena with the same dtype and shape, which
// no other buffer of the program overlaps (any other write there would change the state behind
// the loop's back).
Status validateInPlaceState(const Program &program) {
  for (const program::Binding &output : program.outputs()) {
    const program::Binding *input = findBinding(program.inputs(), output.name());
    const bool inputFlagged = input != nullptr && input->in_place();
    if (!output.in_place() && !inputFlagged)
      continue;
    std::string what = "in-place state " + quoteForMessage(output.name());
    if (!output.in_place() || !inputFlagged)
      return Status::error(what + ": flagged in_place on " +
                           (output.in_place() ? "the output binding but not on an input"
                                              : "the input binding but not on the output"));
    const Buffer &in = program.buffers(input->buffer()), &out = program.buffers(output.buffer());
    if (!sameBytes(in, out) || in.dtype() != out.dtype() || shapeText(in) != shapeText(out))
      return Status::error(what + ": the output's " + describeBuffer(output.buffer(), out) +
                           " is not the input's " + describeBuffer(input->buffer(), in) +
                           " (same offset, size, dtype and shape)");
    for (int b = 0; b < program.buffers_size(); ++b)
      if (b != input->buffer() && b != output.buffer() && overlaps(program.buffers(b), in))
        return Status::error(what + ": " + describeBuffer(b, program.buffers(b)) +
                             " overlaps its " + describeBuffer(input->buffer(), in));
  }
  for (const program::Binding &input : program.inputs())
    if (input.in_place() && findBinding(program.outputs(), input.name()) == nullptr)
      return Status::error("in-place state " + quoteForMessage(input.name()) +
                           ": flagged in_place on the input binding but no output has its name");
  return Status::ok();
}

// A state_init entry gives the first value of a trained parameter, which the training loop reads
// from the weights file (after the WEIGHTS region) into that input: the bytes must be exactly the
// input's size, or it would produce a tensor of the wrong size. Whether they lie inside the
// file is checked when the file is opened (validateBundleAndLoadWeights).
Status validateStateInit(const Program &program) {
  std::set<std::string> seen;
  for (int i = 0; i < program.state_init_size(); ++i) {
    const program::StateInit &init = program.state_init(i);
    std::string what =
        "state_init " + std::to_string(i) + " (" + quoteForMessage(init.name()) + ")";
    if (!seen.insert(init.name()).second)
      return Status::error(what + ": the input is initialised twice");
    // Placing a rank's program resolves them into offset and size_bytes; only the shared
    // programs of a placed bundle, whose shardings programOfRank checks, may carry them.
    // Anywhere else the loader would cut blocks by a sharding nothing checked.
    if (init.block_offsets_size() != 0)
      return Status::error(what + ": block_offsets in the program of a rank (only the shared " +
                           "programs of a placed bundle have them)");
    const Buffer *input = nullptr;
    bool sharded = false;
    for (const program::Binding &binding : program.inputs())
      if (binding.name() == init.name()) {
        input = &program.buffers(binding.buffer());
        sharded = binding.has_sharding();
      }
    if (input == nullptr)
      return Status::error(what + ": no input binding has that name");
    // A shard starts inside its parameter, wherever the rank's part begins.
    if (!sharded && init.offset() % kBufferAlignment != 0)
      return Status::error(what + ": offset " + std::to_string(init.offset()) + " is not " +
                           std::to_string(kBufferAlignment) + "-byte aligned");
    if (init.size_bytes() > UINT64_MAX - init.offset())
      return Status::error(what + ": offset " + std::to_string(init.offset()) + " + size_bytes " +
                           std::to_string(init.size_bytes()) + " overflows");
    // A shard's init may stop short of its buffer: the padding past the parameter's end.
    if (sharded ? init.size_bytes() > input->size_bytes()
                : init.size_bytes() != input->size_bytes())
      return Status::error(what + ": size_bytes is " + std::to_string(init.size_bytes()) +
                           " but the input holds " + std::to_string(input->size_bytes()));
  }
  return Status::ok();
}

// The mesh: named axes whose sizes multiply to world_size, and this rank's coordinate on them,
// whose row-major index is its rank.
Status validateMesh(const Program &program) {
  if (program.mesh_axes_size() == 0) {
    if (program.mesh_coordinate_size() != 0)
      return Status::error("mesh_coordinate has " + std::to_string(program.mesh_coordinate_size()) +
                           " entries, but the program has no mesh_axes");
    return Status::ok();
  }
  std::set<std::string> names;
  int64_t ranks = 1;
  for (int i = 0; i < program.mesh_axes_size(); ++i) {
    const program::MeshAxis &axis = program.mesh_axes(i);
    const std::string what =
        "mesh axis " + std::to_string(i) + " (" + quoteForMessage(axis.name()) + ")";
    if (axis.name().empty())
      return Status::error("mesh axis " + std::to_string(i) + " has an empty name");
    if (!names.insert(axis.name()).second)
      return Status::error(what + ": another axis has that name");
    if (axis.size() < 1)
      return Status::error(what + ": size must be at least 1, got " + std::to_string(axis.size()));
    // world_size bounds the product: stop before it could overflow.
    if (ranks <= program.world_size())
      ranks *= axis.size();
  }
  if (ranks != program.world_size()) {
    std::string sizes;
    for (const program::MeshAxis &axis : program.mesh_axes())
      sizes += (sizes.empty() ? "" : " x ") + std::to_string(axis.size());
    return Status::error("the mesh (" + sizes + ") does not have world_size = " +
                         std::to_string(program.world_size()) + " ranks");
  }
  if (program.mesh_coordinate_size() != program.mesh_axes_size())
    return Status::error("mesh_coordinate has " + std::to_string(program.mesh_coordinate_size()) +
                         " entries for " + std::to_string(program.mesh_axes_size()) + " mesh axes");
  std::vector<int64_t> sizes, coordinate;
  for (int i = 0; i < program.mesh_axes_size(); ++i) {
    const int32_t c = program.mesh_coordinate(i), size = program.mesh_axes(i).size();
    if (c < 0 || c >= size)
      return Status::error("mesh_coordinate " + intsText(program.mesh_coordinate()) +
                           ": coordinate " + std::to_string(c) + " on axis " +
                           quoteForMessage(program.mesh_axes(i).name()) + " of size " +
                           std::to_string(size) + " is out of range");
    sizes.push_back(size);
    coordinate.push_back(c);
  }
  if (meshRank(sizes, coordinate) != program.rank())
    return Status::error("mesh_coordinate " + intsText(program.mesh_coordinate()) + " is rank " +
                         std::to_string(meshRank(sizes, coordinate)) +
                         " (row-major), but the program is rank " + std::to_string(program.rank()));
  return Status::ok();
}

// The groups: each a slice of the mesh through this rank, listed with exactly the ranks of that
// slice in their group order; names and axes unique.
Status validateGroups(const Program &program) {
  if (program.groups_size() == 0)
    return Status::ok();
  if (program.mesh_axes_size() == 0)
    return Status::error("the program has " + std::to_string(program.groups_size()) + " group" +
                         (program.groups_size() == 1 ? "" : "s") +
                         " but no mesh_axes (a group is a slice of the mesh)");
  std::vector<int64_t> sizes, coordinate;
  for (int i = 0; i < program.mesh_axes_size(); ++i) {
    sizes.push_back(program.mesh_axes(i).size());
    coordinate.push_back(program.mesh_coordinate(i));
  }
  std::set<std::string> names;
  std::set<std::vector<int>> axesSeen;
  for (int g = 0; g < program.groups_size(); ++g) {
    const program::CommGroup &group = program.groups(g);
    const std::string what = describeGroup(g, group);
    if (group.name().empty())
      return Status::error("group " + std::to_string(g) + " has an empty name");
    if (!names.insert(group.name()).second)
      return Status::error(what + ": another group has that name");
    if (group.mesh_axes_size() == 0)
      return Status::error(what + ": no mesh_axes");
    std::vector<int> axes;
    for (int32_t axis : group.mesh_axes()) {
      if (axis < 0 || axis >= program.mesh_axes_size())
        return Status::error(what + ": mesh axis " + std::to_string(axis) +
                             " does not exist (the mesh has " +
                             std::to_string(program.mesh_axes_size()) + " axes)");
      if (!axes.empty() && axis <= axes.back())
        return Status::error(what + ": mesh_axes " + intsText(group.mesh_axes()) +
                             " are not in increasing order");
      axes.push_back(axis);
    }
    if (!axesSeen.insert(axes).second)
      return Status::error(what + ": another group runs along the same mesh axes " +
                           intsText(group.mesh_axes()));
    std::set<int32_t> members;
    for (int32_t r : group.ranks()) {
      if (r < 0 || r >= program.world_size())
        return Status::error(what + ": rank " + std::to_string(r) + " does not exist (world_size " +
                             std::to_string(program.world_size()) + ")");
      if (!members.insert(r).second)
        return Status::error(what + ": rank " + std::to_string(r) + " is listed twice");
    }
    if (members.count(program.rank()) == 0)
      return Status::error(what + ": ranks " + intsText(group.ranks()) +
                           " do not include this rank (" + std::to_string(program.rank()) + ")");
    const MeshSlice slice = meshSlice(sizes, coordinate, axes);
    if (!std::equal(slice.ranks.begin(), slice.ranks.end(), group.ranks().begin(),
                    group.ranks().end())) {
      std::string axisNames, expected;
      for (int axis : axes)
        axisNames += (axisNames.empty() ? "" : ", ") + quoteForMessage(program.mesh_axes(axis).name());
      for (int r : slice.ranks)
        expected += (expected.empty() ? "" : ", ") + std::to_string(r);
      return Status::error(what + ": ranks " + intsText(group.ranks()) +
                           ", but the slice of the mesh along " + axisNames +
                           " through mesh_coordinate " + intsText(program.mesh_coordinate()) +
                           " is [" + expected + "]");
    }
  }
  return Status::ok();
}

} // namespace

Status validateProgram(const Program &program) {
  SHARDC_RETURN_IF_ERROR(validateMesh(program));
  SHARDC_RETURN_IF_ERROR(validateGroups(program));
  for (int i = 0; i < program.buffers_size(); ++i)
    SHARDC_RETURN_IF_ERROR(validateBuffer(program, i));
  for (int i = 0; i < program.ops_size(); ++i)
    SHARDC_RETURN_IF_ERROR(validateOp(program, i));
  SHARDC_RETURN_IF_ERROR(validateBindings(program, /*areInputs=*/true));
  SHARDC_RETURN_IF_ERROR(validateBindings(program, /*areInputs=*/false));
  SHARDC_RETURN_IF_ERROR(validateInPlaceState(program));
  SHARDC_RETURN_IF_ERROR(validateStateInit(program));
  return Status::ok();
}

} // namespace shardc::runtime
