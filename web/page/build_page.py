#!/usr/bin/env python3
"""Writes the playground: one HTML file that works opened from disk, with nothing else.

It fills the template web/page/playground.html: @@STYLE@@ with playground.css, @@SCRIPT@@ with
playground.js, and @@WORKER@@ with the worker's source, which is the engine (ENGINE.js, built
with SINGLE_FILE, so the WebAssembly module is inside it) followed by worker.js, as one JSON
string. The page turns that string into a Blob URL to start its Web Worker from, so nothing is
fetched: no server, no network.

The same inputs give the same bytes (no date, no path, no random).

    python3 web/page/build_page.py --engine build-wasm/bin/gradformer_engine.js build-wasm/playground.html
"""

import argparse
import json
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent


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


def build(engine_path, out_path):
    template = read(HERE / "playground.html")
    parts = {
        "@@STYLE@@": inline(read(HERE / "playground.css"), "style", "playground.css"),
        "@@SCRIPT@@": inline(read(HERE / "playground.js"), "script", "playground.js"),
        "@@WORKER@@": worker_source(read(engine_path), read(HERE / "worker.js")),
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


def main():
    parser = argparse.ArgumentParser(description="Write gradformer's playground as one HTML file.")
    parser.add_argument("--engine", required=True, help="gradformer_engine.js (built with SINGLE_FILE)")
    parser.add_argument("out", help="the HTML file to write")
    args = parser.parse_args()
    size = build(args.engine, args.out)
    print(f"wrote {args.out} ({size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
