#!/usr/bin/env python3
"""Holds each lesson's pages to its program: every output block a page shows must be what the
program prints, line for line.

An output block is a fenced block without a language (a line of three backticks alone). Blocks
with one (```cpp, ```sh, ```text) are not output. The check runs the lesson's full run (no
--quick) in a temporary folder, so that its pictures go to out/NN_name/ as the pages say, and
then finds each block as consecutive lines of what it printed, under these rules:

  1. Indentation and trailing spaces: the block may drop the indentation its lines share (the
     program indents most lines by two spaces), and trailing spaces do not count.
  2. Elision: a line "..." alone stands for one or more lines the page leaves out (or for a
     line "..." the program printed).
  3. Timings are this machine's, not the lesson's: a number with a unit of time or speed
     (ns, us, µs, ms, s, min, GFLOP/s, /s) becomes "#" on both sides, and so does a ratio
     written "12x" or "12.5x" on a line that holds such a number (a speed-up of two timings).
  4. A block after the line <!-- output: timings --> is a table of this machine's timings:
     every number in it becomes "#", so its words, its rows and where its numbers stand must
     match, not the numbers; and its rows may come in another order (a profile sorted by
     time), unless it elides lines. The page must say where its numbers were measured.
  A line with a masked number may also space its columns otherwise: its runs of spaces count
  as one, and its indentation may differ (a right-aligned column of timings).
  5. Claims about speed: the check runs with GRADFORMER_SKIP_TIMING_CHECKS=1, since a machine
     running other tests beside it cannot keep them (lessons/lesson.h). A lesson then prints
     "[--] CLAIM (a timing: not checked in this run)" where a page shows "[ok] CLAIM"; the
     claim's numbers are this machine's, and so is its count of threads (lesson 11 runs its
     models on one thread when the other cores are busy).

  6. Busy cores: a lesson that finds the machine's other cores busy says so in parentheses,
     "(the other cores were busy ...)" or "(the other cores are busy ...)", on a line of its
     own or after a line; those notes are left out of the output before the comparison.

Everything else must be equal: every digit of every other number, every word, the order of
the lines. A block that is not found is printed with the page's line and the line of the
program's output that comes nearest, and the check exits with 1.

The numbers of the prose. The English pages' text outside their blocks quotes numbers too
(the Chinese pages quote the same ones: scripts/check_translations.py). Each that states a
measurement, a number with a decimal point ("5.70"), a percentage ("29%") or a ratio ("76x"),
must be held in one of two ways:

  7. By an output block of the lesson's pages, at the precision the prose gives it: a
     decimal by a number a block shows that rounds to it ("about 5.7" by 5.70 or 5.66, not by
     5.8), a percentage by a percentage, a ratio by a ratio ("76x" by "76.2x"). The blocks
     are held to the run by the rules above; the numbers they mask (timings) hold nothing,
     and a number of the prose with a unit of time or speed ("about 1.5 s") is a timing too,
     which no block holds.
  8. By the page, in a comment by the paragraph: <!-- numbers: 0.9 0.98: the paper's Adam
     settings (section 5.3) --> names the numbers and, after the colon, where they come from:
     the paper, a setting of the program, arithmetic on numbers the page shows, a picture, a
     timing on the machine the page names. A named number that no prose of the page quotes
     fails, and so does a comment without a reason.

Numbers in block quotes (the paper's words), inline code, links and comments are not
checked, and neither are references to a section, table, figure or equation ("section 3.2",
"§3.2", "Table 3").

  scripts/check_lesson_outputs.py [--bin DIR] [--output FILE | --prose] lessons/NN_name [...]

--bin: where the lesson programs are (default: build/bin). --output FILE: check the pages
against a saved output of one lesson's full run instead of running it (the saved run must
have been made with the variable above set, in a folder whose out/ the pages name).
--prose: check only the numbers of the prose (rules 7 and 8), which needs no run.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TIMINGS_MARK = "<!-- output: timings -->"
ELISION = "..."

NUMBER = r"[-+]?(?:\d+(?:[.,]\d+)*(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?"
# Rule 3: a number and its unit of time or speed ("0.71 ms", "1.5 s", "(7.2 s)", "248.2
# GFLOP/s", "53333 target tokens/s", "2 min"); the unit is kept, the number masked.
TIMED = re.compile(
    rf"(?<![\w.]){NUMBER}(?= ?(?:ns|us|µs|ms|s|min|GFLOP/s|[A-Za-z ]*/s)\b)")
RATIO = re.compile(rf"(?<![\w.]){NUMBER}(?=x\b)")
ANY_NUMBER = re.compile(rf"(?<![\w.]){NUMBER}")
# Rule 6: what a lesson says of a busy machine.
BUSY_NOTE = re.compile(r" ?\(the other cores (?:were|are) busy[^)]*\)")
# Rule 5: the line a lesson prints for a claim about speed it did not check.
UNCHECKED = re.compile(r"^\s*\[--\] (.*) \(a timing: not checked in this run\)$")
THREADS = re.compile(r"# threads?\b")


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, counted from 1
    lines: list[str]
    timings: bool  # marked <!-- output: timings -->


def output_blocks(page: Path) -> list[Block]:
    blocks, open_at, language, lines, marked = [], 0, None, [], False
    previous = ""
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if language is None:
            if line.startswith("```"):
                open_at, language, lines = number, line[3:].strip(), []
                marked = previous.strip() == TIMINGS_MARK
            previous = line
        elif line.startswith("```"):
            if language == "":
                blocks.append(Block(page, open_at, lines, marked))
            language = None
            previous = line
        else:
            lines.append(line)
    return blocks


def mask(line: str, timings: bool) -> str:
    """A line of a block or of the output with rule 3 (or rule 4 in a timings block) applied."""
    line = line.strip()
    if timings:
        masked = ANY_NUMBER.sub("#", line)
    else:
        masked = TIMED.sub("#", line)
        masked = RATIO.sub("#", masked) if masked != line else masked
    # A masked number's width is this machine's too, so the spaces that align its column
    # count as one.
    return " ".join(masked.split()) if masked != line else masked


def same_line(line: str, got: str, timings: bool) -> bool:
    """Whether a block's line stands for an output line, indentation aside (rules 3 to 5)."""
    unchecked = UNCHECKED.match(got.rstrip())
    if unchecked:  # rule 5: a claim about speed, its numbers this machine's
        def claim(text: str) -> str:
            return THREADS.sub("# threads", ANY_NUMBER.sub("#", text))
        return claim(line.strip()) == claim(f"[ok] {unchecked[1]}")
    return mask(line, timings) == mask(got, timings)


def indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def match_at(block: Block, output: list[str], start: int) -> int:
    """How many of the block's lines stand for the output's lines from start on (rules 1 to
    5): all of them when the block is found there. An elision matches one or more lines."""
    shift = None  # how much deeper the output is indented than the block (rule 1)

    def same(line: str, got: str) -> bool:
        nonlocal shift
        if not line.strip() and not got.strip():
            return True
        if not same_line(line, got, block.timings):
            return False
        if mask(line, block.timings) != line.strip():
            return True  # a masked number may move the line's start too (rule 3)
        if shift is None:
            shift = indent(got) - indent(line)
        return indent(got) - indent(line) == shift

    at, done = start, 0
    lines = block.lines
    while done < len(lines):
        if lines[done].strip() == ELISION and not (at < len(output) and
                                                   output[at].strip() == ELISION):
            rest = []
            for line in lines[done + 1:]:
                if line.strip() == ELISION:
                    break
                rest.append(line)
            saved = shift
            for skip_to in range(at + 1, len(output) - len(rest) + 1):
                shift = saved
                if all(same(line, output[skip_to + k]) for k, line in enumerate(rest)):
                    at, done = skip_to + len(rest), done + 1 + len(rest)
                    break
            else:
                return done
            continue
        if at >= len(output) or not same(lines[done], output[at]):
            return done
        at, done = at + 1, done + 1
    return done


def rows_in_any_order(block: Block, output: list[str]) -> bool:
    """Rule 4: a block of timings, whose rows this machine's timings may have ordered."""
    rows = sorted(mask(line, True) for line in block.lines)
    return any(sorted(mask(line, True) for line in output[start:start + len(rows)]) == rows
               for start in range(len(output) - len(rows) + 1))


def find_block(block: Block, output: list[str]) -> tuple[bool, int, str]:
    """Whether the block is in the output; if not, where it comes nearest: how many of its
    lines matched in a row, and the output line found where the next did not."""
    if block.timings and ELISION not in (line.strip() for line in block.lines):
        if rows_in_any_order(block, output):
            return True, len(block.lines), ""
    best, found = 0, ""
    for start in range(len(output)):
        matched = match_at(block, output, start)
        if matched == len(block.lines):
            return True, matched, ""
        if matched > best:
            best = matched
            at = start + matched
            found = output[at].rstrip() if at < len(output) else "(the end)"
    return False, best, found


def run_lesson(binary: Path, lesson_args=()) -> str:
    with tempfile.TemporaryDirectory(prefix="lesson-output-") as folder:
        env = {**os.environ, "GRADFORMER_SKIP_TIMING_CHECKS": "1"}
        done = subprocess.run([str(binary), *lesson_args], cwd=folder, env=env, capture_output=True,
                              text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{binary.name} exited with {done.returncode}:\n{done.stdout[-3000:]}"
                 f"{done.stderr[-2000:]}")
    return done.stdout


def lesson_program(lesson: Path, bin_dir: Path) -> Path:
    binary = bin_dir / ("lesson" + lesson.name)
    if not binary.exists():
        sys.exit(f"{lesson}: no program {binary} (build it: cmake --build build "
                 f"--target {binary.name})")
    return binary


def without_busy_notes(output: str) -> list[str]:
    """Rule 6: the output's lines with the notes on busy cores left out."""
    lines = []
    for line in output.splitlines():
        kept = BUSY_NOTE.sub("", line)
        if kept.strip() or not line.strip():
            lines.append(kept)
    return lines


def check_lesson(lesson: Path, output: str) -> list[str]:
    lines = without_busy_notes(output)
    problems = []
    pages = sorted(lesson.glob("*.md"))  # the Chinese pages show the same output
    count = 0
    for page in pages:
        for block in output_blocks(page):
            count += 1
            ok, matched, found = find_block(block, lines)
            if ok:
                continue
            where = f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page}:{block.line}"
            if matched:
                problems.append(
                    f"{where}: the block's first {matched} lines are printed, then the page has\n"
                    f"    {block.lines[matched].rstrip()}\n"
                    f"  where the program printed\n    {found}")
            else:
                first = next((line.strip() for line in block.lines if line.strip()), "")
                problems.append(f"{where}: not in the program's output; its first line is\n"
                                f"    {first}")
    print(f"{lesson.name}: {count - len(problems)} of {count} output blocks as printed")
    return problems


# Rules 7 and 8: the numbers of the prose.
NUMBERS_NOTE = re.compile(r"<!-- numbers:(.*?)-->", re.S)
# A decimal, a percentage or a ratio; not a part of a version ("3.1.6") or of a word.
PROSE_NUMBER = re.compile(r"(?<![\w.§/])(\d+(?:,\d{3})*(?:\.\d+)?(?:e[-+]?\d+)?)(%|x\b|×)?"
                          r"(?!\.?\d)")
REFERENCE = re.compile(r"(?:§|\b(?:[Ss]ections?|[Tt]ables?|[Ff]igures?|[Ee]quations?|[Ee]q\.)"
                       r"\s*)$")
OUTPUT_NUMBER = re.compile(rf"(?<![\w.])({NUMBER})(%|x\b|×)?")


@dataclass
class ProseNumber:
    text: str  # as the page writes it: "5.70", "29%", "76x"
    line: int
    timing: bool  # with a unit of time or speed: only a comment can hold it


def measured(number: str, kind: str) -> bool:
    """Whether a number of the prose states a measurement: a decimal, a percentage, a ratio."""
    return bool(kind) or "." in number or "e" in number


def prose_of(page: Path) -> list[tuple[int, str]]:
    """The page's lines outside its fenced blocks and block quotes, with inline code, the
    targets of links, HTML tags and comments blanked out."""
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"<!--.*?-->", lambda m: "\n" * m[0].count("\n"), text, flags=re.S)
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith(">"):
            continue
        line = re.sub(r"`[^`]*`", " ", line)
        line = re.sub(r"\]\([^)]*\)", "]", line)
        lines.append((number, re.sub(r"<[^>]*>", " ", line)))
    return lines


def prose_numbers(page: Path) -> list[ProseNumber]:
    found = []
    for number, line in prose_of(page):
        for m in PROSE_NUMBER.finditer(line):
            if measured(m[1], m[2] or "") and not REFERENCE.search(line[:m.start()]):
                timing = bool(TIMED.match(line, m.start(1)))
                found.append(ProseNumber(m[1].replace(",", "") + (m[2] or ""), number, timing))
    return found


def page_notes(page: Path) -> tuple[dict[str, int], list[str]]:
    """The numbers a page's comments account for (rule 8), each with the line of its comment,
    and the problems of the comments themselves."""
    text = page.read_text(encoding="utf-8")
    named, problems = {}, []
    for m in NUMBERS_NOTE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        numbers, colon, reason = m[1].partition(":")
        if not colon or not reason.strip():
            problems.append(f"{page.name}:{line}: a numbers comment without a reason after a colon")
        for number in numbers.split():
            named[number.replace(",", "")] = line
    return named, problems


def shown(lesson: Path) -> dict[str, list[Decimal]]:
    """The numbers the lesson's output blocks show, by kind: "" (any number), "%" and "x".
    A number the blocks' rules mask (a timing, a ratio of timings) is not among them: it is
    this machine's, not the lesson's."""
    kinds = {"": [], "%": [], "x": []}
    for page in sorted(lesson.glob("*.md")):
        for block in output_blocks(page):
            for line in block.lines:
                for m in OUTPUT_NUMBER.finditer(mask(line, block.timings)):
                    try:
                        value = Decimal(m[1].replace(",", ""))
                    except InvalidOperation:  # "1,2", "3.2.1": not a number
                        continue
                    kinds[""].append(value)
                    if m[2]:
                        kinds["x" if m[2] in ("x", "×") else "%"].append(value)
    return kinds


def held_by_blocks(number: str, blocks: dict[str, list[Decimal]]) -> bool:
    """Rule 7: a number of the same kind in an output block rounds to the prose's number at
    the digits the prose gives it."""
    kind = number[-1] if number[-1] in "%x×" else ""
    digits = number.rstrip("%x×")
    value = Decimal(digits)
    half = Decimal(5).scaleb(value.as_tuple().exponent - 1)  # half of the last digit's unit
    return any(abs(abs(v) - value) <= half for v in blocks["x" if kind == "×" else kind])


def check_prose(lesson: Path) -> list[str]:
    problems = []
    values = shown(lesson)
    count = 0
    for page in sorted(p for p in lesson.glob("*.md") if not p.name.endswith(".zh.md")):
        named, note_problems = page_notes(page)
        problems += note_problems
        quoted = set()
        for number in prose_numbers(page):
            count += 1
            quoted.add(number.text.replace("×", "x"))
            if number.text in named or (not number.timing and
                                        held_by_blocks(number.text, values)):
                continue
            problems.append(f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page}:"
                            f"{number.line}: the prose quotes {number.text}, which no output "
                            f"block shows and no <!-- numbers: ... --> comment names")
        for number, line in named.items():
            if number not in quoted:
                problems.append(f"{page.name}:{line}: the comment names {number}, which the "
                                f"prose does not quote")
    print(f"{lesson.name}: {count} numbers in the prose")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("lessons", nargs="+", type=Path, help="lesson folders, lessons/NN_name")
    parser.add_argument("--bin", type=Path, default=ROOT / "build" / "bin",
                        help="the folder of the lesson programs (default: build/bin)")
    parser.add_argument("--output", type=Path,
                        help="a saved output of the full run of the one lesson given")
    parser.add_argument("--lesson-args", default="",
                        help="arguments for the lesson program, separated by spaces "
                             "(--lesson-args=--data=DIR: where lesson 13 finds its corpus)")
    parser.add_argument("--prose", action="store_true",
                        help="check only the numbers of the prose against the output blocks")
    args = parser.parse_args()
    if args.output and len(args.lessons) != 1:
        parser.error("--output is the output of one lesson: give one lesson folder")
    if args.output and args.prose:
        parser.error("--prose runs nothing and reads no output: give one or the other")
    failed = False
    for lesson in args.lessons:
        lesson = lesson.resolve()
        if not (lesson / "README.md").exists():
            sys.exit(f"{lesson}: not a lesson folder (no README.md)")
        problems = []
        if not args.prose:
            output = args.output.read_text(encoding="utf-8") if args.output else \
                run_lesson(lesson_program(lesson, args.bin.resolve()), args.lesson_args.split())
            problems += check_lesson(lesson, output)
        problems += check_prose(lesson)
        for problem in problems:
            print(problem)
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
