#include "runtime/kernels/cpu/broadcast.h"

#include "runtime/kernels/cpu/checks.h"

namespace shardc::runtime::cpu {

int64_t StridedLoop::numel() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

void StridedLoop::coalesce() {
  std::vector<int64_t> newDims;
  std::array<std::vector<int64_t>, kMaxLoopOperands> newStrides;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1)
      continue; // contributes nothing to the walk
    if (dims[d] == 0) {
      // An empty walk: keep a single empty dim so that numel() stays 0.
      newDims.assign(1, 0);
      for (int k = 0; k < numOperands; ++k)
        newStrides[k].assign(1, 0);
      break;
    }
    bool mergeable = !newDims.empty();
    for (int k = 0; k < numOperands && mergeable; ++k)
      mergeable = newStrides[k].back() == strides[k][d] * dims[d];
    if (mergeable) {
      newDims.back() *= dims[d];
      for (int k = 0; k < numOperands; ++k)
        newStrides[k].back() = strides[k][d];
    } else {
      newDims.push_back(dims[d]);
      for (int k = 0; k < numOperands; ++k)
        newStrides[k].push_back(strides[k][d]);
    }
  }
  if (newDims.empty()) {
    newDims.push_back(1);
    for (int k = 0; k < numOperands; ++k)
      newStrides[k].push_back(0);
  }
  dims = std::move(newDims);
  strides = std::move(newStrides);
}

Status broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                       std::vector<int64_t> *out) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right; missing leading dims act as 1.
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return Status::error("shapes " + shapeString(a) + " and " + shapeString(b) +
                           " do not broadcast");
    result[i] = da == 1 ? db : da;
  }
  *out = std::move(result);
  return Status::ok();
}

Status planBroadcast(const std::vector<const std::vector<int64_t> *> &inputs,
                     const std::vector<int64_t> &outShape, StridedLoop *loop) {
  if (inputs.size() > kMaxLoopOperands)
    return Status::error("too many operands to broadcast");
  StridedLoop result;
  result.numOperands = static_cast<int>(inputs.size());
  result.dims = outShape;
  const size_t rank = outShape.size();
  int k = 0;
  for (const std::vector<int64_t> *in : inputs) {
    if (in->size() > rank)
      return Status::error("shape " + shapeString(*in) + " cannot be broadcast to " +
                           shapeString(outShape));
    std::vector<int64_t> &strides = result.strides[k++];
    strides.assign(rank, 0);
    const size_t lead = rank - in->size();
    int64_t stride = 1;
    for (size_t i = in->size(); i-- > 0;) {
      const int64_t dim = (*in)[i];
      if (dim != outShape[lead + i] && dim != 1)
        return Status::error("shape " + shapeString(*in) + " cannot be broadcast to " +
                             shapeString(outShape));
      strides[lead + i] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
  result.coalesce();
  *loop = std::move(result);
  return Status::ok();
}

Status planElementwise(const char *kernel, std::initializer_list<const Tensor *> inputs,
                       const Tensor &output, StridedLoop *loop) {
  std::vector<int64_t> expected;
  for (const Tensor *in : inputs) {
    Status s = broadcastShapes(expected, in->shape, &expected);
    if (!s)
      return Status::error(std::string(kernel) + ": input " + s.message());
  }
  if (expected != output.shape)
    return Status::error(std::string(kernel) + ": output has shape " + shapeString(output.shape) +
                         ", expected the broadcast shape " + shapeString(expected));
  std::vector<const std::vector<int64_t> *> shapes;
  for (const Tensor *in : inputs)
    shapes.push_back(&in->shape);
  Status s = planBroadcast(shapes, output.shape, loop);
  if (!s)
    return Status::error(std::string(kernel) + ": " + s.message());
  return Status::ok();
}

StridedLoop planReductionWalk(const std::vector<int64_t> &shape, const std::vector<bool> &reduced) {
  StridedLoop loop;
  loop.numOperands = 1;
  loop.dims = shape;
  loop.strides[0].assign(shape.size(), 0);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (reduced[d])
      continue;
    loop.strides[0][d] = stride;
    stride *= shape[d];
  }
  loop.coalesce();
  return loop;
}

} // namespace shardc::runtime::cpu
