"""The extension module brings no SQLite of its own: it links no libsqlite3, leaves no sqlite3_*
symbol for the loader to bind, and exports nothing but its entry point, so its forwarders never
interpose on a host's SQLite.

Usage: test_module_symbols.py EXTENSION"""
import subprocess
import sys


def lines(*command):
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()


def main():
    module = sys.argv[1]
    needed = [l for l in lines("readelf", "-d", module) if "(NEEDED)" in l]
    assert not [l for l in needed if "sqlite" in l], f"links a SQLite library: {needed}"
    undefined = [l.split()[-1] for l in lines("nm", "-D", "--undefined-only", module)]
    assert not [s for s in undefined if s.startswith("sqlite3")], \
        f"binds SQLite symbols at load: {[s for s in undefined if s.startswith('sqlite3')]}"
    exported = [l.split()[-1] for l in lines("nm", "-D", "--defined-only", module)]
    assert exported == ["sqlite3_sluice_init"], f"exports more than the entry point: {exported}"
    print("module symbols: ok")


if __name__ == "__main__":
    main()
