#!/usr/bin/env python3
"""Checks that the source tree keeps its layout (docs/architecture.md, "Layers"):

1. A package includes headers only of packages below it (or its own): the layers in LAYERS,
   lowest first. Packages of one layer are siblings and include none of each other: no pipeline
   stage includes another stage or the daemon.
2. No non-test source file is longer than MAX_FILE_LINES lines.
3. No function outside tests is longer than MAX_FUNCTION_LINES lines.

Tests (*_test.cc), fuzz targets and testing/ may include anything. Prints what it finds and
exits 1 when anything is wrong.

    python3 testing/check_layout.py        (testing/run_tests.sh runs it)
"""
import os
import re
import sys

# Lowest first. A package may include its own headers and those of any earlier layer.
LAYERS = [
    ["core"],
    ["io"],
    ["io/process"],
    ["hotplug"],
    ["hotplug/probe", "hotplug/devroot", "hotplug/report"],
    ["hotplug/udev"],
    ["hotplug/rules", "hotplug/modules", "hotplug/udevcompat", "hotplug/udevrules"],
    ["hotplug/daemon", "hotplug/client", "hotplug/coldplug"],
    ["hotplug/boot", "hotplug/replay", "hotplug/bench", "ipc"],
    ["hotplug/cli/udevadm"],
    ["hotplug/cli"],
    [""],  # the root: main.cc, bench_main.cc
]
SOURCE_ROOTS = ["core", "io", "hotplug", "ipc", "main.cc", "bench_main.cc"]
MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 120

RANK = {package: rank for rank, layer in enumerate(LAYERS) for package in layer}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def is_test(path):
    return path.endswith("_test.cc") or "/testdata/" in path or path.startswith("testing/")


def sources(top):
    for root in SOURCE_ROOTS:
        path = os.path.join(top, root)
        if os.path.isfile(path):
            yield root
            continue
        for directory, _, files in os.walk(path):
            for name in files:
                if name.endswith((".cc", ".h", ".c")):
                    yield os.path.relpath(os.path.join(directory, name), top)


def package_of(path):
    return os.path.dirname(path)


def check_includes(top, path, problems):
    package = package_of(path)
    if package not in RANK:
        problems.append(f"{path}: package '{package}' has no layer in testing/check_layout.py")
        return
    with open(os.path.join(top, path), encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            header = match.group(1)
            included = package_of(header)
            if included == package or included not in RANK:
                continue  # its own package, or not ours (third-party paths)
            if RANK[included] >= RANK[package]:
                relation = "a sibling" if RANK[included] == RANK[package] else "a layer above"
                problems.append(f"{path}:{number}: includes {header}, {relation} of '{package}'")


def strip_code(text):
    """The text with comments, strings and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def long_functions(text):
    """(first line, lines) of each function body longer than MAX_FUNCTION_LINES."""
    code = strip_code(text)
    stack = []  # (kind, start line)
    since = 0   # where the current declaration's text starts
    line = 1
    found = []
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c in ";":
            since = i + 1
        elif c == "{":
            head = code[since:i]
            if re.search(r"\bnamespace\b|extern\s*$", head) or head.strip() == "":
                kind = "scope" if not stack or stack[-1][0] in ("scope", "class") else "block"
            elif re.search(r"\b(class|struct|union|enum)\b[^()]*$", head):
                kind = "class" if not stack or stack[-1][0] in ("scope", "class") else "block"
            elif ")" in head and (not stack or stack[-1][0] in ("scope", "class")):
                kind = "function"
            else:
                kind = "block"
            stack.append((kind, line))
            since = i + 1
        elif c == "}":
            if stack:
                kind, start = stack.pop()
                if kind == "function" and line - start + 1 > MAX_FUNCTION_LINES:
                    found.append((start, line - start + 1))
            since = i + 1
    return found


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = []
    for path in sorted(sources(top)):
        if is_test(path):
            continue
        check_includes(top, path, problems)
        with open(os.path.join(top, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.count("\n")
        if lines > MAX_FILE_LINES:
            problems.append(f"{path}: {lines} lines (at most {MAX_FILE_LINES})")
        for start, length in long_functions(text):
            problems.append(f"{path}:{start}: a function of {length} lines "
                            f"(at most {MAX_FUNCTION_LINES})")
    if problems:
        print("check_layout: the source tree left its layout:")
        for problem in problems:
            print("  " + problem)
        return 1
    print("check_layout: layers, file and function sizes as docs/architecture.md says")
    return 0


if __name__ == "__main__":
    sys.exit(main())
