#!/usr/bin/env python3
"""Keeps the Chinese edition of the documentation in step with the English one.

The English pages are the top README.md, the pages of lessons/ itself (the glossary,
lessons/GLOSSARY.md) and every .md of a lesson folder (a lesson's README.md and, for the long
lessons, its parts). Each has a Chinese page beside it with .zh.md in place of .md. The Chinese
page's first line records which English text it translates, by the git blob id of that text
(what `git hash-object README.md` prints):

  <!-- 译自 README.md（git blob 0123...）。英文版改动后，请同步修改本页，再运行 scripts/check_translations.py --stamp 本文件 -->

For every pair this script checks that
  - the Chinese page exists, and its recorded blob is the English page as it is now, so an
    English edit without the Chinese one fails (the message says how to see what changed);
  - each page links to the other near its top;
  - the two have the same headings, level by level, and the same code blocks, byte for byte
    (commands, printed output and code are not translated; the snippet test checks the code);
  - the same pictures in the same order, each followed in the Chinese page by a paragraph that
    starts with "图：" and explains the picture in Chinese;
  - every formula ($...$) and every number of the English text is in the Chinese text, compared
    as numbers: "05" is 5, "43,000" and "4.3 万" are 43000, "1.2 亿" and "120 million" are
    120000000 ("65M" and "234k" are 65000000 and 234000, "3.2.1" is compared as written), so a
    number may be written the way Chinese writes it;
  - no paragraph is missing: each section (the text under one heading) has at least as many
    paragraphs of prose in Chinese as in English. A paragraph is a block of lines between blank
    lines; code blocks, headings, tables, block quotes, rules (---), HTML and comments are not
    counted (they are compared on their own or are not prose), nor are pictures and what
    explains them: the "图：" caption, and in English the paragraph right after a picture,
    which the caption may take in. A list counts one paragraph per item, since a translator
    may or may not leave blank lines between items;
  - links between pages go to the Chinese edition of a page when it has one, and every relative
    link and #anchor resolves;
  - every **bold** of the Chinese page renders as bold on GitHub (see bold_that_does_not_render).

A contributor who cannot write Chinese lets an English edit go first by marking the Chinese page
as *behind* its English page. The stamp stays as it was, still naming the English text that the
Chinese translates; the mark, on the second line, names the English text it fell behind:

  <!-- 落后于 README.md（git blob 4567...）：英文版在译文之后有改动，本页尚未同步。看改动：... -->

and below the link to the English page the page tells its readers that the English page has
changed since this translation and is the one to trust:

  > **译文待更新**：自这篇译文完成以来，[英文原文](README.md)已有改动，本页尚未同步；内容请以英文版为准。

--mark-behind writes both lines. By hand, the mark needs only its part up to the closing
parenthesis, with the blob `git hash-object` prints for the English page; the check prints the
note word for word when it is missing. A marked page passes although its English page has
changed, and keeps passing when the English changes again, since the note stays true. Its
headings, code blocks, pictures, formulas and numbers are not compared with the English page:
the English has moved on, so they may differ for good reason, and the English text the Chinese
does translate exists only in git history (while scripts/sync_snippets.py may already have
brought the code of both pages up to date). Still checked are the things the Chinese page gets
right on its own: the links between the two languages, its other links, its captions and its
bold. Being marked is itself a problem when
  - the English page has not changed since the stamp: a stale mark, left by a stamp written by
    hand or an English edit undone, would tell readers of a change that is not there;
  - the note is missing or edited: the note is what tells the reader which page to trust;
and a note without a mark is a problem too. A translator sees what changed with the command
the mark records (git cat-file -p STAMPED_BLOB | diff - README.md), brings the page in line and
runs --stamp, which removes the mark and the note, so every comparison applies again.

  scripts/check_translations.py                   check every pair; exit 1 naming each problem
  scripts/check_translations.py --stamp FILE...   record that FILE (a .zh.md page) now
                                                  translates its English page as it stands
                                                  (and remove its mark 'behind', if any)
  scripts/check_translations.py --mark-behind FILE...
                                                  mark FILE as behind its changed English page
                                                  and show its readers the note
  scripts/check_translations.py --root DIR        check another tree (the tests use it)
"""

import argparse
import hashlib
import re
import sys
import textwrap
import unicodedata
from decimal import Decimal, InvalidOperation
from pathlib import Path

STAMP = re.compile(r"<!-- 译自 (\S+)（git blob ([0-9a-f]{40})）")
MARK_START = "<!-- 落后于 "  # the second line of a page marked as behind its English page
MARK = re.compile(r"<!-- 落后于 (\S+)（git blob ([0-9a-f]{40})）")
NOTE_START = "> **译文待更新**："  # the note a marked page shows its readers
NOTE_WITHIN = 10  # the note belongs among the first lines, where readers start
FENCE = re.compile(r"^\s*```")
HEADING = re.compile(r"^(#{1,6}) (.*)$")
IMAGE = re.compile(r"!\[(.*?)\]\(([^)\s]+)\)", re.S)
LINK = re.compile(r"(?<!!)\[(?:[^\]]|\n)*?\]\(([^)\s]+)\)")
MATH = re.compile(r"\$\$.+?\$\$|\$(?:[^$\n]|\n(?!\n))+?\$", re.S)  # inline: may wrap a line
INLINE_CODE = re.compile(r"`[^`\n]+`")
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
# A number with what scales it after it: "4.3 万", "1.2 亿", "65 million", "65M", "234k".
SCALE = {"万": 10**4, "亿": 10**8, "万亿": 10**12, "k": 10**3, "M": 10**6,
         "thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
SCALED_NUMBER = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)*)(?:\s*(万亿|万|亿)|(k|M)(?![A-Za-z])"
                           r"|\s+(thousand|million|billion|trillion)\b)?")
THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
RULE = re.compile(r"(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,}")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
CAPTION = "图："


def git_blob_id(path):
    """The id git gives the file's content (git hash-object): sha1 of "blob <size>\\0" + bytes."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def chinese_page(english):
    return english.with_name(english.name[: -len(".md")] + ".zh.md")


def english_pages(root):
    pages = [root / "README.md"]
    pages += sorted(p for p in (root / "lessons").glob("*.md") if not p.name.endswith(".zh.md"))
    for lesson in sorted((root / "lessons").glob("[0-9][0-9]_*")):
        pages += sorted(p for p in lesson.glob("*.md") if not p.name.endswith(".zh.md"))
    return [p for p in pages if p.exists()]


def stamp_line(english, chinese):
    return (
        f"<!-- 译自 {english.name}（git blob {git_blob_id(english)}）。英文版改动后，请同步修改本页，"
        f"再运行 scripts/check_translations.py --stamp {chinese.name} -->"
    )


def mark_line(english, chinese, stamped_blob, behind_blob):
    """The second line of a page marked as behind: which English text it fell behind, and for
    the translator, the command that shows what changed since the text it translates."""
    return (
        f"{MARK_START}{english.name}（git blob {behind_blob}）：英文版在译文之后有改动，本页尚未同步。"
        f"看改动：git cat-file -p {stamped_blob} | diff - {english.name}；同步后运行 "
        f"scripts/check_translations.py --stamp {chinese.name}，标记和页首的说明会一并去掉 -->"
    )


def note_line(english):
    """What a marked page tells its readers: the English page changed, and it is the one to trust."""
    return (f"{NOTE_START}自这篇译文完成以来，[英文原文]({english.name})已有改动，本页尚未同步；"
            f"内容请以英文版为准。")


class Page:
    """A markdown page split into its code blocks and the prose around them."""

    def __init__(self, path):
        self.path = path
        self.text = path.read_text(encoding="utf-8")
        self.code_blocks, prose, block, fence_indent = [], [], None, 0
        for line in self.text.split("\n"):
            if FENCE.match(line):
                if block is None:
                    block, fence_indent = [line.strip()], len(line) - len(line.lstrip())
                    continue
                self.code_blocks.append(block[0] + "\n" + textwrap.dedent("\n".join(block[1:])))
                block = None
                continue
            if block is not None:
                block.append(line[fence_indent:] if line[:fence_indent].isspace() else line)
            else:
                prose.append(line)
        self.prose = "\n".join(prose)
        self.headings = [m for m in map(HEADING.match, prose) if m]
        self.images = [m.group(2) for m in IMAGE.finditer(self.prose)]
        # A formula may wrap differently in the two pages: compare it with its spaces collapsed.
        self.math = {" ".join(m.group(0).split()) for m in MATH.finditer(INLINE_CODE.sub("", self.prose))}
        # Comments are not read: the English pages' <!-- numbers: ... --> notes for
        # scripts/check_lesson_outputs.py, the Chinese pages' stamps.
        no_math = MATH.sub(" ", re.sub(r"<!--.*?-->", " ", self.prose, flags=re.S))
        self.numbers = number_values(no_math)
        self.sections = paragraphs_by_section(self.text)

    def anchors(self):
        return {github_anchor(m.group(2)) for m in self.headings}

    def top(self, lines=6):
        """The first lines, where the link to the other language belongs."""
        return "\n".join(self.text.split("\n")[:lines])


def number_values(text):
    """The numbers of a text, each as its value (a Decimal, or the text itself for what is not
    one number, such as a section 3.2.1), mapped to how the text wrote it. Leading zeros,
    thousands separators and a scale (万, 亿, million, or M and k right after the digits, as
    in 65M) are read as what they mean."""
    values = {}
    for m in SCALED_NUMBER.finditer(text):
        written, scale = m.group(1), m.group(2) or m.group(3) or m.group(4)
        digits = written.replace(",", "") if THOUSANDS.fullmatch(written) else written
        try:
            value = Decimal(digits)
        except InvalidOperation:  # 3.2.1, 1,2: not a number, compared as written
            values.setdefault(written, m.group(0))
            continue
        if scale:
            value *= SCALE[scale]
        values.setdefault(value.normalize(), m.group(0).strip())
    return values


def paragraphs_by_section(text):
    """The paragraphs of prose under each heading, as (heading, paragraphs) in page order; the
    first section, before any heading, has heading None. See the docstring for what counts."""
    sections, heading, block, in_code = [], None, [], False
    paragraphs, after_picture = [], [False]

    def end_block():
        if block:
            picture = not IMAGE.sub("", "\n".join(block)).strip()
            if is_prose(block) and not picture and not after_picture[0]:
                paragraphs.extend(split_list(block))
            after_picture[0] = picture
        block.clear()

    for line in text.split("\n"):
        if FENCE.match(line):
            end_block()
            in_code, after_picture[0] = not in_code, False
            continue
        if in_code:
            continue
        m = HEADING.match(line)
        if m:
            end_block()
            after_picture[0] = False
            sections.append((heading, paragraphs))
            heading, paragraphs = m.group(2), []
        elif line.strip():
            block.append(line)
        else:
            end_block()
    end_block()
    sections.append((heading, paragraphs))
    return sections


def is_prose(block):
    """Not a table, a block quote, HTML or a comment, a picture's caption or a rule (---)."""
    first = block[0].lstrip()
    return not (first.startswith(("|", ">", "<", CAPTION)) or RULE.fullmatch("\n".join(block).strip()))


def split_list(block):
    """A list (a block that starts with an item) is one paragraph per item; other blocks are one
    paragraph, even when a wrapped line happens to start with "30. ", as in English prose."""
    if not LIST_ITEM.match(block[0]):
        return ["\n".join(block)]
    items = [[]]
    for line in block:
        if LIST_ITEM.match(line) and items[-1]:
            items.append([])
        items[-1].append(line)
    return ["\n".join(item) for item in items]


def github_anchor(heading):
    """The #anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens.
    Letters of any script (Chinese included) stay."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def check_pair(root, english, problems):
    chinese = chinese_page(english)
    if not chinese.exists():
        problems.append(f"{english.relative_to(root)} has no Chinese page: write "
                        f"{chinese.relative_to(root)} (see README.md, 'The Chinese edition')")
        return
    en, zh = Page(english), Page(chinese)
    name, zh_name = english.relative_to(root), chinese.relative_to(root)
    marked_behind = check_stamp(en, zh, name, zh_name, problems)
    if not marked_behind:  # a page marked as behind translates an English text that has moved on
        check_same_content(en, zh, name, zh_name, problems)
    check_captions_and_bold(zh, zh_name, problems)
    check_links(root, zh, problems, own_english=english)


def check_stamp(en, zh, name, zh_name, problems):
    """The Chinese page translates the English page as it is now, or is marked as behind it; and
    each links to the other. Returns whether the page is behind and marked, so its content
    cannot be compared with the English page's."""
    stamp = STAMP.match(zh.text.split("\n", 1)[0])
    marked_behind = False
    if not stamp or stamp.group(1) != en.path.name:
        problems.append(f"{zh_name}:1: the first line must record the English page it translates:\n"
                        f"    {stamp_line(en.path, zh.path)}")
    else:
        behind = stamp.group(2) != git_blob_id(en.path)
        marked = check_mark(en, zh, name, zh_name, stamp.group(2), behind, problems)
        marked_behind = behind and marked
        if behind and not marked:
            problems.append(
                f"{name} has changed since {zh_name} was translated from it. See what changed with\n"
                f"    git cat-file -p {stamp.group(2)} | diff - {name}\n"
                f"  bring {zh_name} in line, then run scripts/check_translations.py --stamp {zh_name}\n"
                f"  or, if you cannot write Chinese, let the English page go first: run\n"
                f"    scripts/check_translations.py --mark-behind {zh_name}\n"
                f"  and the Chinese page tells its readers that the English page is newer")
    if f"]({zh.path.name})" not in en.top():
        problems.append(f"{name}: link to the Chinese page near the top: [中文]({zh.path.name})")
    if f"]({en.path.name})" not in zh.top():
        problems.append(f"{zh_name}: link to the English page near the top: [English]({en.path.name})")
    return marked_behind


def check_mark(en, zh, name, zh_name, stamped_blob, behind, problems):
    """A mark 'behind' is well formed, is on a page that is behind, and comes with its note.
    Returns whether the page is marked."""
    lines = zh.text.split("\n")
    note = note_line(en.path)
    if len(lines) < 2 or not lines[1].startswith(MARK_START):
        if any(line.startswith(NOTE_START) for line in lines):
            problems.append(f"{zh_name}: it tells readers that it is behind {name}, but line 2 has no "
                            f"mark; remove the note with scripts/check_translations.py --stamp {zh_name}"
                            f" once the page is in step")
        return False
    mark = MARK.match(lines[1])
    if not mark or mark.group(1) != en.path.name or mark.group(2) == stamped_blob:
        # The mark's blob is the English text the page fell behind, so not the one it translates.
        problems.append(f"{zh_name}:2: a mark 'behind' must name the English page and the blob it "
                        f"fell behind, as scripts/check_translations.py --mark-behind {zh_name} writes:\n"
                        f"    {mark_line(en.path, zh.path, stamped_blob, git_blob_id(en.path))}")
    if not behind:
        problems.append(f"{zh_name} is marked as behind {name}, but {name} has not changed since "
                        f"the stamp, so the page is in step: remove the mark and the note with\n"
                        f"    scripts/check_translations.py --stamp {zh_name}")
    if note not in zh.top(NOTE_WITHIN).split("\n"):
        problems.append(f"{zh_name} is marked as behind {name}, so below the link to the English page "
                        f"it must tell its readers, word for word:\n    {note}")
    return True


def check_same_content(en, zh, name, zh_name, problems):
    """Headings, code, pictures, formulas and numbers: what a translation must not change."""
    en_levels = [len(m.group(1)) for m in en.headings]
    zh_levels = [len(m.group(1)) for m in zh.headings]
    if en_levels != zh_levels:
        problems.append(f"{zh_name}: headings differ from {name}'s: levels {en_levels} in English, "
                        f"{zh_levels} in Chinese (a section is missing or split)")
    if len(en.code_blocks) != len(zh.code_blocks):
        problems.append(f"{zh_name}: {len(zh.code_blocks)} code blocks, {name} has {len(en.code_blocks)}")
    for i, (a, b) in enumerate(zip(en.code_blocks, zh.code_blocks)):
        if a != b:
            problems.append(f"{zh_name}: code block {i + 1} differs from {name}'s; code, commands and "
                            f"output are not translated:\n    {first_difference(a, b)}")
    if en.images != zh.images:
        problems.append(f"{zh_name}: pictures {zh.images}, but {name} shows {en.images} (same order)")
    for formula in sorted(en.math - zh.math):
        problems.append(f"{zh_name}: formula {formula} of {name} is missing (formulas are not rewritten)")
    missing = sorted((en.numbers[v] for v in en.numbers.keys() - zh.numbers.keys()), key=lambda n: (len(n), n))
    if missing:
        problems.append(f"{zh_name}: numbers of {name} missing from the Chinese text: {' '.join(missing)}")
    check_paragraphs(en, zh, name, zh_name, problems)


def check_paragraphs(en, zh, name, zh_name, problems):
    """Each section has as many paragraphs in Chinese as in English, or more (a translator may
    split a long sentence's paragraph, but not leave one out)."""
    if len(en.sections) != len(zh.sections):
        return  # the headings differ, which is reported already
    for (en_heading, en_paras), (zh_heading, zh_paras) in zip(en.sections, zh.sections):
        if len(zh_paras) < len(en_paras):
            where = (f"section '{zh_heading}' ('{en_heading}' in English)" if en_heading
                     else "the lines above the first heading")
            problems.append(f"{zh_name}: {len(zh_paras)} paragraphs in {where}, {name} has "
                            f"{len(en_paras)}: a paragraph is missing (translate it from the English)")


def check_captions_and_bold(zh, zh_name, problems):
    """Every picture on a line of its own is explained in Chinese, and every bold renders."""
    for m in IMAGE.finditer(zh.prose):
        if m.start() > 0 and zh.prose[m.start() - 1] != "\n":
            continue  # a picture inside a line of text needs no paragraph of its own
        if not zh.prose[m.end() :].lstrip("\n ").startswith(CAPTION):
            problems.append(f"{zh_name}: picture {m.group(2)} must be followed by a paragraph "
                            f"starting with '{CAPTION}' that explains its axes in Chinese")
    for line in bold_that_does_not_render(zh):
        problems.append(f"{zh_name}: '**' in \"{line.strip()[:60]}\" shows as asterisks on GitHub: "
                        f"put the punctuation outside the bold (**问题**：, not **问题：**)")


def bold_that_does_not_render(page):
    """Lines with a ** that Markdown (CommonMark) cannot read as bold. A closing ** after
    punctuation must be followed by a space or punctuation, and an opening ** before punctuation
    must follow one: "**问题：**你" stays literal, since Chinese puts no space after the colon."""
    def punctuation(c):
        return unicodedata.category(c).startswith("P")

    for line in page.prose.split("\n"):
        text = INLINE_CODE.sub("``", line)
        runs = [m.start() for m in re.finditer(r"(?<!\*)\*\*(?!\*)", text)]
        for i, at in enumerate(runs):
            before = text[at - 1] if at > 0 else " "
            after = text[at + 2] if at + 2 < len(text) else " "
            opening = i % 2 == 0
            if opening and punctuation(after) and not (before.isspace() or punctuation(before)):
                yield line
            if not opening and punctuation(before) and not (after.isspace() or punctuation(after)):
                yield line


def check_links(root, page, problems, own_english=None):
    """Relative links resolve, anchors exist, and a Chinese page links to Chinese pages."""
    name = page.path.relative_to(root)
    for m in LINK.finditer(INLINE_CODE.sub("", page.prose)):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        path_part, _, anchor = target.partition("#")
        file = (page.path.parent / path_part).resolve() if path_part else page.path
        if not file.exists():
            problems.append(f"{name}: link to {target}, which does not exist")
            continue
        if page.path.name.endswith(".zh.md") and file.suffix == ".md" and not file.name.endswith(".zh.md"):
            if chinese_page(file).exists() and file != own_english:
                problems.append(f"{name}: link to {target}; link to its Chinese page "
                                f"{chinese_page(Path(path_part)).as_posix()} instead")
        if anchor and file.suffix == ".md" and anchor not in Page(file).anchors():
            problems.append(f"{name}: link to {target}: {file.name} has no heading with anchor #{anchor}")


def first_difference(a, b):
    for line_a, line_b in zip(a.split("\n"), b.split("\n")):
        if line_a != line_b:
            return f"English: {line_a!r}\n    Chinese: {line_b!r}"
    return "one block is longer than the other"


def pair_of(file):
    """The Chinese page named on the command line, and the English page beside it."""
    chinese = Path(file).resolve()
    if not chinese.name.endswith(".zh.md"):
        sys.exit(f"{file}: not a Chinese page (its name must end in .zh.md)")
    english = chinese.with_name(chinese.name[: -len(".zh.md")] + ".md")
    if not english.exists():
        sys.exit(f"{file}: its English page {english.name} does not exist")
    return chinese, english


def without_mark(lines):
    """The page's lines with the mark 'behind' and its note taken out (with the blank line that
    sets the note apart), and the blob the mark recorded, None if there was none."""
    behind_blob = None
    if len(lines) > 1 and lines[1].startswith(MARK_START):
        mark = MARK.match(lines[1])
        behind_blob = mark.group(2) if mark else None
        lines = lines[:1] + lines[2:]
    for at in reversed([i for i, line in enumerate(lines) if line.startswith(NOTE_START)]):
        start = at - 1 if at > 0 and lines[at - 1] == "" else at
        del lines[start : at + 1]
    return lines, behind_blob


def stamp(root, files):
    for file in files:
        chinese, english = pair_of(file)
        lines, behind_blob = without_mark(chinese.read_text(encoding="utf-8").split("\n"))
        if STAMP.match(lines[0]):
            lines = lines[1:]
        chinese.write_text("\n".join([stamp_line(english, chinese)] + lines), encoding="utf-8")
        cleared = ", and removed its mark 'behind' and the note" if behind_blob else ""
        print(f"stamped {file} as the translation of {english.name} at {git_blob_id(english)[:12]}{cleared}")


def mark_behind(root, files):
    """Mark each page as behind its English page: the stamp stays, naming the English text the
    Chinese translates, and the page tells its readers to trust the English page instead."""
    for file in files:
        chinese, english = pair_of(file)
        lines, behind_blob = without_mark(chinese.read_text(encoding="utf-8").split("\n"))
        stamp = STAMP.match(lines[0])
        if not stamp:
            sys.exit(f"{file}: no stamp on the first line, so nothing says which English text it "
                     f"translates; run scripts/check_translations.py --stamp {file} if it is in step")
        if stamp.group(2) == git_blob_id(english):
            sys.exit(f"{file}: {english.name} has not changed since the stamp; nothing to mark")
        # Marked before? Keep the English text it first fell behind; rewrite the mark and note.
        behind_blob = behind_blob or git_blob_id(english)
        lines.insert(1, mark_line(english, chinese, stamp.group(2), behind_blob))
        link = next((i for i, line in enumerate(lines[:6]) if f"]({english.name})" in line), None)
        if link is None:
            sys.exit(f"{file}: link to the English page near the top first: [English]({english.name})")
        lines[link + 1 : link + 1] = ["", note_line(english)]
        chinese.write_text("\n".join(lines), encoding="utf-8")
        print(f"marked {file} as behind {english.name} (translated from {stamp.group(2)[:12]}, "
              f"English now {git_blob_id(english)[:12]}); it tells its readers to read the English page")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    command = parser.add_mutually_exclusive_group()
    command.add_argument("--stamp", nargs="+", metavar="FILE", help="record the English page each FILE translates")
    command.add_argument("--mark-behind", nargs="+", metavar="FILE",
                         help="mark each FILE as behind its changed English page, for a translator to catch up")
    args = parser.parse_args()
    root = args.root.resolve()
    if args.stamp:
        stamp(root, args.stamp)
        return 0
    if args.mark_behind:
        mark_behind(root, args.mark_behind)
        return 0
    problems, pages = [], english_pages(root)
    for english in pages:
        check_pair(root, english, problems)
        check_links(root, Page(english), problems)
    for orphan in sorted(root.glob("**/*.zh.md")):
        english = orphan.with_name(orphan.name[: -len(".zh.md")] + ".md")
        if english not in pages and "build" not in orphan.relative_to(root).parts:
            problems.append(f"{orphan.relative_to(root)}: a Chinese page without an English page")
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{len(pages)} English pages, {len(problems)} problems", file=sys.stderr if problems else sys.stdout)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
