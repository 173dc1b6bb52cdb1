"""shardrun never harms the host: destinations that are not regular files are refused, links
planted in a checkpoint directory are not followed, saved files are synced, and a run that would
not fit is refused before it allocates.

    test_host_safety.py --shardc PATH --shardrun PATH --work DIR

On the MLP classifier compiled for one rank (the data-parallel test's fixture):
  - `--export-onnx` and `--trace` naming a named pipe (as /dev/null or /dev/full would be) are
    refused in one line before any step runs, and the pipe is still a pipe;
  - `--save DIR` whose lock file is a symbolic link to another file is refused in one line, and
    that file keeps its content;
  - a placed bundle edited (and re-signed) so that two ranks train the same rows is refused in
    one line (with protoc, to edit it);
  - a bundle compiled for 65536 ranks run without mpirun is refused in one line naming the
    limit of ranks as threads and mpirun, before anything is loaded (it used to end in
    std::bad_alloc: the local communicators grow with the square of the ranks);
  - a run saving twice syncs every file it writes before renaming it into place and then the
    directory (counted with strace when it is installed: fsync of the params, optimizer and
    manifest files and of the directory, per save).
Prints PASS/FAIL per case and `N passed, M failed`.
"""

import os
import re
import shutil
import stat
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402
from test_data_parallel import Model  # noqa: E402

sys.path.insert(0, os.path.join(HERE, os.pardir, "models"))
import export_util  # noqa: E402

PROTO_DIR = os.path.join(HERE, os.pardir, os.pardir, "runtime", "program")


def one_line_refusal(res, *names):
    """None when the run failed with one `shardrun: error:` line naming all of `names`."""
    if res.timed_out or res.returncode != 1:
        return f"expected exit 1, got {res.describe()}"
    lines = res.stderr.strip().split("\n")
    if len(lines) != 1 or not lines[0].startswith("shardrun: error:"):
        return f"expected one error line, got {res.stderr!r}"
    missing = [n for n in names if n not in lines[0]]
    return f"{lines[0]!r} does not name {missing}" if missing else None


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, timeout=300))
    args.work = os.path.abspath(args.work)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    model = Model("mlp_classifier", "static", args)
    bundle = os.path.join(model.work, "single", "model.shard")
    base = [args.shardrun, bundle, "--data", model.data, "--steps", "2", "--lr", "0.01"]
    results = []

    pipe = os.path.join(args.work, "pipe")
    os.mkfifo(pipe)
    for flag in ("--export-onnx", "--trace"):
        res = e2e_util.run_tool(base + [flag, pipe], args.timeout)
        problem = one_line_refusal(res, flag, pipe, "named pipe")
        if problem is None and not stat.S_ISFIFO(os.lstat(pipe).st_mode):
            problem = f"{pipe} is no longer a named pipe"
        results.append((f"{flag}_onto_a_named_pipe", problem))

    victim = os.path.join(args.work, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    ckpt = os.path.join(args.work, "ckpt_linked_lock")
    os.makedirs(ckpt)
    os.symlink(victim, os.path.join(ckpt, ".shardc-lock"))
    res = e2e_util.run_tool(base + ["--save", ckpt], args.timeout)
    problem = one_line_refusal(res, ckpt, ".shardc-lock", "symbolic link")
    if problem is None and open(victim).read() != "precious\n":
        problem = f"{victim} was written through the link"
    results.append(("lock_file_is_a_symbolic_link", problem))

    wide = export_util.with_global_batch(model.onnx, 65536)
    wide_bundle = os.path.join(args.work, "ranks65536.shard")
    res = e2e_util.run_tool([args.shardc, wide, "--gpus", "65536", "--strategy", "dp=65536",
                             "-o", wide_bundle], args.timeout)
    if not res.ok:
        problem = f"compiling for 65536 ranks: {res.describe()}"
    else:
        res = e2e_util.run_tool([args.shardrun, wide_bundle, "--data", model.data, "--steps", "1"],
                                args.timeout)
        problem = one_line_refusal(res, wide_bundle, "65536 ranks", "at most 1024", "mpirun")
    results.append(("too_many_ranks_as_threads", problem))

    # A placed bundle edited (and re-signed) so that rank 1 trains rank 0's rows: some rows
    # would be trained twice and others never. Edited through protoc's text form.
    protoc = shutil.which("protoc")
    if protoc is None:
        print("SKIP overlapping_rank_placements: protoc is not installed")
    else:
        placed = os.path.join(args.work, "overlap.shard")
        res = e2e_util.run_tool([args.shardc, model.onnx, "--gpus", "4", "--strategy", "zero3",
                                 "-o", placed], args.timeout)
        problem = None if res.ok else f"compiling for 4 ranks: {res.describe()}"
        if problem is None:
            program = os.path.join(placed, "program.pb")
            proto = ["-I", PROTO_DIR, os.path.join(PROTO_DIR, "program.proto")]
            text = subprocess.run([protoc, "--decode=shardc.program.Bundle", *proto],
                                  stdin=open(program, "rb"), stdout=subprocess.PIPE,
                                  check=True).stdout
            # ranks[1] { batch_begin: 2 } (a shared program's batch_begin is 0, not written).
            altered, count = re.subn(rb"batch_begin: 2\b", b"batch_begin: 0", text, count=1)
            if count != 1:
                problem = "program.pb places no rank at row 2"
            else:
                encoded = subprocess.run([protoc, "--encode=shardc.program.Bundle", *proto],
                                         input=altered, stdout=subprocess.PIPE,
                                         check=True).stdout
                open(program, "wb").write(encoded)
                e2e_util.write_program_checksum(placed)
                res = e2e_util.run_tool([args.shardrun, placed, "--data", model.data, "--steps",
                                         "1"], args.timeout)
                problem = one_line_refusal(res, "program.pb", "rows [2, 4) to no rank",
                                           "of the global batch once each")
        results.append(("overlapping_rank_placements", problem))

    strace = shutil.which("strace")
    if strace is None:
        print("SKIP saves_are_synced: strace is not installed")
    else:
        ckpt = os.path.join(args.work, "ckpt_synced")
        log = os.path.join(args.work, "strace.log")
        res = e2e_util.run_tool([strace, "-f", "-qq", "-e", "trace=fsync,fdatasync,rename",
                                 "-o", log] + base + ["--save", ckpt, "--save-every", "1"],
                                args.timeout)
        problem = None if res.ok else res.describe()
        if problem is None:
            calls = [line for line in open(log) if re.search(r"\b(fsync|fdatasync|rename)\(",
                                                             line)]
            # Per save: params, optimizer state and manifest are each synced, renamed into the
            # checkpoint directory, and the directory synced after each rename.
            renames = [c for c in calls if "rename(" in c and ckpt in c]
            syncs = [c for c in calls if re.search(r"\b(fsync|fdatasync)\(", c)]
            if len(renames) != 6:
                problem = f"expected 6 renames into {ckpt} (2 saves of 3 files), got {len(renames)}"
            elif len(syncs) < 12:
                problem = f"{len(syncs)} fsync calls for 6 files renamed into place (expected 12+)"
        results.append(("saves_are_synced", problem))

    failed = 0
    for name, problem in results:
        print(f"FAIL {name}: {problem}" if problem else f"PASS {name}")
        failed += problem is not None
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
