// Whether this process was started by an MPI launcher (mpirun, mpiexec, srun), read from the
// environment the launchers set. Compiled in every build, MPI or not, so that shardrun can tell
// "started under mpirun, but built without MPI" apart from a plain single-process run.
#pragma once

namespace shardc::runtime {

struct LauncherInfo {
  bool launched = false;     // an MPI launcher started this process
  const char *launcher = ""; // which environment said so, for messages ("Open MPI mpirun", ...)
  int rank = 0;              // this process's rank in the job
  int size = 1;              // processes in the job; 0 when the environment does not say
  int localRank = 0;         // rank among the job's processes on this node (picks the GPU)
};

// Reads, in this order: Open MPI's OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK}; PMI_{RANK,SIZE}
// (MPICH/Intel MPI hydra, srun --mpi=pmi2); PMIX_RANK (PMIx launchers); srun's SLURM_PROCID
// with SLURM_STEP_NUM_TASKS or SLURM_NTASKS, inside a job step only (SLURM_STEP_ID set): an
// sbatch script itself also has SLURM_PROCID and SLURM_NTASKS, but is not an MPI launch.
LauncherInfo detectLauncher();

// detectLauncher().launched.
bool launchedByMpi();

} // namespace shardc::runtime
