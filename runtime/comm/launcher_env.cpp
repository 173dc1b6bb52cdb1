#include "runtime/comm/launcher_env.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <initializer_list>

namespace shardc::runtime {

namespace {

// A non-negative int from environment variable `name`; false when unset or not a number (a
// malformed variable is treated as absent rather than trusted).
bool envInt(const char *name, int *out) {
  const char *text = std::getenv(name);
  if (text == nullptr || *text == '\0')
    return false;
  errno = 0;
  char *end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 0 || value > INT_MAX)
    return false;
  *out = static_cast<int>(value);
  return true;
}

bool envSet(const char *name) { return std::getenv(name) != nullptr; }

// The first of `names` that holds a number, or `fallback`.
int firstEnvInt(std::initializer_list<const char *> names, int fallback) {
  int value = 0;
  for (const char *name : names)
    if (envInt(name, &value))
      return value;
  return fallback;
}

} // namespace

LauncherInfo detectLauncher() {
  LauncherInfo info;
  int rank = 0, size = 0;
  const int localRank = firstEnvInt({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                     "PMIX_LOCAL_RANK", "SLURM_LOCALID", "PALS_LOCAL_RANKID"},
                                    0);
  if (envInt("OMPI_COMM_WORLD_SIZE", &size) && envInt("OMPI_COMM_WORLD_RANK", &rank)) {
    info.launcher = "Open MPI mpirun";
  } else if (envInt("PMI_SIZE", &size) && envInt("PMI_RANK", &rank)) {
    info.launcher = "PMI (mpiexec or srun)";
  } else if (envInt("PMIX_RANK", &rank)) {
    info.launcher = "PMIx";
    size = firstEnvInt({"PMIX_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}, 0);
  } else if ((envSet("SLURM_STEP_ID") || envSet("SLURM_STEPID")) && envInt("SLURM_PROCID", &rank) &&
             (envInt("SLURM_STEP_NUM_TASKS", &size) || envInt("SLURM_NTASKS", &size))) {
    info.launcher = "Slurm srun";
  } else {
    return info;
  }
  info.launched = true;
  info.rank = rank;
  info.size = size;
  info.localRank = localRank;
  return info;
}

bool launchedByMpi() { return detectLauncher().launched; }

} // namespace shardc::runtime
