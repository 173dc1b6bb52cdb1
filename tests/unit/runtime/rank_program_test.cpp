// Placed bundles (program.proto, Bundle.ranks): each rank's program built from a shared one
// equals the program a bundle of one program per rank holds for it, a tensor-parallel block's
// initial value is read from its own copy, and a damaged placed bundle is one error line.
#include "runtime/loader/bundle.h"
#include "runtime/loader/rank_program.h"
#include "tests/unit/runtime/data_parallel_program.h"
#include "tests/unit/runtime/test_util.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <string>

namespace shardc::runtime {
namespace {

using google::protobuf::util::MessageDifferencer;
using testing::kLinearMeshBatch;

// The placed form of linearSgdMeshBundle(): its rank-0 program without the rank's own parts,
// and each rank's rows. w (f32[5]) is a flat shard over the world; its init spans all of w.
program::Bundle placedMeshBundle() {
  program::Bundle perRank = testing::linearSgdMeshBundle();
  program::Bundle placed = perRank;
  placed.set_format_version(kBundleFormatVersion);
  placed.clear_programs();
  program::Program *shared = placed.add_programs();
  *shared = perRank.programs(0);
  shared->set_rank(0);
  shared->set_batch_begin(0);
  shared->clear_mesh_coordinate();
  for (program::CommGroup &g : *shared->mutable_groups())
    g.clear_ranks();
  for (program::StateInit &init : *shared->mutable_state_init()) {
    init.set_offset(64);
    init.set_size_bytes(testing::kLinearFeatures * 4);
  }
  for (int r = 0; r < 4; ++r) {
    program::RankPlacement *placement = placed.add_ranks();
    placement->set_program(0);
    placement->set_batch_begin(perRank.programs(r).batch_begin());
  }
  return placed;
}

TEST(RankProgram, PlacedRanksEqualThePerRankPrograms) {
  const program::Bundle perRank = testing::linearSgdMeshBundle();
  const program::Bundle placed = placedMeshBundle();
  ASSERT_TRUE(validateBundlePrograms(placed, "B/program.pb").isOk());
  EXPECT_TRUE(isPlacedBundle(placed));
  EXPECT_FALSE(isPlacedBundle(perRank));
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(programIndexOfRank(placed, r), 0);
    EXPECT_EQ(programIndexOfRank(perRank, r), r);
    program::Program built, stored;
    Status status = programOfRank(placed, r, &built);
    ASSERT_TRUE(status.isOk()) << status.message();
    ASSERT_TRUE(programOfRank(perRank, r, &stored).isOk());
    std::string differences;
    MessageDifferencer diff;
    diff.ReportDifferencesToString(&differences);
    EXPECT_TRUE(diff.Compare(stored, built)) << "rank " << r << ":\n" << differences;
  }
  // Rank 3's shard of w starts past its end: nothing to read, all padding.
  program::Program rank3;
  ASSERT_TRUE(programOfRank(placed, 3, &rank3).isOk());
  EXPECT_EQ(rank3.state_init(0).size_bytes(), 0u);
}

// w f32[4 x 2] cut into 2 blocks along dim 1 over tp, each block flat-sharded over dp: rank
// (dp, tp) reads elements [2 dp, 2 dp + 2) of block tp's copy, and dropout offsets follow the
// rows.
TEST(RankProgram, BlocksAndShardsComeFromTheRanksCoordinate) {
  program::Bundle bundle;
  bundle.set_format_version(kBundleFormatVersion);
  bundle.set_mode("train");
  bundle.set_world_size(4);
  program::Program *p = bundle.add_programs();
  p->set_world_size(4);
  p->set_batch_rows(3);
  p->set_global_batch_rows(6);
  for (const char *name : {"dp", "tp"}) {
    program::MeshAxis *axis = p->add_mesh_axes();
    axis->set_name(name);
    axis->set_size(2);
  }
  for (int a = 0; a < 2; ++a) {
    program::CommGroup *g = p->add_groups();
    g->set_name(p->mesh_axes(a).name());
    g->add_mesh_axes(a);
  }
  const int w = testing::addBuffer(p, "w", program::F32, {2}, program::ACTIVATION,
                                   program::ARENA, 0);
  p->mutable_buffers(w)->set_role(program::ROLE_PARAMETER);
  const int x = testing::addBuffer(p, "x", program::F32, {3, 2}, program::ACTIVATION,
                                   program::ARENA, 64);
  const int seed = testing::addBuffer(p, "seed", program::I64, {}, program::ACTIVATION,
                                      program::ARENA, 128);
  const int y = testing::addBuffer(p, "y", program::F32, {3, 2}, program::ACTIVATION,
                                   program::ARENA, 192);
  const int mask = testing::addBuffer(p, "mask", program::BOOL, {3, 2}, program::ACTIVATION,
                                      program::ARENA, 256);
  p->set_arena_bytes(320);
  program::Binding *binding = p->add_inputs();
  binding->set_name("w");
  binding->set_buffer(w);
  program::Sharding *s = binding->mutable_sharding();
  s->add_global_shape(4);
  s->add_global_shape(2);
  s->set_block_dim(1);
  s->set_num_blocks(2);
  s->set_block_axis(1);
  s->set_num_shards(2);
  s->set_shard_numel(2);
  s->set_shard_axis(0);
  for (auto [name, buffer] : {std::pair{"x", x}, {"seed", seed}}) {
    program::Binding *input = p->add_inputs();
    input->set_name(name);
    input->set_buffer(buffer);
  }
  testing::addOp(p, "dropout", "drop", {x, seed, seed}, {y, mask});
  auto &attrs = *p->mutable_ops(0)->mutable_attrs();
  attrs["ratio"].set_f(0.5f);
  attrs["stream"].set_i(0);
  attrs["global_shape"].mutable_ints()->add_values(6);
  attrs["global_shape"].mutable_ints()->add_values(2);
  attrs["split_dim"].set_i(0);
  attrs["split_unit"].set_i(1);
  attrs["split_offset"].set_i(0);
  // Its dim 1 is also split on tp (sequence parallelism): rank (dp, tp)'s column is tp.
  attrs["block_dim"].set_i(1);
  attrs["block_axis"].set_i(1);
  attrs["block_size"].set_i(1);
  attrs["block_offset"].set_i(0);
  // A vocab-parallel lookup: rows [3 tp, 3 tp + 3) of a 6-row table are rank (dp, tp)'s.
  testing::addOp(p, "gather", "lookup", {x, seed}, {y});
  p->set_workspace_bytes(8); // the lookup's row number
  auto &lookup = *p->mutable_ops(1)->mutable_attrs();
  lookup["axis"].set_i(0);
  lookup["index_block_axis"].set_i(1);
  lookup["index_block_size"].set_i(3);
  lookup["index_size"].set_i(6);
  lookup["index_offset"].set_i(0);
  program::StateInit *init = p->add_state_init();
  init->set_name("w");
  init->set_offset(1000);
  init->set_size_bytes(32);
  init->add_block_offsets(2000);
  init->add_block_offsets(3000);
  for (int r = 0; r < 4; ++r) {
    program::RankPlacement *placement = bundle.add_ranks();
    placement->set_batch_begin(3 * (r / 2));
  }
  Status valid = validateBundlePrograms(bundle, "B/program.pb");
  ASSERT_TRUE(valid.isOk()) << valid.message();
  for (int r = 0; r < 4; ++r) {
    const int dp = r / 2, tp = r % 2;
    program::Program rank;
    Status status = programOfRank(bundle, r, &rank);
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(rank.rank(), r);
    EXPECT_EQ(rank.mesh_coordinate(0), dp);
    EXPECT_EQ(rank.mesh_coordinate(1), tp);
    EXPECT_EQ(rank.groups(0).ranks(0), tp);          // dp group: {tp, 2 + tp}
    EXPECT_EQ(rank.groups(0).ranks(1), 2 + tp);
    EXPECT_EQ(rank.groups(1).ranks(0), 2 * dp);      // tp group: {2 dp, 2 dp + 1}
    EXPECT_EQ(rank.groups(1).ranks(1), 2 * dp + 1);
    EXPECT_EQ(rank.state_init(0).offset(), (tp == 0 ? 2000u : 3000u) + 8u * dp);
    EXPECT_EQ(rank.state_init(0).size_bytes(), 8u);
    EXPECT_EQ(rank.state_init(0).block_offsets_size(), 0);
    EXPECT_EQ(rank.batch_begin(), 3 * dp);
    EXPECT_EQ(rank.ops(0).attrs().at("split_offset").i(), 3 * dp);
    EXPECT_EQ(rank.ops(0).attrs().at("block_offset").i(), tp);
    EXPECT_EQ(rank.ops(1).attrs().at("index_offset").i(), 3 * tp);
  }

  auto errorAfter = [&](const std::function<void(program::Bundle &)> &edit) {
    program::Bundle damaged = bundle;
    edit(damaged);
    Status status = validateBundlePrograms(damaged, "B/program.pb");
    EXPECT_FALSE(status.isOk());
    return status.message();
  };
  EXPECT_EQ(errorAfter([](auto &b) { b.mutable_ranks(2)->set_program(1); }),
            "B/program.pb: the placement of rank 2 names program 1 (the bundle has 1)");
  EXPECT_EQ(errorAfter([](auto &b) { b.mutable_ranks()->RemoveLast(); }),
            "B/program.pb: world_size is 4 but the bundle places 3 ranks");
  EXPECT_EQ(errorAfter([](auto &b) {
              b.mutable_programs(0)->mutable_state_init(0)->mutable_block_offsets()->RemoveLast();
            }),
            "B/program.pb: rank 0: state_init 'w': 1 block_offsets for 2 blocks");
  EXPECT_EQ(errorAfter([](auto &b) { b.mutable_programs(0)->mutable_groups(0)->add_ranks(0); }),
            "B/program.pb: rank 0: group 'dp': a shared program's group lists ranks (the "
            "placement gives them)");
  EXPECT_EQ(errorAfter([](auto &b) { b.mutable_ranks(0)->set_batch_begin(4); }),
            "B/program.pb: rank 0: batch rows [4, +3) do not lie in the 6 rows of the global "
            "batch");
  EXPECT_EQ(errorAfter([](auto &b) {
              (*b.mutable_programs(0)->mutable_ops(1)->mutable_attrs())["index_block_axis"]
                  .set_i(2);
            }),
            "B/program.pb: rank 0: op 'lookup': index_block_axis / index_block_size name no "
            "block of the mesh");
  EXPECT_EQ(errorAfter([](auto &b) {
              (*b.mutable_programs(0)->mutable_ops(0)->mutable_attrs())["block_size"].set_i(-1);
            }),
            "B/program.pb: rank 0: op 'drop': block_axis / block_size name no block of the mesh");
  // The placements must partition the batch: the distinct row ranges tile it, each held by
  // as many ranks as the others.
  EXPECT_EQ(errorAfter([](auto &b) { b.mutable_ranks(2)->set_batch_begin(0); }),
            "B/program.pb: rows [3, 6) are held by 1 ranks, rows [0, 3) by 3: the ranks' rows "
            "must cover the 6 rows of the global batch once each");
  EXPECT_EQ(errorAfter([](auto &b) {
              b.mutable_ranks(2)->set_batch_begin(1);
              b.mutable_ranks(3)->set_batch_begin(1);
            }),
            "B/program.pb: rank 2's rows [1, 4) overlap rank 0's rows [0, 3): the ranks' rows "
            "must cover the 6 rows of the global batch once each");
  EXPECT_EQ(errorAfter([](auto &b) {
              b.mutable_ranks(0)->set_batch_begin(1);
              b.mutable_ranks(1)->set_batch_begin(1);
            }),
            "B/program.pb: rank 0's rows [1, 4) leave rows [0, 1) to no rank: the ranks' rows "
            "must cover the 6 rows of the global batch once each");
  EXPECT_EQ(errorAfter([](auto &b) { *b.add_programs() = b.programs(0); }),
            "B/program.pb: program 1 is not run by any rank");
  EXPECT_EQ(errorAfter([](auto &b) { b.mutable_programs(0)->mutable_mesh_axes(0)->set_size(3); }),
            "B/program.pb: rank 0: the mesh does not have world_size = 4 ranks");
}

// Random byte damage to a placed bundle: parsing, validation and building every rank's program
// either fail with one line or give programs that validate.
TEST(RankProgram, MutatedPlacedBundlesNeverCrash) {
  const std::string valid = placedMeshBundle().SerializeAsString();
  int accepted = testing::forEachMutatedBundle(valid, 77, 20000, [](const program::Bundle &b) {
    for (int r = 0; r < b.world_size(); ++r) {
      program::Program p;
      Status status = programOfRank(b, r, &p);
      EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
    }
  });
  EXPECT_GT(accepted, 0);
}

} // namespace
} // namespace shardc::runtime
