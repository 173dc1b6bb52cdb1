#include "tools/shardrun/comm_options.h"

#include "runtime/comm/launcher_env.h"

namespace shardrun {

using namespace shardc::runtime;

std::optional<Failure> chooseCommBackend(const Options &options, CommBackend *out) {
  const LauncherInfo launcher = detectLauncher();
  const std::string name = options.comm.value_or(launcher.launched ? "mpi" : "local");
  if (name == "local") {
    if (launcher.launched)
      return usageError(std::string("--comm local runs every rank in one process, but ") +
                        launcher.launcher +
                        " started this one as one of several; use --comm mpi, or run shardrun "
                        "without the launcher");
    *out = CommBackend::Local;
    return std::nullopt;
  }
  if (name == "mpi") {
#ifndef SHARDC_HAVE_MPI
    return error(std::string(launcher.launched
                                 ? std::string(launcher.launcher) + " started this shardrun, but it"
                                 : "--comm mpi: this shardrun") +
                 " was built without MPI (install an MPI implementation such as Open MPI and "
                 "rebuild it), so it cannot run one rank per process");
#else
    *out = CommBackend::Mpi;
    return std::nullopt;
#endif
  }
#ifndef SHARDC_HAVE_NCCL
  return error("--comm nccl: this shardrun was built without NCCL (it needs the CUDA toolkit, "
               "NCCL and MPI when it is built)");
#else
  *out = CommBackend::Nccl;
  return std::nullopt;
#endif
}

CommOptions commOptionsOf(const Options &options) {
  CommOptions comm;
  if (options.commTimeout)
    comm.timeoutSeconds = *options.commTimeout;
  return comm;
}

std::string mpiWorldMismatch(const std::string &bundle, int bundleWorld, int mpiWorld) {
  return bundle + ": compiled for " + std::to_string(bundleWorld) + " rank" +
         (bundleWorld == 1 ? "" : "s") + ", but the MPI job has " + std::to_string(mpiWorld) +
         " process" + (mpiWorld == 1 ? "" : "es") + " (start it with mpirun -np " +
         std::to_string(bundleWorld) + ")";
}

double ioTimeoutOf(const Options &options) {
  return options.ioTimeout.value_or(kDefaultIoTimeoutSeconds);
}

} // namespace shardrun
