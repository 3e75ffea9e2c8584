#!/usr/bin/env python3
"""Runs PROGRAM in a new empty directory (removed after) and checks that it exits 0 and that its
standard output holds EXPECTED. Usage: run_in_temp_dir.py PROGRAM EXPECTED"""
import os
import subprocess
import sys
import tempfile

program, expected = os.path.abspath(sys.argv[1]), sys.argv[2]
with tempfile.TemporaryDirectory() as directory:
    run = subprocess.run([program], cwd=directory, capture_output=True, text=True, timeout=120)
sys.stdout.write(run.stdout)
sys.stderr.write(run.stderr)
if run.returncode != 0:
    print(f"{program} exited with {run.returncode}")
    sys.exit(1)
if expected not in run.stdout:
    print(f"{program} did not print '{expected}'")
    sys.exit(1)
