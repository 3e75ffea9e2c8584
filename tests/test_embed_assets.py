#!/usr/bin/env python3
"""scripts/embed_assets.py: every file of the folder, byte for byte, under its name with its
content type; a depfile naming the folder and each file; a file of unknown type refused by name.

Usage: test_embed_assets.py SOURCE_ROOT
"""
import os
import re
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(sys.argv[1], "scripts", "embed_assets.py")


def embed(folder, out_dir):
    output = os.path.join(out_dir, "assets.cpp")
    depfile = os.path.join(out_dir, "assets.d")
    result = subprocess.run([sys.executable, SCRIPT, output, depfile, folder],
                            capture_output=True, text=True)
    return result, output, depfile


def main():
    failures = []

    def check(condition, what):
        if not condition:
            failures.append(what)

    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as out_dir:
        files = {
            "index.html": b"<!doctype html><p>caf\xc3\xa9</p>\n",
            "app.js": b"const a = '\\\"';\n",
            "app.css": b"body { color: #123; }\n",
            "every byte.svg": bytes(range(256)),
            ".hidden.swp": b"editor scratch",
        }
        for name, data in files.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
        result, output, depfile = embed(folder, out_dir)
        check(result.returncode == 0, f"embed failed: {result.stderr}")
        source = open(output).read()
        arrays = {}
        for name, body in re.findall(r"// ([^\n]+)\nconst unsigned char kAsset\d+\[\] = \{\n(.*?)\n  0\};",
                                     source, re.S):
            arrays[name] = bytes(int(n) for n in re.findall(r"\d+", body))
        entries = re.findall(r'\{"(/[^"]+)", "([^"]+)", \{reinterpret_cast<const char\*>\(kAsset\d+\), (\d+)\}\}',
                             source)
        served = {path: (content_type, int(size)) for path, content_type, size in entries}
        expected_types = {"/index.html": "text/html; charset=utf-8",
                          "/app.js": "text/javascript; charset=utf-8",
                          "/app.css": "text/css; charset=utf-8",
                          "/every byte.svg": "image/svg+xml"}
        check(set(served) == set(expected_types), f"served paths {sorted(served)}")
        for path, content_type in expected_types.items():
            name = path[1:]
            check(served.get(path, ("", 0))[0] == content_type, f"{path}: content type")
            check(arrays.get(name) == files[name], f"{name}: bytes differ")
            check(served.get(path, ("", 0))[1] == len(files[name]), f"{path}: size")
        dependencies = open(depfile).read()
        check(dependencies.startswith(output + ": " + folder + " "), "depfile names the folder")
        check("every\\ byte.svg" in dependencies, "depfile escapes spaces")
        check(".hidden" not in dependencies, "depfile skips hidden files")

        with open(os.path.join(folder, "notes.docx"), "wb") as f:
            f.write(b"x")
        refused, _, _ = embed(folder, out_dir)
        check(refused.returncode != 0, "a file of unknown type is refused")
        check("notes.docx" in refused.stderr and "'.docx'" in refused.stderr,
              f"the refusal names the file: {refused.stderr}")

    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
