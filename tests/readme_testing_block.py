#!/usr/bin/env python3
"""Checks that the C++ block of README.md's "Testing your handlers" section is the example the
build compiles and runs, byte for byte, so that the code a reader copies is code that works.

The block names its file on the line above its fence: <!-- examples/testing/handlers_test.cpp -->
Usage: readme_testing_block.py SOURCE_ROOT
"""
import pathlib
import sys

SECTION = "## Testing your handlers"
EXAMPLE = "examples/testing/handlers_test.cpp"


def main():
    root = pathlib.Path(sys.argv[1])
    lines = (root / "README.md").read_text().split("\n")
    if SECTION not in lines:
        sys.exit(f"README.md: no '{SECTION}' section")
    start = lines.index(SECTION)
    fence = next((i for i in range(start, len(lines)) if lines[i] == "```cpp"), None)
    if fence is None or lines[fence - 1] != f"<!-- {EXAMPLE} -->":
        sys.exit(f"README.md: '{SECTION}' has no ```cpp block under '<!-- {EXAMPLE} -->'")
    end = lines.index("```", fence + 1)
    block = "\n".join(lines[fence + 1:end]) + "\n"
    example = (root / EXAMPLE).read_text()
    if block != example:
        for number, (quoted, real) in enumerate(zip(block.split("\n"), example.split("\n")), 1):
            if quoted != real:
                sys.exit(f"README.md: the '{SECTION}' block differs from {EXAMPLE} at its line "
                         f"{number}:\n  README: {quoted}\n  file:   {real}")
        sys.exit(f"README.md: the '{SECTION}' block and {EXAMPLE} differ in length")
    print(f"README.md's '{SECTION}' block is {EXAMPLE}")


if __name__ == "__main__":
    main()
