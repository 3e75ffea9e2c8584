#!/usr/bin/env python3
"""Checks that every code block of README.md and docs/*.md (```cpp, ```c, ```sql, ```python,
```js, any language but the exempt ones below) is a file of the repository, byte for byte.

A block is quoted from a file named on the line just above its fence:

    <!-- examples/readme/in_code.cpp -->
    ```cpp
    ...the whole file...
    ```

The build compiles those files and meson test runs the programs among them (the SQL, Python and
Node samples of docs/sql.md with tests/sqlext/run_example.py), so the code a reader copies is
code that compiles and runs. Blocks that are not a program are exempt: a ```sh or ```console
transcript, a ```text signature or listing, a block without a language.
Usage: readme_blocks.py SOURCE_ROOT
"""
import pathlib
import re
import sys

MARKER = re.compile(r"<!-- (\S+) -->")
# What a reader does not run as a program, so nothing to test it against.
EXEMPT = {"sh", "console", "text"}


def blocks(text):
    """Yields (line number, file named above it or None, block text) for each code block that is
    not exempt. Exempt blocks (and blocks without a language) are skipped whole, so a fence quoted
    inside one is not taken for a block."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        language = lines[i].strip()[3:] if lines[i].strip().startswith("```") else None
        if language is None:
            i += 1
            continue
        start = i
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if language and language not in EXEMPT:
            above = MARKER.fullmatch(lines[start - 1].strip()) if start > 0 else None
            block = "\n".join(lines[start + 1:end]) + "\n"
            yield start + 1, above.group(1) if above else None, block
        i = end + 1


def main():
    root = pathlib.Path(sys.argv[1])
    documents = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    problems = []
    checked = 0
    for document in documents:
        name = document.relative_to(root)
        for line, quoted, block in blocks(document.read_text()):
            if quoted is None:
                problems.append(f"{name}:{line}: a code block without '<!-- FILE -->' above it "
                                "naming the tested file it quotes (or make it ```text if it is "
                                "not code)")
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
