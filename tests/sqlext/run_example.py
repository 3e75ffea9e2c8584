"""Runs the samples of docs/sql.md (examples/sql, examples/python, examples/node) as a reader
runs them from the repository root, and checks what each prints.

Usage: run_example.py EXTENSION PROGRAM EXPECTED [PROGRAM EXPECTED ...]

The programs run one after the other in one new empty directory (removed after), on one file
app.db there, with build/sqlext/sluice.so in it a link to EXTENSION: a .sql file is the input
of `sqlite3 app.db` (its `.load build/sqlext/sluice` finds the link), a .py file runs with this
Python (Debian's, which can load extensions) and a .js file with node, both with the arguments
`build/sqlext/sluice.so app.db`. Each must exit 0, write nothing to standard error, and end its
standard output with the lines EXPECTED (lines separated by '\\n'), where the timings of a test
runner are left out: unittest's "Ran 3 tests in 0.044s" reads "Ran 3 tests", and node:test's
closing "# duration_ms ..." line is dropped. Node samples need
better-sqlite3 in tests/node/node_modules (scripts/install-deps): without it this exits 77
(skipped), saying so."""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

NODE_MODULES = pathlib.Path(__file__).resolve().parent.parent / "node" / "node_modules"
LINK = os.path.join("build", "sqlext", "sluice.so")


def command(program):
    """The command line and environment that run `program` as its header comment says."""
    if program.endswith(".sql"):
        return ["/usr/bin/sqlite3", "app.db"], None
    if program.endswith(".py"):
        return [sys.executable, program, LINK, "app.db"], None
    if program.endswith(".js"):
        return [shutil.which("node"), program, LINK, "app.db"], {**os.environ,
                                                                 "NODE_PATH": str(NODE_MODULES)}
    sys.exit(f"run_example.py: {program}: not a .sql, .py or .js file")


def without_timings(output):
    """`output`'s lines without what a test runner says of its run time, which varies."""
    lines = [re.sub(r"^(Ran \d+ tests?) in [\d.]+s$", r"\1", line)
             for line in output.rstrip("\n").split("\n")]
    return [line for line in lines if not line.startswith("# duration_ms ")]


def node_can_load_better_sqlite3():
    node = shutil.which("node")
    return node is not None and subprocess.run(
        [node, "-e", "require('better-sqlite3')"], capture_output=True,
        env={**os.environ, "NODE_PATH": str(NODE_MODULES)}).returncode == 0


def main():
    extension = os.path.abspath(sys.argv[1])
    pairs = sys.argv[2:]
    if not pairs or len(pairs) % 2:
        sys.exit(__doc__)
    runs = [(os.path.abspath(pairs[i]), pairs[i + 1]) for i in range(0, len(pairs), 2)]
    if any(p.endswith(".js") for p, _ in runs) and not node_can_load_better_sqlite3():
        print(f"skipped: node cannot load better-sqlite3 from {NODE_MODULES}; "
              "run scripts/install-deps")
        sys.exit(77)
    failed = False
    with tempfile.TemporaryDirectory() as directory:
        os.makedirs(os.path.join(directory, "build", "sqlext"))
        os.symlink(extension, os.path.join(directory, LINK))
        for program, expected in runs:
            args, env = command(program)
            script = pathlib.Path(program).read_text() if program.endswith(".sql") else ""
            run = subprocess.run(args, cwd=directory, env=env, input=script,
                                 capture_output=True, text=True, timeout=60)
            name = os.path.relpath(program)
            print(f"$ {name}\n{run.stdout}", end="")
            want = expected.split("\n")
            got = without_timings(run.stdout)[-len(want):]
            if run.returncode != 0 or run.stderr or got != want:
                failed = True
                print(f"{name}: exited with {run.returncode}; standard error: {run.stderr!r}")
                if got != want:
                    print(f"{name}: its output does not end with {expected!r}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
