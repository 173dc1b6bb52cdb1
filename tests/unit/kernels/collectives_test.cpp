// The collective kernels (all_reduce, reduce_scatter, all_gather, all_to_all, shard_slice) on
// 1, 2, 3, 4 and 8 ranks run as threads of a local world, against direct references, on f32,
// bf16 and all_gather / all_to_all / shard_slice calls mixing dtypes; their workspace (exact,
// and one byte short); and the errors of calls without a communicator or with the wrong one,
// or with dtypes that do not fit.
#include "runtime/common/comm_cost.h"
#include "runtime/support/half_float.h"
#include "tests/unit/comm/comm_test_util.h"
#include "tests/unit/kernels/test_support.h"

#include <string>

namespace shardc::runtime::testing {
namespace {

const int kRankCounts[] = {1, 2, 3, 4, 8};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One rank's operands: tensors that own their bytes.
struct RankOperands {
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> outputs;
};

std::vector<Tensor> views(const std::vector<HostTensor> &tensors) {
  std::vector<Tensor> v;
  for (const HostTensor &t : tensors)
    v.push_back(t.view());
  return v;
}

// Runs kernel `name` on every rank (rank r with operands[r] and comms[r]), each with the
// workspace the size function asks for plus `workspaceDelta` bytes.
std::vector<Status> runOnRanks(const std::string &name, std::vector<RankOperands> &operands,
                               const std::vector<std::unique_ptr<Communicator>> &comms,
                               const Attrs &attrs, int64_t workspaceDelta = 0) {
  KernelFn fn = findCpuKernel(name);
  EXPECT_NE(fn, nullptr) << name;
  return runRanks(comms, [&](int r, Communicator &comm) -> Status {
    KernelArgs args;
    args.inputs = views(operands[static_cast<size_t>(r)].inputs);
    args.outputs = views(operands[static_cast<size_t>(r)].outputs);
    args.attrs = &attrs.map();
    args.comm = &comm;
    uint64_t bytes = 0;
    SHARDC_RETURN_IF_ERROR(cpuKernelWorkspaceBytes(name, args, &bytes));
    WorkspaceStorage workspace(static_cast<uint64_t>(static_cast<int64_t>(bytes) + workspaceDelta));
    workspace.give(&args);
    return fn(args);
  });
}

void expectAllOk(const std::vector<Status> &statuses) {
  for (size_t r = 0; r < statuses.size(); ++r)
    EXPECT_TRUE(statuses[r].isOk()) << "rank " << r << ": " << statuses[r].message();
}

// Shapes of every kind: matrices, odd vectors, a scalar, an empty tensor.
const std::vector<std::vector<int64_t>> kShapes = {{2, 3}, {5}, {}, {0}, {7, 1, 3}};

TEST(Collectives, AllReduceSumsEveryInputOverTheRanks) {
  for (int n : kRankCounts) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    std::vector<RankOperands> operands(static_cast<size_t>(n));
    int64_t total = 0;
    for (const auto &shape : kShapes)
      total += numelOf(shape);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < kShapes.size(); ++i) {
        const int64_t numel = numelOf(kShapes[i]);
        operands[static_cast<size_t>(r)].inputs.push_back(HostTensor::of<float>(
            kShapes[i], randomFloats(numel, -2, 2, static_cast<unsigned>(100 * r + i))));
        operands[static_cast<size_t>(r)].outputs.emplace_back(program::F32, kShapes[i]);
      }
    auto comms = makeLocalWorld(n);
    expectAllOk(runOnRanks("all_reduce", operands, comms, Attrs().i("num_ranks", n)));
    for (size_t i = 0; i < kShapes.size(); ++i) {
      const std::vector<float> y0 = operands[0].outputs[i].values<float>();
      for (size_t e = 0; e < y0.size(); ++e) {
        double exact = 0, magnitude = 0;
        for (int r = 0; r < n; ++r) {
          const float x = operands[static_cast<size_t>(r)].inputs[i].values<float>()[e];
          exact += x;
          magnitude += std::fabs(x);
        }
        EXPECT_NEAR(y0[e], exact, n * 0x1p-23 * magnitude + 1e-30)
            << "input " << i << "[" << e << "]";
      }
      for (int r = 1; r < n; ++r)
        EXPECT_TRUE(sameBits(operands[static_cast<size_t>(r)].outputs[i].values<float>(), y0))
            << "rank " << r << " input " << i;
    }
    for (const auto &comm : comms) {
      EXPECT_EQ(comm->counters().calls[0], 1u);
      EXPECT_EQ(comm->counters().bytesSent[0],
                collectiveBytesSent(CollectiveKind::AllReduce, paddedToRanks(total, n), n, 4));
    }
  }
}

TEST(Collectives, ReduceScatterGivesEachRankItsShardOfTheSum) {
  for (int n : kRankCounts) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    std::vector<RankOperands> operands(static_cast<size_t>(n));
    int64_t shardTotal = 0;
    for (const auto &shape : kShapes)
      shardTotal += ceilDiv(numelOf(shape), n);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < kShapes.size(); ++i) {
        const int64_t numel = numelOf(kShapes[i]);
        operands[static_cast<size_t>(r)].inputs.push_back(HostTensor::of<float>(
            kShapes[i], randomFloats(numel, -2, 2, static_cast<unsigned>(300 * r + i))));
        operands[static_cast<size_t>(r)].outputs.emplace_back(
            program::F32, std::vector<int64_t>{ceilDiv(numel, n)});
      }
    auto comms = makeLocalWorld(n);
    expectAllOk(runOnRanks("reduce_scatter", operands, comms, Attrs().i("num_ranks", n)));
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < kShapes.size(); ++i) {
        const int64_t numel = numelOf(kShapes[i]), k = ceilDiv(numel, n);
        const std::vector<float> s = operands[static_cast<size_t>(r)].outputs[i].values<float>();
        for (int64_t j = 0; j < k; ++j) {
          const int64_t e = r * k + j;
          if (e >= numel) {
            EXPECT_EQ(s[static_cast<size_t>(j)], 0.0f) << "padding of input " << i;
            continue;
          }
          double exact = 0, magnitude = 0;
          for (int q = 0; q < n; ++q) {
            const float x =
                operands[static_cast<size_t>(q)].inputs[i].values<float>()[static_cast<size_t>(e)];
            exact += x;
            magnitude += std::fabs(x);
          }
          EXPECT_NEAR(s[static_cast<size_t>(j)], exact, n * 0x1p-23 * magnitude + 1e-30)
              << "rank " << r << " input " << i << " element " << e;
        }
      }
      EXPECT_EQ(comms[static_cast<size_t>(r)]->counters().bytesSent[1],
                collectiveBytesSent(CollectiveKind::ReduceScatter, shardTotal * n, n, 4));
    }
  }
}

TEST(Collectives, AllGatherReassemblesTheShardsAndDropsThePadding) {
  for (int n : kRankCounts) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    std::vector<RankOperands> operands(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < kShapes.size(); ++i) {
        const int64_t k = ceilDiv(numelOf(kShapes[i]), n);
        operands[static_cast<size_t>(r)].inputs.push_back(
            HostTensor::of<float>({k}, randomFloats(k, -2, 2, static_cast<unsigned>(500 * r + i))));
        operands[static_cast<size_t>(r)].outputs.emplace_back(program::F32, kShapes[i]);
      }
    auto comms = makeLocalWorld(n);
    expectAllOk(runOnRanks("all_gather", operands, comms, Attrs().i("num_ranks", n)));
    for (size_t i = 0; i < kShapes.size(); ++i) {
      const int64_t numel = numelOf(kShapes[i]), k = ceilDiv(numel, n);
      std::vector<float> expected(static_cast<size_t>(numel));
      for (int64_t e = 0; e < numel; ++e)
        expected[static_cast<size_t>(e)] = operands[static_cast<size_t>(e / k)]
                                               .inputs[i]
                                               .values<float>()[static_cast<size_t>(e % k)];
      for (int r = 0; r < n; ++r)
        EXPECT_TRUE(sameBits(operands[static_cast<size_t>(r)].outputs[i].values<float>(), expected))
            << "rank " << r << " output " << i;
    }
  }
}

TEST(Collectives, ShardSliceCutsThisRanksShardAndAllGatherUndoesIt) {
  for (int n : kRankCounts) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    std::vector<RankOperands> slices(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < kShapes.size(); ++i) {
        const int64_t numel = numelOf(kShapes[i]);
        // Replicated: the same tensor on every rank.
        slices[static_cast<size_t>(r)].inputs.push_back(HostTensor::of<float>(
            kShapes[i], randomFloats(numel, -2, 2, static_cast<unsigned>(i))));
        slices[static_cast<size_t>(r)].outputs.emplace_back(
            program::F32, std::vector<int64_t>{ceilDiv(numel, n)});
      }
    auto comms = makeLocalWorld(n);
    expectAllOk(runOnRanks("shard_slice", slices, comms, Attrs().i("num_ranks", n)));
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(comms[static_cast<size_t>(r)]->counters().totalBytesSent(), 0u);
      for (size_t i = 0; i < kShapes.size(); ++i) {
        const std::vector<float> x = slices[static_cast<size_t>(r)].inputs[i].values<float>();
        const std::vector<float> s = slices[static_cast<size_t>(r)].outputs[i].values<float>();
        const int64_t k = static_cast<int64_t>(s.size());
        for (int64_t j = 0; j < k; ++j) {
          const int64_t e = r * k + j;
          EXPECT_EQ(s[static_cast<size_t>(j)],
                    e < static_cast<int64_t>(x.size()) ? x[static_cast<size_t>(e)] : 0.0f);
        }
      }
    }
    // all_gather of the slices gives back every tensor, bit for bit.
    std::vector<RankOperands> gathers(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < kShapes.size(); ++i) {
        gathers[static_cast<size_t>(r)].inputs.push_back(
            HostTensor::of<float>(slices[static_cast<size_t>(r)].outputs[i].view().shape,
                                  slices[static_cast<size_t>(r)].outputs[i].values<float>()));
        gathers[static_cast<size_t>(r)].outputs.emplace_back(program::F32, kShapes[i]);
      }
    expectAllOk(runOnRanks("all_gather", gathers, comms, Attrs().i("num_ranks", n)));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < kShapes.size(); ++i)
        EXPECT_TRUE(sameBits(gathers[static_cast<size_t>(r)].outputs[i].values<float>(),
                             slices[0].inputs[i].values<float>()));
  }
}

// Two tensors of 5 and 3 elements (of dtypes `first` and `second`) on 3 ranks: k = 2 and 1,
// K = 3, padded all-reduce size 9.
KernelArgs sizingArgs(const std::string &name, const Attrs &attrs, DType first = program::F32,
                      DType second = program::F32) {
  KernelArgs args;
  const bool gather = name == "all_gather";
  const bool sharded = name != "all_reduce";
  std::vector<Tensor> whole = {typeOnlyTensor(first, {5}), typeOnlyTensor(second, {3})};
  std::vector<Tensor> shards = {typeOnlyTensor(first, {2}), typeOnlyTensor(second, {1})};
  args.inputs = gather ? shards : whole;
  args.outputs = !sharded ? whole : gather ? whole : shards;
  args.attrs = &attrs.map();
  return args;
}

TEST(Collectives, WorkspaceSizesFollowTheDocumentedTakes) {
  const Attrs attrs = Attrs().i("num_ranks", 3);
  const std::pair<std::string, uint64_t> expected[] = {
      {"all_reduce", 9 * 4},
      {"reduce_scatter", 64 + 3 * 4}, // 9 floats (one aligned piece), then 3
      {"all_gather", 64 + 9 * 4},     // 3 floats, then 9
  };
  for (const auto &[name, bytes] : expected) {
    uint64_t got = 0;
    ASSERT_KERNEL_OK(cpuKernelWorkspaceBytes(name, sizingArgs(name, attrs), &got));
    EXPECT_EQ(got, bytes) << name;
  }
  // The same takes in bytes of the operands' dtype: bf16 halves every piece.
  const std::pair<std::string, uint64_t> halves[] = {
      {"all_reduce", 9 * 2},
      {"reduce_scatter", 64 + 3 * 2},
      {"all_gather", 64 + 9 * 2},
  };
  for (const auto &[name, bytes] : halves) {
    uint64_t got = 0;
    ASSERT_KERNEL_OK(
        cpuKernelWorkspaceBytes(name, sizingArgs(name, attrs, program::BF16, program::BF16), &got));
    EXPECT_EQ(got, bytes) << name << " on bf16";
  }
  // An all_gather of an f32 and a bf16 tensor packs their shards' bytes: 2 * 4 + 1 * 2 per rank.
  uint64_t mixed = 0;
  ASSERT_KERNEL_OK(cpuKernelWorkspaceBytes(
      "all_gather", sizingArgs("all_gather", attrs, program::F32, program::BF16), &mixed));
  EXPECT_EQ(mixed, 64u + 3 * 10);
  uint64_t none = 7;
  ASSERT_KERNEL_OK(cpuKernelWorkspaceBytes("shard_slice", KernelArgs(), &none));
  EXPECT_EQ(none, 0u);
}

// One byte short, every rank reports it before anything is sent, so nobody waits; with the
// exact size the same call succeeds.
TEST(Collectives, AWorkspaceOneByteShortIsACleanErrorOnEveryRank) {
  const int n = 3;
  for (const std::string name : {"all_reduce", "reduce_scatter", "all_gather"}) {
    SCOPED_TRACE(name);
    const bool gather = name == "all_gather", sharded = name != "all_reduce";
    auto makeOperands = [&] {
      std::vector<RankOperands> operands(n);
      for (int r = 0; r < n; ++r) {
        for (int64_t numel : {5, 3}) {
          const int64_t k = ceilDiv(numel, n);
          auto &o = operands[static_cast<size_t>(r)];
          if (gather)
            o.inputs.push_back(HostTensor::of<float>({k}, randomFloats(k, -1, 1, 1)));
          else
            o.inputs.push_back(HostTensor::of<float>({numel}, randomFloats(numel, -1, 1, 2)));
          o.outputs.emplace_back(program::F32,
                                 std::vector<int64_t>{sharded && !gather ? k : numel});
        }
      }
      return operands;
    };
    auto comms = makeLocalWorld(n, 5.0);
    auto operands = makeOperands();
    const auto start = std::chrono::steady_clock::now();
    for (const Status &s :
         runOnRanks(name, operands, comms, Attrs().i("num_ranks", n), /*workspaceDelta=*/-1))
      EXPECT_KERNEL_ERROR(s, name + ": needs at least ");
    EXPECT_LT(secondsSince(start), 2.0);
    for (const auto &comm : comms)
      EXPECT_EQ(comm->counters().totalBytesSent(), 0u);
    operands = makeOperands();
    expectAllOk(runOnRanks(name, operands, comms, Attrs().i("num_ranks", n)));
  }
}

TEST(Collectives, CallsWithoutTheRightCommunicatorAreCleanErrors) {
  HostTensor x = HostTensor::of<float>({4}, {1, 2, 3, 4});
  HostTensor y(program::F32, {4}), shard(program::F32, {2});
  const Attrs two = Attrs().i("num_ranks", 2);
  // No communicator (a single-rank run).
  EXPECT_KERNEL_ERROR(
      runKernel("all_reduce", {x}, {y}, two),
      "all_reduce: needs the rank's communicator (num_ranks = 2), but the run has none");
  EXPECT_KERNEL_ERROR(runKernel("reduce_scatter", {x}, {shard}, two),
                      "reduce_scatter: needs the rank's communicator");
  EXPECT_KERNEL_ERROR(runKernel("all_gather", {shard}, {x}, two),
                      "all_gather: needs the rank's communicator");
  EXPECT_KERNEL_ERROR(runKernel("shard_slice", {x}, {shard}, two),
                      "shard_slice: needs the rank's communicator");
  // A communicator of another size.
  auto comms = makeLocalWorld(3, 1.0);
  for (const std::string name : {"all_reduce", "shard_slice"}) {
    KernelArgs args;
    args.inputs = {x};
    args.outputs = {name == "all_reduce" ? y.view() : shard.view()};
    args.attrs = &two.map();
    args.comm = comms[0].get();
    WorkspaceStorage workspace(1024);
    workspace.give(&args);
    EXPECT_KERNEL_ERROR(findCpuKernel(name)(args),
                        name + ": num_ranks is 2, but the communicator has 3 ranks");
  }
  // Malformed operands and attributes.
  EXPECT_KERNEL_ERROR(runKernel("all_reduce", {x}, {y}), "missing attribute 'num_ranks'");
  EXPECT_KERNEL_ERROR(runKernel("all_reduce", {x}, {y}, Attrs().i("num_ranks", 0)),
                      "all_reduce: num_ranks must be a positive int, got 0");
  EXPECT_KERNEL_ERROR(runKernel("all_reduce", {x, x}, {y}, two),
                      "all_reduce: expected as many outputs as inputs, got 2 inputs and 1 outputs");
  EXPECT_KERNEL_ERROR(runKernel("reduce_scatter", {x}, {y}, two), "reduce_scatter: output 0");
  EXPECT_KERNEL_ERROR(runKernel("all_gather", {x}, {x}, two), "all_gather: input 0");
  HostTensor ints(program::I64, {4});
  EXPECT_KERNEL_ERROR(runKernel("shard_slice", {ints}, {shard}, two),
                      "shard_slice: output 0 is f32, but input 0 is i64");
}

// ---- bf16, f16 and mixed dtypes
// ------------------------------------------------------------------

uint16_t narrow(DType dtype, float v) {
  return dtype == program::BF16 ? toBFloat16(v).bits : toFloat16(v).bits;
}

float widen(DType dtype, uint16_t bits) {
  return dtype == program::BF16 ? toFloat(BFloat16{bits})
                                : toFloat(Float16{bits});
}

// A tensor of `dtype` (f32, bf16, f16; i64 and bool, which only data movement takes) holding
// `values` rounded to it.
HostTensor tensorOf(DType dtype, std::vector<int64_t> shape, const std::vector<float> &values) {
  if (dtype == program::F32)
    return HostTensor::of<float>(std::move(shape), values);
  if (dtype == program::I64 || dtype == program::BOOL) {
    HostTensor t(dtype, std::move(shape));
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == program::I64)
        t.view().as<int64_t>()[i] = static_cast<int64_t>(values[i] * 1e6f) * 4099;
      else
        t.view().as<uint8_t>()[i] = values[i] > 0;
    }
    return t;
  }
  HostTensor t(dtype, std::move(shape));
  uint16_t *bits = t.view().as<uint16_t>();
  for (size_t i = 0; i < values.size(); ++i)
    bits[i] = narrow(dtype, values[i]);
  return t;
}

std::vector<uint8_t> bytesOf(const HostTensor &t) {
  const uint8_t *p = t.view().as<uint8_t>();
  return std::vector<uint8_t>(p, p + t.view().sizeBytes());
}

std::vector<uint16_t> bitsOf(const HostTensor &t) {
  const uint16_t *p = t.view().as<uint16_t>();
  return std::vector<uint16_t>(p, p + t.view().numel());
}

// The kernel packs the inputs back to back, pads to a multiple of N and all-reduces; element p
// of that buffer lies in chunk c = p / (padded / N), which the ring sums starting with rank
// c+1's value and adding ranks c+2, ..., c left to right, each sum rounded to bf16.
TEST(Collectives, Bf16AllReduceSumsInRingOrderRoundingEveryStep) {
  for (int n : kRankCounts) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    std::vector<RankOperands> operands(static_cast<size_t>(n));
    std::vector<std::vector<uint16_t>> packed(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < kShapes.size(); ++i) {
        const int64_t numel = numelOf(kShapes[i]);
        HostTensor x = tensorOf(program::BF16, kShapes[i],
                                randomFloats(numel, -2, 2, static_cast<unsigned>(700 * r + i)));
        const std::vector<uint16_t> bits = bitsOf(x);
        packed[static_cast<size_t>(r)].insert(packed[static_cast<size_t>(r)].end(), bits.begin(),
                                              bits.end());
        operands[static_cast<size_t>(r)].inputs.push_back(std::move(x));
        operands[static_cast<size_t>(r)].outputs.emplace_back(program::BF16, kShapes[i]);
      }
    const size_t total = packed[0].size();
    const size_t padded = (total + static_cast<size_t>(n) - 1) / n * n;
    auto comms = makeLocalWorld(n);
    expectAllOk(runOnRanks("all_reduce", operands, comms,
                           Attrs().i("num_ranks", n).i("dtype", program::BF16)));
    std::vector<uint16_t> expected(total);
    for (size_t p = 0; p < total; ++p) {
      const size_t c = p / (padded / static_cast<size_t>(n));
      uint16_t sum = packed[(c + 1) % n][p];
      for (size_t k = 2; k <= static_cast<size_t>(n); ++k)
        sum = narrow(program::BF16,
                     widen(program::BF16, sum) + widen(program::BF16, packed[(c + k) % n][p]));
      expected[p] = sum;
    }
    for (int r = 0; r < n; ++r) {
      std::vector<uint16_t> got;
      for (const HostTensor &y : operands[static_cast<size_t>(r)].outputs) {
        const std::vector<uint16_t> bits = bitsOf(y);
        got.insert(got.end(), bits.begin(), bits.end());
      }
      EXPECT_EQ(got, expected) << "rank " << r;
      EXPECT_EQ(comms[static_cast<size_t>(r)]->counters().bytesSent[0],
                collectiveBytesSent(CollectiveKind::AllReduce, padded, n, 2));
    }
  }
}

// Shards of bf16 tensors (one dtype: the communicator moves bf16) and of tensors of three
// dtypes in one call (packed by bytes: the communicator moves raw bytes).
TEST(Collectives, AllGatherMovesBf16AndMixesDtypesByBytes) {
  const std::vector<DType> sameDtypes(kShapes.size(), program::BF16);
  const std::vector<DType> mixedDtypes = {program::F32, program::BF16, program::F16, program::F32,
                                          program::BF16};
  for (const auto *dtypes : {&sameDtypes, &mixedDtypes}) {
    const bool mixed = dtypes == &mixedDtypes;
    for (int n : kRankCounts) {
      SCOPED_TRACE(std::string(mixed ? "mixed" : "bf16") + ", ranks " + std::to_string(n));
      std::vector<RankOperands> operands(static_cast<size_t>(n));
      uint64_t chunkBytes = 0;
      for (size_t i = 0; i < kShapes.size(); ++i)
        chunkBytes +=
            static_cast<uint64_t>(ceilDiv(numelOf(kShapes[i]), n)) * dtypeSize((*dtypes)[i]);
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < kShapes.size(); ++i) {
          const int64_t k = ceilDiv(numelOf(kShapes[i]), n);
          operands[static_cast<size_t>(r)].inputs.push_back(tensorOf(
              (*dtypes)[i], {k}, randomFloats(k, -2, 2, static_cast<unsigned>(900 * r + i))));
          operands[static_cast<size_t>(r)].outputs.emplace_back((*dtypes)[i], kShapes[i]);
        }
      auto comms = makeLocalWorld(n);
      expectAllOk(runOnRanks("all_gather", operands, comms, Attrs().i("num_ranks", n)));
      for (size_t i = 0; i < kShapes.size(); ++i) {
        const int64_t numel = numelOf(kShapes[i]), k = ceilDiv(numel, n);
        const size_t size = dtypeSize((*dtypes)[i]);
        std::vector<uint8_t> expected;
        for (int64_t e = 0; e < numel; ++e) {
          const std::vector<uint8_t> shard =
              bytesOf(operands[static_cast<size_t>(e / k)].inputs[i]);
          expected.insert(expected.end(), shard.begin() + static_cast<long>((e % k) * size),
                          shard.begin() + static_cast<long>((e % k + 1) * size));
        }
        for (int r = 0; r < n; ++r)
          EXPECT_EQ(bytesOf(operands[static_cast<size_t>(r)].outputs[i]), expected)
              << "rank " << r << " output " << i;
      }
      // bf16 moves chunkBytes / 2 elements of 2 bytes, the mixed call chunkBytes single bytes:
      // the same bytes on the wire.
      for (const auto &comm : comms)
        EXPECT_EQ(comm->counters().bytesSent[2],
                  mixed ? collectiveBytesSent(CollectiveKind::AllGather, chunkBytes * n, n, 1)
                        : collectiveBytesSent(CollectiveKind::AllGather, chunkBytes / 2 * n, n, 2));
    }
  }
}

// all_to_all of tensors of several dtypes (f32, i64, bf16, bool, an empty one) whose numel each
// rank count divides: rank r's output piece s is rank s's input piece r, byte for byte, and
// every rank sends (N-1)/N of its buffer, as comm_cost.h says. The reference indexes the inputs
// directly: piece j of a tensor of numel n is its elements [j*n/N, (j+1)*n/N).
TEST(Collectives, AllToAllSendsPieceJToRankJ) {
  const std::vector<DType> dtypes = {program::F32, program::I64, program::BF16, program::BOOL,
                                     program::F32};
  for (int n : kRankCounts) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    const std::vector<std::vector<int64_t>> shapes = {
        {2 * n, 3}, {n}, {3, n, 2}, {5 * n}, {0}};
    std::vector<RankOperands> operands(static_cast<size_t>(n));
    uint64_t chunkBytes = 0;
    for (size_t i = 0; i < shapes.size(); ++i)
      chunkBytes += static_cast<uint64_t>(numelOf(shapes[i]) / n) * dtypeSize(dtypes[i]);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < shapes.size(); ++i) {
        operands[static_cast<size_t>(r)].inputs.push_back(
            tensorOf(dtypes[i], shapes[i],
                     randomFloats(numelOf(shapes[i]), -9, 9, static_cast<unsigned>(70 * r + i))));
        operands[static_cast<size_t>(r)].outputs.emplace_back(dtypes[i], shapes[i]);
      }
    auto comms = makeLocalWorld(n);
    expectAllOk(runOnRanks("all_to_all", operands, comms, Attrs().i("num_ranks", n)));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < shapes.size(); ++i) {
        const size_t piece = static_cast<size_t>(numelOf(shapes[i]) / n) * dtypeSize(dtypes[i]);
        std::vector<uint8_t> expected;
        for (int from = 0; from < n; ++from) {
          const std::vector<uint8_t> in = bytesOf(operands[static_cast<size_t>(from)].inputs[i]);
          expected.insert(expected.end(), in.begin() + static_cast<long>(r * piece),
                          in.begin() + static_cast<long>((r + 1) * piece));
        }
        EXPECT_EQ(bytesOf(operands[static_cast<size_t>(r)].outputs[i]), expected)
            << "rank " << r << " tensor " << i;
      }
    for (const auto &comm : comms)
      EXPECT_EQ(comm->counters().bytesSent[static_cast<int>(CollectiveKind::AllToAll)],
                collectiveBytesSent(CollectiveKind::AllToAll, chunkBytes * n, n, 1));
  }
}

// A tensor whose numel the ranks do not divide has no equal pieces: refused on every rank
// before anything is sent, naming the input.
TEST(Collectives, AllToAllOfAnUndividedTensorIsACleanError) {
  std::vector<RankOperands> operands(2);
  for (RankOperands &o : operands) {
    o.inputs.push_back(HostTensor::of<float>({3}, {1, 2, 3}));
    o.outputs.emplace_back(program::F32, std::vector<int64_t>{3});
  }
  auto comms = makeLocalWorld(2, 0.5);
  for (const Status &s : runOnRanks("all_to_all", operands, comms, Attrs().i("num_ranks", 2)))
    EXPECT_EQ(s.message(), "all_to_all: input 0 has 3 elements, not a multiple of its 2 ranks");
  EXPECT_EQ(comms[0]->counters().totalBytesSent(), 0u);
}

// all_to_all's workspace: the pieces to send (N chunks, one aligned piece), then those
// received. One byte short is a clean error on every rank before anything is sent.
TEST(Collectives, AllToAllWorkspaceIsTwoBuffersAndOneByteShortIsACleanError) {
  const int n = 3;
  auto makeOperands = [&] {
    std::vector<RankOperands> operands(n);
    for (int r = 0; r < n; ++r)
      for (int64_t numel : {6, 3}) {
        auto &o = operands[static_cast<size_t>(r)];
        o.inputs.push_back(HostTensor::of<float>({numel}, randomFloats(numel, -1, 1, 3)));
        o.outputs.emplace_back(program::F32, std::vector<int64_t>{numel});
      }
    return operands;
  };
  auto operands = makeOperands();
  KernelArgs args;
  args.inputs = views(operands[0].inputs);
  args.outputs = views(operands[0].outputs);
  const Attrs attrs = Attrs().i("num_ranks", n);
  args.attrs = &attrs.map();
  uint64_t bytes = 0;
  ASSERT_KERNEL_OK(cpuKernelWorkspaceBytes("all_to_all", args, &bytes));
  EXPECT_EQ(bytes, 64u + 9 * 4); // 9 floats to send (3 per rank), then the 9 received
  auto comms = makeLocalWorld(n, 5.0);
  for (const Status &s : runOnRanks("all_to_all", operands, comms, attrs, /*workspaceDelta=*/-1))
    EXPECT_KERNEL_ERROR(s, "all_to_all: needs at least ");
  for (const auto &comm : comms)
    EXPECT_EQ(comm->counters().totalBytesSent(), 0u);
  operands = makeOperands();
  expectAllOk(runOnRanks("all_to_all", operands, comms, attrs));
}

// shard_slice of tensors of several dtypes (integer indices and boolean masks among them, as
// resharding moves), then all_gather of the slices: every tensor back, byte for byte.
TEST(Collectives, ShardSliceAndAllGatherOfMixedDtypesRoundTrip) {
  const std::vector<DType> dtypes = {program::F16, program::I64, program::BF16, program::BOOL,
                                     program::F32};
  for (int n : kRankCounts) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    std::vector<RankOperands> slices(static_cast<size_t>(n)), gathers(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < kShapes.size(); ++i) {
        const int64_t numel = numelOf(kShapes[i]);
        slices[static_cast<size_t>(r)].inputs.push_back(
            tensorOf(dtypes[i], kShapes[i], randomFloats(numel, -2, 2, static_cast<unsigned>(i))));
        slices[static_cast<size_t>(r)].outputs.emplace_back(
            dtypes[i], std::vector<int64_t>{ceilDiv(numel, n)});
      }
    auto comms = makeLocalWorld(n);
    expectAllOk(runOnRanks("shard_slice", slices, comms, Attrs().i("num_ranks", n)));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < kShapes.size(); ++i) {
        HostTensor shard(dtypes[i], slices[static_cast<size_t>(r)].outputs[i].view().shape);
        const std::vector<uint8_t> bytes = bytesOf(slices[static_cast<size_t>(r)].outputs[i]);
        if (!bytes.empty())
          std::memcpy(shard.view().data, bytes.data(), bytes.size());
        gathers[static_cast<size_t>(r)].inputs.push_back(std::move(shard));
        gathers[static_cast<size_t>(r)].outputs.emplace_back(dtypes[i], kShapes[i]);
      }
    expectAllOk(runOnRanks("all_gather", gathers, comms, Attrs().i("num_ranks", n)));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < kShapes.size(); ++i)
        EXPECT_EQ(bytesOf(gathers[static_cast<size_t>(r)].outputs[i]), bytesOf(slices[0].inputs[i]))
            << "rank " << r << " tensor " << i;
  }
}

TEST(Collectives, DtypesThatDoNotFitAreCleanErrorsBeforeAnythingIsSent) {
  const Attrs two = Attrs().i("num_ranks", 2);
  HostTensor x = HostTensor::of<float>({4}, {1, 2, 3, 4}), y(program::F32, {4});
  HostTensor xs(program::F32, {2});
  HostTensor h = tensorOf(program::BF16, {4}, {1, 2, 3, 4}), hy(program::BF16, {4});
  HostTensor hs(program::BF16, {2});
  // A reduction sums one dtype.
  EXPECT_KERNEL_ERROR(runKernel("reduce_scatter", {x, h}, {xs, hs}, two),
                      "reduce_scatter: input 1 is bf16, but input 0 is f32 (one call sums one "
                      "dtype)");
  EXPECT_KERNEL_ERROR(runKernel("all_reduce", {x}, {hy}, two),
                      "all_reduce: output 0 is bf16, but input 0 is f32 (one call sums one dtype)");
  // A shard has its tensor's dtype, in a call that mixes dtypes too.
  EXPECT_KERNEL_ERROR(runKernel("all_gather", {xs, hs}, {y, y}, two),
                      "all_gather: output 1 is f32, but input 1 is bf16 (a shard has its tensor's "
                      "dtype)");
  // The dtype attribute must name the operands' dtype, one the collectives move.
  EXPECT_KERNEL_ERROR(
      runKernel("all_reduce", {h}, {hy}, Attrs().i("num_ranks", 2).i("dtype", program::F32)),
      "all_reduce: input 0 is bf16, but the dtype attribute is f32");
  EXPECT_KERNEL_ERROR(runKernel("all_gather", {xs, hs}, {y, hy},
                                Attrs().i("num_ranks", 2).i("dtype", program::F32)),
                      "all_gather: input 1 is bf16, but the dtype attribute is f32");
  EXPECT_KERNEL_ERROR(
      runKernel("all_reduce", {x}, {y}, Attrs().i("num_ranks", 2).i("dtype", program::I64)),
      "all_reduce: dtype i64 is not supported (the collectives sum f32, bf16 "
      "and f16)");
  EXPECT_KERNEL_ERROR(runKernel("all_reduce", {x}, {y}, Attrs().i("num_ranks", 2).i("dtype", 99)),
                      "all_reduce: unknown dtype 99");
  HostTensor ints(program::I64, {4});
  EXPECT_KERNEL_ERROR(runKernel("all_reduce", {ints}, {ints}, two),
                      "all_reduce: input 0 is i64 (the collectives sum f32, bf16 and f16)");
  EXPECT_KERNEL_ERROR(runKernel("all_gather", {xs}, {ints}, two),
                      "all_gather: output 0 is i64, but input 0 is f32 (a shard has its "
                      "tensor's dtype)");

  // With a communicator, on one rank of two: the refusal comes before anything is sent (were
  // anything sent, the rank would wait for its peer and time out instead).
  auto comms = makeLocalWorld(2, 0.5);
  KernelArgs args;
  args.inputs = {x, h};
  args.outputs = {xs, hs};
  args.attrs = &two.map();
  args.comm = comms[0].get();
  WorkspaceStorage workspace(1024);
  workspace.give(&args);
  EXPECT_KERNEL_ERROR(findCpuKernel("reduce_scatter")(args),
                      "reduce_scatter: input 1 is bf16, but input 0 is f32");
  EXPECT_EQ(comms[0]->counters().totalBytesSent(), 0u);
  EXPECT_EQ(comms[0]->counters().calls[1], 0u);
}

} // namespace
} // namespace shardc::runtime::testing
