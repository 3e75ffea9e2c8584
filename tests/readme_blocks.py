#!/usr/bin/env python3
"""Checks that every C++ and C block of README.md and docs/*.md is a file of the repository, byte
for byte.

A block is quoted from a file named on the line just above its fence:

    <!-- examples/readme/in_code.cpp -->
    ```cpp
    ...the whole file...
    ```

The build compiles those files (and meson test runs the programs among them), so the code a
reader copies is code that compiles and runs. Usage: readme_blocks.py SOURCE_ROOT
"""
import pathlib
import re
import sys

MARKER = re.compile(r"<!-- (\S+) -->")


def blocks(text):
    """Yields (line number, file named above it or None, block text) for each ```cpp or ```c block."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() in ("```cpp", "```c++", "```c"):
            start = i
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            above = MARKER.fullmatch(lines[start - 1].strip()) if start > 0 else None
            yield start + 1, above.group(1) if above else None, "\n".join(lines[start + 1:end]) + "\n"
            i = end
        i += 1


def main():
    root = pathlib.Path(sys.argv[1])
    documents = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    problems = []
    checked = 0
    for document in documents:
        name = document.relative_to(root)
        for line, quoted, block in blocks(document.read_text()):
            if quoted is None:
                problems.append(f"{name}:{line}: a C++ or C block without '<!-- FILE -->' above "
                                "it naming the compiled file it quotes")
                continue
            path = root / quoted
            if not path.is_file():
                problems.append(f"{name}:{line}: quotes {quoted}, which does not exist")
            elif path.read_text() != block:
                problems.append(f"{name}:{line}: differs from {quoted}: copy the file into the block")
            else:
                checked += 1
    for problem in problems:
        print(problem)
    print(f"{checked} passed, {len(problems)} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
