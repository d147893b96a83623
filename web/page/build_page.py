#!/usr/bin/env python3
"""Writes the playground: one HTML file that works opened from disk, with nothing else.

It fills the template web/page/playground.html: @@STYLE@@ with playground.css, @@SCRIPT@@ with
playground.js, and @@WORKER@@ with the worker's source, which is the engine (ENGINE.js, built
with SINGLE_FILE, so the WebAssembly module is inside it) followed by worker.js, as one JSON
string. The page turns that string into a Blob URL to start its Web Worker from, so nothing is
fetched: no server, no network.

The same inputs give the same bytes (no date, no path, no random). The page carries a stamp of
the sources it was built from (@@SOURCES@@, a digest of every file that goes into the engine or
the page), so that a page committed to the repository can be checked against the sources beside
it without building it: --check.

    python3 web/page/build_page.py --engine build-wasm/bin/gradformer_engine.js build-wasm/playground.html
    python3 web/page/build_page.py --check docs/playground.html [--built build-wasm/playground.html]
"""

import argparse
import hashlib
import json
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# What the page is built from: the library the engine links (its folders and the build files
# that compile it for WebAssembly), the engine, and the page's own files. The toolchain is not
# in the stamp: the page is built with Debian 12's emscripten (docs/browser-edition.md).
SOURCE_FOLDERS = ["autograd", "nn", "models", "data", "training", "viz", "web/page"]
SOURCE_FILES = ["CMakeLists.txt", "CMakePresets.json", "cmake/wasm.cmake", "web/CMakeLists.txt",
                "web/engine.cpp"]
SOURCE_SUFFIXES = {".cpp", ".h", ".txt", ".cmake", ".html", ".css", ".js", ".py"}
STAMP = re.compile(r'<meta name="gradformer-sources" content="([0-9a-f]+)">')


def read(path):
    return pathlib.Path(path).read_text(encoding="utf-8")


def inline(text, element, name):
    """text, checked that it cannot end its <style> or <script> element early.

    Inside those elements the HTML parser looks only for the closing tag, and in a script for
    "<!--", which can keep a later "</script>" from closing it."""
    closing = re.search(rf"</{element}|<!--", text, re.IGNORECASE)
    if closing:
        line = text.count("\n", 0, closing.start()) + 1
        raise SystemExit(f"{name}:{line}: {closing.group(0)!r} would end the page's <{element}> early")
    return text


def worker_source(engine, worker):
    # The worker's code runs after the engine's in one script; wrapping it in a function keeps
    # its "use strict" (a directive only at the start of a script or a function) and its names
    # out of the engine's global scope.
    source = f"{engine}\n;(function () {{\n{worker}\n}})();\n"
    # As JSON with every "<" escaped: no "</script" or "<!--" can appear in the element.
    return json.dumps(source, ensure_ascii=True).replace("<", "\\u003c")


def source_files():
    files = [ROOT / name for name in SOURCE_FILES]
    for folder in SOURCE_FOLDERS:
        files += [path for path in (ROOT / folder).rglob("*")
                  if path.suffix in SOURCE_SUFFIXES and path.is_file()
                  and "__pycache__" not in path.parts]
    return sorted(files, key=lambda path: path.relative_to(ROOT).as_posix())


def sources_digest():
    """SHA-256 of each source's path and contents, in path order: the page's stamp."""
    digest = hashlib.sha256()
    for path in source_files():
        digest.update(path.relative_to(ROOT).as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).hexdigest().encode("ascii") + b"\n")
    return digest.hexdigest()


def build(engine_path, out_path):
    template = read(HERE / "playground.html")
    parts = {
        "@@STYLE@@": inline(read(HERE / "playground.css"), "style", "playground.css"),
        "@@SCRIPT@@": inline(read(HERE / "playground.js"), "script", "playground.js"),
        "@@WORKER@@": worker_source(read(engine_path), read(HERE / "worker.js")),
        "@@SOURCES@@": sources_digest(),
    }
    for marker in parts:
        count = template.count(marker)
        if count != 1:
            raise SystemExit(f"playground.html: {marker} appears {count} times, not once")
    # One pass, so that a marker inside an inserted file is left alone.
    page = re.sub("|".join(map(re.escape, parts)), lambda m: parts[m.group(0)], template)
    out = pathlib.Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(page.encode("utf-8"))
    return len(page.encode("utf-8"))


def check(page_path, built_path):
    """Problems with a committed page: built from other sources, or not the page they build."""
    page = pathlib.Path(page_path).read_bytes()
    stamp = STAMP.search(page.decode("utf-8", errors="replace"))
    rebuild = "rebuild it with scripts/build-playground.sh and commit it"
    if stamp is None:
        return [f"{page_path}: no stamp of its sources (<meta name=\"gradformer-sources\">): {rebuild}"]
    if stamp.group(1) != sources_digest():
        return [f"{page_path}: older than its sources (built from {stamp.group(1)[:12]}, the sources "
                f"here are {sources_digest()[:12]}): {rebuild}"]
    if built_path and pathlib.Path(built_path).read_bytes() != page:
        return [f"{page_path}: not the bytes these sources build ({built_path}), though its stamp "
                f"matches: the build is not reproducible here, or the page was edited by hand"]
    return []


def main():
    parser = argparse.ArgumentParser(description="Write gradformer's playground as one HTML file.")
    parser.add_argument("--engine", help="gradformer_engine.js (built with SINGLE_FILE)")
    parser.add_argument("out", nargs="?", help="the HTML file to write")
    parser.add_argument("--check", metavar="PAGE",
                        help="check that PAGE was built from the sources here, and write nothing")
    parser.add_argument("--built", metavar="PAGE",
                        help="with --check: the page just built from them, which PAGE must equal")
    args = parser.parse_args()
    if args.check:
        problems = check(args.check, args.built)
        for problem in problems:
            print(problem, file=sys.stderr)
        if not problems:
            print(f"{args.check}: built from the sources here ({sources_digest()[:12]})")
        return 1 if problems else 0
    if not args.engine or not args.out:
        parser.error("writing a page needs --engine and the page's path")
    size = build(args.engine, args.out)
    print(f"wrote {args.out} ({size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
