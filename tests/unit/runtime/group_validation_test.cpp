// validateProgram on the mesh, the groups and the collectives' "group" and "dtype" attributes:
// every way a hand-edited or corrupt program can get them wrong is an error naming the item.
#include "runtime/loader/program_validation.h"
#include "tests/unit/runtime/group_program.h"

#include <functional>
#include <gtest/gtest.h>
#include <string>

namespace shardc::runtime {
namespace {

struct Case {
  const char *what;
  int rank; // whose program
  std::function<void(program::Program &)> edit;
  std::string message;
};

program::Op &opNamed(program::Program &p, const std::string &name) {
  for (program::Op &op : *p.mutable_ops())
    if (op.name() == name)
      return op;
  ADD_FAILURE() << "no op " << name;
  return *p.mutable_ops(0);
}

TEST(GroupValidation, TheExampleProgramsAreValid) {
  for (int r = 0; r < testing::kMeshRanks; ++r) {
    Status status = validateProgram(testing::groupProgram(r));
    EXPECT_TRUE(status.isOk()) << status.message();
  }
}

TEST(GroupValidation, BadMeshesGroupsAndAttributesAreErrors) {
  const Case cases[] = {
      // The mesh.
      {"coordinate without axes", 0,
       [](program::Program &p) {
         p.clear_mesh_axes();
         p.clear_groups();
         for (program::Op &op : *p.mutable_ops())
           op.mutable_attrs()->erase("group");
       },
       "mesh_coordinate has 2 entries, but the program has no mesh_axes"},
      {"groups without a mesh", 0,
       [](program::Program &p) {
         p.clear_mesh_axes();
         p.clear_mesh_coordinate();
       },
       "the program has 2 groups but no mesh_axes (a group is a slice of the mesh)"},
      {"unnamed axis", 0, [](program::Program &p) { p.mutable_mesh_axes(1)->set_name(""); },
       "mesh axis 1 has an empty name"},
      {"duplicate axis name", 0,
       [](program::Program &p) { p.mutable_mesh_axes(1)->set_name("dp"); },
       "mesh axis 1 ('dp'): another axis has that name"},
      {"empty axis", 0, [](program::Program &p) { p.mutable_mesh_axes(0)->set_size(0); },
       "mesh axis 0 ('dp'): size must be at least 1, got 0"},
      {"mesh of another world", 0, [](program::Program &p) { p.mutable_mesh_axes(1)->set_size(3); },
       "the mesh (2 x 3) does not have world_size = 4 ranks"},
      {"huge mesh", 0,
       [](program::Program &p) {
         p.mutable_mesh_axes(0)->set_size(1 << 30);
         p.mutable_mesh_axes(1)->set_size(1 << 30);
       },
       "the mesh (1073741824 x 1073741824) does not have world_size = 4 ranks"},
      {"short coordinate", 0,
       [](program::Program &p) { p.mutable_mesh_coordinate()->RemoveLast(); },
       "mesh_coordinate has 1 entries for 2 mesh axes"},
      {"coordinate out of range", 0, [](program::Program &p) { p.set_mesh_coordinate(1, 2); },
       "mesh_coordinate [0, 2]: coordinate 2 on axis 'tp' of size 2 is out of range"},
      {"coordinate of another rank", 1, [](program::Program &p) { p.set_mesh_coordinate(0, 1); },
       "mesh_coordinate [1, 1] is rank 3 (row-major), but the program is rank 1"},
      // The groups.
      {"unnamed group", 0, [](program::Program &p) { p.mutable_groups(1)->set_name(""); },
       "group 1 has an empty name"},
      {"duplicate group name", 0, [](program::Program &p) { p.mutable_groups(1)->set_name("tp"); },
       "group 1 ('tp'): another group has that name"},
      {"group without axes", 0, [](program::Program &p) { p.mutable_groups(0)->clear_mesh_axes(); },
       "group 0 ('tp'): no mesh_axes"},
      {"group along a missing axis", 0,
       [](program::Program &p) { p.mutable_groups(0)->set_mesh_axes(0, 2); },
       "group 0 ('tp'): mesh axis 2 does not exist (the mesh has 2 axes)"},
      {"axes out of order", 0,
       [](program::Program &p) {
         p.mutable_groups(0)->set_mesh_axes(0, 1);
         p.mutable_groups(0)->add_mesh_axes(0);
       },
       "group 0 ('tp'): mesh_axes [1, 0] are not in increasing order"},
      {"two groups along the same axes", 0,
       [](program::Program &p) {
         *p.add_groups() = p.groups(0);
         p.mutable_groups(2)->set_name("t2");
       },
       "group 2 ('t2'): another group runs along the same mesh axes [1]"},
      {"rank out of range", 0, [](program::Program &p) { p.mutable_groups(0)->set_ranks(1, 4); },
       "group 0 ('tp'): rank 4 does not exist (world_size 4)"},
      {"rank twice", 0, [](program::Program &p) { p.mutable_groups(0)->set_ranks(1, 0); },
       "group 0 ('tp'): rank 0 is listed twice"},
      {"group without this rank", 2,
       [](program::Program &p) { p.mutable_groups(1)->set_ranks(1, 3); },
       "group 1 ('dp'): ranks [0, 3] do not include this rank (2)"},
      {"ranks out of group order", 1,
       [](program::Program &p) {
         p.mutable_groups(1)->set_ranks(0, 3);
         p.mutable_groups(1)->set_ranks(1, 1);
       },
       "group 1 ('dp'): ranks [3, 1], but the slice of the mesh along 'dp' through mesh_coordinate "
       "[0, 1] is [1, 3]"},
      {"ranks of another slice", 0,
       [](program::Program &p) {
         p.mutable_groups(0)->clear_ranks();
         for (int r : {0, 1, 2})
           p.mutable_groups(0)->add_ranks(r);
       },
       "group 0 ('tp'): ranks [0, 1, 2], but the slice of the mesh along 'tp' through "
       "mesh_coordinate [0, 0] is [0, 1]"},
      // Axis names come from the file: a newline in one stays escaped on the error's one line.
      {"ranks of another slice, axis name with a newline", 0,
       [](program::Program &p) {
         p.mutable_mesh_axes(1)->set_name("t\np");
         p.mutable_groups(0)->clear_ranks();
         for (int r : {0, 1, 2})
           p.mutable_groups(0)->add_ranks(r);
       },
       "group 0 ('tp'): ranks [0, 1, 2], but the slice of the mesh along 't\\np' through "
       "mesh_coordinate [0, 0] is [0, 1]"},
      // The collectives' attributes.
      {"group index out of range", 0,
       [](program::Program &p) { (*opNamed(p, "ar_dp").mutable_attrs())["group"].set_i(2); },
       "op 1 ('ar_dp'): group 2 does not exist (the program has 2 groups)"},
      {"negative group index", 0,
       [](program::Program &p) { (*opNamed(p, "ar_dp").mutable_attrs())["group"].set_i(-1); },
       "op 1 ('ar_dp'): group -1 does not exist (the program has 2 groups)"},
      {"group not an int", 0,
       [](program::Program &p) { (*opNamed(p, "rs_tp").mutable_attrs())["group"].set_s("tp"); },
       "op 2 ('rs_tp'): attribute 'group' is not an int"},
      {"num_ranks of another group", 0,
       [](program::Program &p) { (*opNamed(p, "ag_dp").mutable_attrs())["num_ranks"].set_i(4); },
       "op 3 ('ag_dp'): num_ranks is 4, but group 1 ('dp') has 2 ranks"},
      {"shard_slice of another group size", 0,
       [](program::Program &p) { (*opNamed(p, "slice_tp").mutable_attrs())["num_ranks"].set_i(1); },
       "op 5 ('slice_tp'): num_ranks is 1, but group 0 ('tp') has 2 ranks"},
      {"unknown dtype", 0,
       [](program::Program &p) { (*opNamed(p, "ar_world").mutable_attrs())["dtype"].set_i(99); },
       "op 4 ('ar_world'): unknown dtype 99"},
      {"unspecified dtype", 0,
       [](program::Program &p) {
         (*opNamed(p, "ar_world").mutable_attrs())["dtype"].set_i(program::DTYPE_UNSPECIFIED);
       },
       "op 4 ('ar_world'): unknown dtype 0"},
      {"dtype not an int", 0,
       [](program::Program &p) { (*opNamed(p, "ar_world").mutable_attrs())["dtype"].set_f(1.0f); },
       "op 4 ('ar_world'): attribute 'dtype' is not an int"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    program::Program p = testing::groupProgram(c.rank);
    c.edit(p);
    EXPECT_EQ(validateProgram(p).message(), c.message);
  }
}

// A dtype the collectives do not move is still a valid program: the kernel rejects it when it
// runs (so that adding one changes no format). "group" on other kernels is theirs to read.
TEST(GroupValidation, KernelsJudgeTheirOwnDtypes) {
  program::Program p = testing::groupProgram(0);
  (*p.mutable_ops(0)->mutable_attrs())["dtype"].set_i(program::I64);
  Status status = validateProgram(p);
  EXPECT_TRUE(status.isOk()) << status.message();
}

// Programs without a mesh (every bundle of an older shardc) need none of it.
TEST(GroupValidation, ProgramsWithoutAMeshAreUnaffected) {
  program::Program p = testing::groupProgram(0);
  p.clear_mesh_axes();
  p.clear_mesh_coordinate();
  p.clear_groups();
  for (program::Op &op : *p.mutable_ops()) {
    op.mutable_attrs()->erase("group");
    (*op.mutable_attrs())["num_ranks"].set_i(4);
  }
  Status status = validateProgram(p);
  EXPECT_TRUE(status.isOk()) << status.message();
}

} // namespace
} // namespace shardc::runtime
