// Saving on preemption: a cluster scheduler stops a job with SIGTERM and kills it a grace
// period later (Slurm's KillWait); Ctrl-C sends SIGINT; `srun --signal`/`sbatch --signal` can
// send SIGUSR1 ahead of the time limit. With --save (and --save-on-signal on, the default) the
// first of these only asks the training loop to stop: every rank finishes its step, the ranks
// agree, the checkpoint is written and shardrun exits with 128 + the signal's number. A second
// signal ends the process at once, as if no handler were installed.
#pragma once

namespace shardrun {

// Installs the handlers for SIGTERM, SIGINT and SIGUSR1 (once per process).
void installStopSignalHandlers();

// The first stop signal received (0: none yet). Async-signal-safe to set, cheap to read.
int requestedStopSignal();

// "SIGTERM", "SIGINT", "SIGUSR1" (else "signal N").
const char *stopSignalName(int signal);

} // namespace shardrun
