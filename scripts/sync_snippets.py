#!/usr/bin/env python3
"""Copies each lesson's snippets from its main.cpp into its README.md.

A README marks a code block with <!-- snippet: NAME --> on the line before its ```cpp fence;
main.cpp marks the same code with // [snippet: NAME] ... // [/snippet]. The test
"lesson READMEs quote main.cpp exactly" fails when the two differ; after editing main.cpp,
run this to bring the README in line:

  scripts/sync_snippets.py [lessons/NN_name ...]     (default: every lesson)
"""

import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def snippets_in_source(path):
    found, name, lines = {}, None, []
    for line in path.read_text().splitlines():
        start = re.match(r"\s*// \[snippet: (\S+)\]", line)
        if start:
            name, lines = start.group(1), []
        elif re.match(r"\s*// \[/snippet\]", line):
            found[name] = textwrap.dedent("\n".join(lines))
            name = None
        elif name is not None:
            lines.append(line)
    return found


def sync(lesson):
    readme, source = lesson / "README.md", lesson / "main.cpp"
    if not readme.exists() or not source.exists():
        return
    snippets = snippets_in_source(source)
    pattern = re.compile(r"(<!-- snippet: (\S+) -->\n```cpp\n)(.*?)(\n```)", re.S)

    def replace(match):
        name = match.group(2)
        if name not in snippets:
            sys.exit(f"{readme}: snippet {name} is not marked in {source}")
        return match.group(1) + snippets[name] + match.group(4)

    text = readme.read_text()
    updated = pattern.sub(replace, text)
    if updated != text:
        readme.write_text(updated)
        print(f"updated {readme.relative_to(ROOT)}")


lessons = [Path(p).resolve() for p in sys.argv[1:]] or sorted((ROOT / "lessons").glob("[0-9]*"))
for lesson in lessons:
    sync(lesson)
