#!/usr/bin/env python3
"""Near copies of held-out messages in the training file of a corpus made by scripts/corpus.py.

The corpus splits its pairs by a hash of the English text, so no English text is in two parts;
but program messages come in families ("Cannot open file", "Cannot open directory"), and a test
message one word away from a training message is mostly a test of memory. This counts them:

    python3 scripts/near_duplicates.py out/de [--min-words 4] [--write DIR]

For the test and dev files of the corpus folder it prints how many messages have at least
--min-words English words (default 4), and how many of those have a near copy in train.tsv.

Definitions, exactly:
  - a message's words are its English side (the first column) split at whitespace, compared
    as they are: case and punctuation count ("File" is not "file", "file." is not "file");
  - a near copy is a training message whose words are at most one word-level edit away: one
    word substituted, one inserted or one deleted (a word-level Levenshtein distance of 0 or
    1; 0 cannot happen, the split keeps identical English texts together);
  - messages of fewer than --min-words words are neither counted nor tested: one word away from
    a message of one to three words says little.

Every training message is indexed under its words, and under each "words with word i deleted"
key, once with the position i and once without. A held-out message is then one word from it
when its words are a training message's with one word deleted (it lost a word), when one of
its own deleted-word keys is a training message's words (it gained a word), or when they share
a deleted-word key at the same position (a word was substituted). So it takes a few dictionary
look-ups per word instead of a comparison with every training message: well under a second for
the real corpora.

--write DIR writes, for each part, the messages of at least --min-words words with and without
a near copy as PART.near.tsv and PART.far.tsv (the lines as they are in the corpus), so that
`transformer eval` can score them on their own. scripts/reproduce_real_text.py uses this
module. Only the Python standard library is used.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

MIN_WORDS = 4


def words(text: str) -> tuple[str, ...]:
    """The words of an English text: split at whitespace, nothing else changed."""
    return tuple(text.split())


def read_lines(path: Path) -> list[str]:
    """The lines of a SOURCE<TAB>TARGET file, without their line ends (blank lines dropped)."""
    with open(path, encoding="utf-8", newline="") as f:
        lines = [line.rstrip("\n").rstrip("\r") for line in f]
    return [line for line in lines if line]


def column(line: str, number: int) -> str:
    """Column number (0: the source, 1: the target) of a SOURCE<TAB>TARGET line."""
    fields = line.split("\t")
    return fields[number] if number < len(fields) else ""


def source(line: str) -> str:
    return column(line, 0)


def within_one_word(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether word-level edit distance between a and b is at most 1, computed directly (the
    slow, obvious definition that NearIndex must agree with; the tests compare the two)."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) <= 1
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return any(longer[:i] + longer[i + 1:] == shorter for i in range(len(longer)))


def deleted(w: tuple[str, ...], i: int) -> tuple[str, ...]:
    return w[:i] + w[i + 1:]


class NearIndex:
    """The training messages, indexed so that a message one word away is found by look-ups."""

    def __init__(self, training_texts: list[str]):
        self.texts = training_texts
        self.whole: dict[tuple[str, ...], int] = {}  # words -> first training message
        self.lost: dict[tuple[str, ...], int] = {}  # words with any one word deleted
        self.swapped: dict[tuple[int, tuple[str, ...]], int] = {}  # (i, words minus word i)
        for n, text in enumerate(training_texts):
            w = words(text)
            self.whole.setdefault(w, n)
            for i in range(len(w)):
                key = deleted(w, i)
                self.lost.setdefault(key, n)
                self.swapped.setdefault((i, key), n)

    def near_copy(self, text: str) -> int | None:
        """The index of a training message at most one word from text, or None."""
        w = words(text)
        if w in self.whole:  # the same words (only possible when whitespace differs)
            return self.whole[w]
        if w in self.lost:  # a training message with one more word
            return self.lost[w]
        for i in range(len(w)):
            key = deleted(w, i)
            if key in self.whole:  # a training message with one word fewer
                return self.whole[key]
            if (i, key) in self.swapped:  # the same words but the i-th
                return self.swapped[(i, key)]
        return None


@dataclasses.dataclass
class PartCount:
    """One held-out part: its messages of at least min_words words, with and without a near
    copy (lines as in the file, each near one with the training message it is close to)."""

    name: str
    messages: int
    min_words: int
    near: list[tuple[str, str]]  # (held-out line, training line)
    far: list[str]

    @property
    def long(self) -> int:
        return len(self.near) + len(self.far)

    @property
    def share(self) -> float:
        return len(self.near) / self.long if self.long else 0.0

    def summary(self) -> str:
        return (f"{self.name}: {self.messages} messages, {self.long} of {self.min_words} or more "
                f"English words, {len(self.near)} of them ({100 * self.share:.1f}%) at most one "
                f"word from a training message, {len(self.far)} with no near copy")


def count_part(name: str, lines: list[str], index: NearIndex, training_lines: list[str],
               min_words: int = MIN_WORDS, english: int = 0) -> PartCount:
    """Sorts the held-out lines of min_words English words or more (English in column
    `english`) into those with a near copy among the indexed training lines and the others."""
    near, far = [], []
    for line in lines:
        text = column(line, english)
        if len(words(text)) < min_words:
            continue
        n = index.near_copy(text)
        if n is None:
            far.append(line)
        else:
            near.append((line, training_lines[n]))
    return PartCount(name, len(lines), min_words, near, far)


def count_corpus(folder: Path, parts: tuple[str, ...] = ("test", "dev"),
                 min_words: int = MIN_WORDS, english: int = 0) -> dict[str, PartCount]:
    """PartCount for each held-out part of a corpus folder (train.tsv, test.tsv, dev.tsv);
    english is the column of the English side (1 for a corpus into English)."""
    training = read_lines(folder / "train.tsv")
    index = NearIndex([column(line, english) for line in training])
    return {part: count_part(part, read_lines(folder / f"{part}.tsv"), index, training,
                             min_words, english)
            for part in parts}


def write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.writelines(line + "\n" for line in lines)


def write_split(count: PartCount, folder: Path) -> tuple[Path, Path]:
    """PART.near.tsv and PART.far.tsv in folder; returns their paths."""
    near, far = folder / f"{count.name}.near.tsv", folder / f"{count.name}.far.tsv"
    write_lines(near, [line for line, _ in count.near])
    write_lines(far, count.far)
    return near, far


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("corpus", type=Path, help="a corpus folder: train.tsv, dev.tsv, test.tsv")
    parser.add_argument("--min-words", type=int, default=MIN_WORDS,
                        help="count messages of at least this many English words (default 4)")
    parser.add_argument("--write", type=Path, metavar="DIR",
                        help="write PART.near.tsv and PART.far.tsv for each part here")
    parser.add_argument("--english", type=int, choices=(0, 1), default=0,
                        help="the column of the English side: 0 (the source, default) or 1 (a "
                             "corpus into English)")
    parser.add_argument("--show", type=int, default=0, metavar="N",
                        help="print the first N near copies of each part beside their training "
                             "message")
    args = parser.parse_args(argv)
    for part in ("train", "dev", "test"):
        if not (args.corpus / f"{part}.tsv").is_file():
            print(f"{args.corpus / f'{part}.tsv'} does not exist: make the corpus first "
                  "(python3 scripts/corpus.py de zh_CN)", file=sys.stderr)
            return 2
    for count in count_corpus(args.corpus, min_words=args.min_words, english=args.english).values():
        print(count.summary())
        for line, training in count.near[:args.show]:
            print(f"  {column(line, args.english)}\n    train: {column(training, args.english)}")
        if args.write:
            for path in write_split(count, args.write):
                print(f"  wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
