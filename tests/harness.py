"""What the Python test drivers share: Open MPI's settings for a test, running a command
(stdin from /dev/null, a timeout, one error line naming the command when its exit code is
not the expected one), perfsift's commands, a fresh work directory.

A driver imports it from its own location (ctest runs the drivers with /usr/bin/python3,
Debian's, which has h5py):

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/
    import harness
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

# Open MPI refuses to run as root and to start more ranks than cores unless told; CI runs
# as root on two cores. (MPICH's launcher ignores these and oversubscribes unasked.) The
# shell drivers take the same from jobs/deps.sh (perfsift_mpi_env, perfsift_test_mpi_env).
OPEN_MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
}
# Ranks that wait yield the core, so that the sleeping and computing ranks of an
# oversubscribed test keep their pace, and a replay sees computation as computation rather
# than as a busy-polling partner's time slice.
MPI_ENV = {**OPEN_MPI_ENV, "OMPI_MCA_mpi_yield_when_idle": "1"}

# Where run() sends a stream besides a file name or None (this process's own).
CAPTURE = subprocess.PIPE
DEVNULL = subprocess.DEVNULL
STDOUT = subprocess.STDOUT


class CommandFailed(AssertionError):
    """A command ended with another exit code than the one expected."""


def environment(extra=None, mpi=None):
    """This process's environment with the MPI settings (MPI_ENV unless `mpi` says otherwise)
    and the variables of `extra` on top."""
    return {**os.environ, **(MPI_ENV if mpi is None else mpi), **(extra or {})}


def _shown(cmd):
    return " ".join(c.decode(errors="replace") if isinstance(c, bytes) else c for c in cmd)


def _written(target):
    """What a command wrote to the file `target`, for its failure message."""
    if not isinstance(target, (str, Path)) or not os.path.exists(target) or not os.path.getsize(target):
        return ""
    return f"\n--- {target}:\n{Path(target).read_text(errors='replace')}"


def run(cmd, *, out=None, err=None, log=None, env=None, mpi=None, expect=0, what=None, timeout=None, cwd=None,
        echo=False):
    """Runs cmd (a list; items other than bytes are converted with str()) with stdin from
    /dev/null in environment(env, mpi).

    out, err: where stdout and stderr go: a file name (written), CAPTURE (text in the
    result, undecodable bytes replaced), DEVNULL, STDOUT (err only: with stdout) or None
    (this process's own: the test's log).
    log: a file name instead of out and err: `$ cmd`, then both streams, appended.
    echo: `$ cmd` on this process's stdout first.
    expect: the exit code the command must end with, else CommandFailed: one line naming
    `what`, the command and its code (and the log), then what it captured or wrote to out
    and err; None accepts any code.
    timeout: seconds, after which subprocess.TimeoutExpired is raised.
    Returns the subprocess.CompletedProcess."""
    cmd = [c if isinstance(c, bytes) else str(c) for c in cmd]
    if echo:
        print("$", _shown(cmd), flush=True)
    opened = []

    def stream(target, mode="wb"):
        if not isinstance(target, (str, Path)):
            return target
        handle = open(target, mode)
        opened.append(handle)
        return handle

    try:
        if log is not None:
            stdout, stderr = stream(log, "ab"), STDOUT
            stdout.write(f"$ {_shown(cmd)}\n".encode())
            stdout.flush()
        else:
            stdout, stderr = stream(out), stream(err)
        done = subprocess.run(cmd, stdin=DEVNULL, stdout=stdout, stderr=stderr, env=environment(env, mpi), cwd=cwd,
                              timeout=timeout, errors="replace")
    finally:
        for handle in opened:
            handle.close()
    if expect is not None and done.returncode != expect:
        expected = "" if expect == 0 else f", expected {expect}"
        shown = "".join(f"\n--- {name}:\n{text}" for name, text in (("stdout", done.stdout), ("stderr", done.stderr))
                        if text)
        shown += "".join(_written(target) for target in (out, err))
        logged = f", see {log}" if log is not None else ""
        raise CommandFailed(f"{what or 'command failed'}: `{_shown(cmd)}` exited with code {done.returncode}"
                            f"{expected}{logged}{shown}")
    return done


def exit_code(cmd, **kw):
    """run() accepting any exit code; returns the code."""
    return run(cmd, expect=None, **kw).returncode


def captured(cmd, *, merge=False, expect=None, **kw):
    """run() with stdout and stderr kept as text in the result (merge=True: stderr within
    stdout), for the caller to inspect; any exit code unless `expect` names one."""
    return run(cmd, out=CAPTURE, err=STDOUT if merge else CAPTURE, expect=expect, **kw)


class Perfsift:
    """perfsift's commands, for one binary; each takes run()'s keywords."""

    def __init__(self, binary):
        self.binary = str(binary)

    def __call__(self, *args, **kw):
        """perfsift ARGS, one process."""
        return run([self.binary, *args], **kw)

    def mpirun(self, ranks, *args, **kw):
        """mpirun -n RANKS perfsift ARGS: perfsift on RANKS processes."""
        return run(["mpirun", "-n", ranks, self.binary, *args], **kw)

    def collect(self, store, ranks, app, *app_args, **kw):
        """perfsift collect -o STORE -- mpirun -n RANKS APP APP_ARGS."""
        return self("collect", "-o", store, "--", "mpirun", "-n", ranks, app, *app_args, **kw)

    def analyze(self, store, results, *args, ranks=2, **kw):
        """mpirun -n RANKS perfsift analyze STORE -o RESULTS ARGS."""
        return self.mpirun(ranks, "analyze", store, "-o", results, *args, **kw)

    def report(self, results, *args, **kw):
        """perfsift report RESULTS ARGS."""
        return self("report", results, *args, **kw)


def work_dir(path, empty=True):
    """The directory `path` as a Path, made if missing, emptied first unless empty=False
    (drivers whose CTest tests run side by side in one directory)."""
    if empty:
        shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, exist_ok=True)
    return Path(path)


def verdict(errors):
    """Each error as a FAIL line, then PASS or FAIL: the test script's exit code."""
    for e in errors:
        print("FAIL:", e)
    print("PASS" if not errors else "FAIL")
    return 1 if errors else 0


def run_script(main, nargs, usage):
    """A test script's entry point: main(*arguments) with exactly `nargs` of them, else the
    usage on stderr and exit code 2."""
    if len(sys.argv) != nargs + 1:
        print(usage, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
