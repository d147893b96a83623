#!/usr/bin/env python3
"""Copies each lesson's snippets from its main.cpp into its README.md and the other .md files
of its folder (the parts of a lesson split into several sittings).

A lesson's text marks a code block with <!-- snippet: NAME --> on the line before its ```cpp fence;
main.cpp marks the same code with // [snippet: NAME] ... // [/snippet]. A block that quotes a
library file names it after NAME, relative to the top of the tree
(<!-- snippet: trainer-step training/trainer.cpp -->), and that file marks the region in the
same way. The test "every lesson README excerpt matches the code it quotes" fails when a copy
differs; after editing the code, run this to bring the READMEs in line:

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
    source = lesson / "main.cpp"
    if not source.exists():
        return
    files = {None: snippets_in_source(source)}
    for text_file in sorted(lesson.glob("*.md")):
        sync_text(text_file, source, files)


def sync_text(page, source, files):
    # The code is the lines up to the first fence, none when a new block is still empty.
    pattern = re.compile(r"(<!-- snippet: (\S+)(?: (\S+))? -->\n```cpp\n)((?:.*\n)*?)(```)")

    def replace(match):
        name, file = match.group(2), match.group(3)
        path = source if file is None else ROOT / file
        if file not in files:
            if not path.exists():
                sys.exit(f"{page}: snippet {name} quotes {file}, which does not exist")
            files[file] = snippets_in_source(path)
        if name not in files[file]:
            sys.exit(f"{page}: snippet {name} is not marked in {path}")
        return match.group(1) + files[file][name] + "\n" + match.group(5)

    text = page.read_text()
    updated = pattern.sub(replace, text)
    if updated != text:
        page.write_text(updated)
        print(f"updated {page.relative_to(ROOT)}")


lessons = [Path(p).resolve() for p in sys.argv[1:]] or sorted((ROOT / "lessons").glob("[0-9]*"))
for lesson in lessons:
    if not (lesson / "main.cpp").is_file():
        sys.exit(f"sync_snippets.py: {lesson}: not a lesson folder (no main.cpp); "
                 "usage: scripts/sync_snippets.py [lessons/NN_name ...]")
for lesson in lessons:
    sync(lesson)
