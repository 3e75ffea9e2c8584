#!/usr/bin/env python3
"""Runs PROGRAM, then each further PROGRAM, in one new empty directory (removed after) and checks
that each exits 0 and that the last one's standard output holds EXPECTED (with --exact, is
EXPECTED and a newline, nothing more). Name a program twice to run it twice: a sample must be
safe to run again.
Usage: run_in_temp_dir.py [--exact] PROGRAM [PROGRAM...] EXPECTED"""
import os
import subprocess
import sys
import tempfile

arguments = sys.argv[1:]
exact = arguments[:1] == ["--exact"]
if exact:
    arguments = arguments[1:]
programs, expected = [os.path.abspath(p) for p in arguments[:-1]], arguments[-1]
with tempfile.TemporaryDirectory() as directory:
    for program in programs:
        run = subprocess.run([program], cwd=directory, capture_output=True, text=True,
                             timeout=120)
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr)
        if run.returncode != 0:
            print(f"{program} exited with {run.returncode}")
            sys.exit(1)
if exact and run.stdout != expected + "\n":
    print(f"{program} printed {run.stdout!r}, not only '{expected}'")
    sys.exit(1)
if expected not in run.stdout:
    print(f"{program} did not print '{expected}'")
    sys.exit(1)
