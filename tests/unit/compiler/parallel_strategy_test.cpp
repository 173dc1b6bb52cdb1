// The strategy grammar (shardc/Parallel/ParallelStrategy.h): every accepted form, the
// canonical spelling the bundle records, and every error message.
#include "shardc/Parallel/ParallelStrategy.h"

#include <gtest/gtest.h>

namespace shardc {
namespace {

ParallelStrategy parsed(const std::string &text, int gpus) {
  ParallelStrategy s;
  std::optional<std::string> error = parseStrategy(text, gpus, s);
  EXPECT_FALSE(error) << text << ": " << error.value_or("");
  return s;
}

std::string errorOf(const std::string &text, int gpus) {
  ParallelStrategy s;
  return parseStrategy(text, gpus, s).value_or("(accepted)");
}

TEST(ParallelStrategy, Shorthands) {
  ParallelStrategy a = parsed("auto", 4);
  EXPECT_TRUE(a.automatic);
  EXPECT_EQ(a.dp, 4);
  EXPECT_EQ(a.canonical(), "auto");
  EXPECT_EQ(parsed("dp", 4).canonical(), "dp=4,zero=0");
  EXPECT_EQ(parsed("zero1", 4).canonical(), "dp=4,zero=1");
  EXPECT_EQ(parsed("zero2", 4).canonical(), "dp=4,zero=2");
  EXPECT_EQ(parsed("zero3", 4).canonical(), "dp=4,zero=3");
  EXPECT_EQ(parsed("fsdp", 4).canonical(), "dp=4,zero=3");
  ParallelStrategy tp = parsed("tp", 4);
  EXPECT_EQ(tp.dp, 1);
  EXPECT_EQ(tp.tp, 4);
  EXPECT_FALSE(tp.sequenceParallel);
  EXPECT_EQ(tp.canonical(), "dp=1,tp=4,zero=0");
  ParallelStrategy sp = parsed("sp", 2);
  EXPECT_TRUE(sp.sequenceParallel);
  EXPECT_EQ(sp.canonical(), "dp=1,tp=2,sp=1,zero=0");
  EXPECT_EQ(parsed("dp", 1).canonical(), "dp=1,zero=0");
}

TEST(ParallelStrategy, KeyValueForms) {
  ParallelStrategy s = parsed("dp=2,tp=4,zero=1,sp=1", 8);
  EXPECT_EQ(s.dp, 2);
  EXPECT_EQ(s.tp, 4);
  EXPECT_EQ(s.pp, 1);
  EXPECT_EQ(s.zero, 1);
  EXPECT_TRUE(s.sequenceParallel);
  EXPECT_FALSE(s.automatic);
  EXPECT_EQ(s.canonical(), "dp=2,tp=4,sp=1,zero=1");
  // dp defaults to the devices tp (and pp) leave; sp=0 and pp=1 are spelled out or not.
  EXPECT_EQ(parsed("tp=2", 8).canonical(), "dp=4,tp=2,zero=0");
  EXPECT_EQ(parsed("zero=3", 4).canonical(), "dp=4,zero=3");
  EXPECT_EQ(parsed("tp=2,sp=0,pp=1", 2).canonical(), "dp=1,tp=2,zero=0");
  EXPECT_EQ(parsed("dp=1", 1).canonical(), "dp=1,zero=0");
  // Pipeline stages: dp takes what tp x pp leave.
  ParallelStrategy pp = parsed("tp=2,pp=2,zero=1", 8);
  EXPECT_EQ(pp.dp, 2);
  EXPECT_EQ(pp.pp, 2);
  EXPECT_EQ(pp.canonical(), "dp=2,tp=2,pp=2,zero=1");
}

TEST(ParallelStrategy, CanonicalParsesBack) {
  // Bundle.strategy is canonical(); the plan report parses it back for the bundle's world.
  const std::pair<const char *, int> recorded[] = {{"dp=4,zero=0", 4},
                                                   {"dp=2,tp=2,zero=1", 4},
                                                   {"dp=2,tp=2,sp=1,zero=0", 4},
                                                   {"dp=1,tp=4,sp=1,zero=0", 4},
                                                   {"dp=8,zero=3", 8}};
  for (const auto &[text, world] : recorded)
    EXPECT_EQ(parsed(text, world).canonical(), text);
}

TEST(ParallelStrategy, ErrorMessages) {
  EXPECT_EQ(errorOf("ddp", 2),
            "--strategy 'ddp': expected auto, dp, zero1, zero2, zero3, fsdp, tp, sp or "
            "KEY=VALUE,... with keys dp, tp, sp, pp, zero");
  EXPECT_EQ(errorOf("", 2),
            "--strategy '': expected auto, dp, zero1, zero2, zero3, fsdp, tp, sp or "
            "KEY=VALUE,... with keys dp, tp, sp, pp, zero");
  EXPECT_EQ(errorOf("dp=2,zero", 2), "--strategy 'dp=2,zero': 'zero' is not KEY=VALUE");
  EXPECT_EQ(errorOf("=2", 2), "--strategy '=2': '=2' is not KEY=VALUE");
  EXPECT_EQ(errorOf("dp=2,,tp=1", 2), "--strategy 'dp=2,,tp=1': '' is not KEY=VALUE");
  EXPECT_EQ(errorOf("dp=2,ep=2", 4),
            "--strategy 'dp=2,ep=2': unknown key 'ep' (keys: dp, tp, sp, pp, zero)");
  EXPECT_EQ(errorOf("dp=2,dp=2", 2), "--strategy 'dp=2,dp=2': 'dp' given twice");
  EXPECT_EQ(errorOf("tp=2,sp=2", 2),
            "--strategy 'tp=2,sp=2': sp=2: expected 1 (sequence parallelism on the tp axis) "
            "or 0");
  EXPECT_EQ(errorOf("dp=0", 2), "--strategy 'dp=0': dp=0: expected a positive number of devices");
  EXPECT_EQ(errorOf("tp=x", 2), "--strategy 'tp=x': tp=x: expected a positive number of devices");
  EXPECT_EQ(errorOf("dp=1234567", 2),
            "--strategy 'dp=1234567': dp=1234567: expected a positive number of devices");
  EXPECT_EQ(errorOf("zero=-1", 2), "--strategy 'zero=-1': zero=-1: expected a stage 0-3");
  EXPECT_EQ(errorOf("zero=4", 2), "--strategy 'zero=4': zero=4: ZeRO stages are 0, 1, 2 and 3");
  EXPECT_EQ(errorOf("dp=1,pp=2", 2), "(accepted)");
  EXPECT_EQ(errorOf("dp=2,pp=2", 2),
            "--strategy 'dp=2,pp=2': dp=2 x tp=1 x pp=2 = 4 devices, but --gpus is 2");
  EXPECT_EQ(errorOf("pp=0", 2), "--strategy 'pp=0': pp=0: expected a positive number of devices");
  EXPECT_EQ(errorOf("dp=2,tp=2", 8),
            "--strategy 'dp=2,tp=2': dp=2 x tp=2 x pp=1 = 4 devices, but --gpus is 8");
  EXPECT_EQ(errorOf("tp=3", 4),
            "--strategy 'tp=3': dp=1 x tp=3 x pp=1 = 3 devices, but --gpus is 4");
  EXPECT_EQ(errorOf("dp=2,sp=1", 2),
            "--strategy 'dp=2,sp=1': sp=1 splits the sequence on the tp axis and needs tp of at "
            "least 2");
}

} // namespace
} // namespace shardc
