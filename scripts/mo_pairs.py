#!/usr/bin/env python3
"""Real sentence pairs from the machine itself: the translations of program messages.

Every Debian system holds human translations of its programs' messages as gettext catalogs,
/usr/share/locale/LANG/LC_MESSAGES/*.mo: English messages paired with their translation. This
script collects the short, plain ones (no format directives, no markup, one line, 1 to
--max-words words) into train, dev and test files of SOURCE<TAB>TARGET lines, the format
`transformer train --task translate` reads:

    python3 scripts/mo_pairs.py de --out out/de
    transformer train --task translate --data out/de/train.tsv --dev out/de/dev.tsv ...

The output depends only on the catalogs installed: files are read in sorted order, duplicates
are dropped, and each pair goes to dev or test by a hash of its English side. The corpus the
README reports, the same on any Debian 12 whatever is installed, is made by scripts/corpus.py
from a fixed list of packages, with this script's filters and split (docs/corpus.md).
"""
import argparse
import gettext
import glob
import hashlib
import os
import re
import sys

# Text a translation model cannot learn from a message catalog: format directives (%s, {0},
# $1), markup, keyboard mnemonics (_File), escapes, and anything that is not plain words.
NOT_PLAIN = re.compile(r"[%{}<>&_\\|@#=\[\]$^~*`]|\s{2,}|https?:")


def plain(text, max_words):
    words = text.split()
    return (0 < len(words) <= max_words and "\n" not in text and "\t" not in text
            and not NOT_PLAIN.search(text) and any(c.isalpha() for c in text))


def read_catalogs(files, max_words):
    """The plain pairs of the catalogs, the first translation of an English text kept, and the
    names of the catalogs Python's reader refuses (e.g. an odd plural header)."""
    pairs = {}
    unreadable = []
    for path in files:
        try:
            with open(path, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog
        except Exception as e:  # a catalog Python's reader refuses (e.g. an odd plural header)
            unreadable.append(f"{os.path.basename(path)} ({type(e).__name__})")
            continue
        for source, target in catalog.items():
            if not isinstance(source, str) or not isinstance(target, str):
                continue  # plural forms are keyed by tuples
            source, target = source.strip(), target.strip()
            if source == target or not plain(source, max_words) or not plain(target, 2 * max_words):
                continue
            pairs.setdefault(source, target)
    return pairs, unreadable


def split(pairs):
    """train, dev and test lines: one English text in twenty goes to dev and one to test, chosen
    by a hash of the English text, so a pair stays where it is when other catalogs come or go."""
    parts = {"train": [], "dev": [], "test": []}
    for source in sorted(pairs):
        bucket = int(hashlib.sha256(source.encode()).hexdigest(), 16) % 20
        part = "dev" if bucket == 0 else "test" if bucket == 1 else "train"
        parts[part].append(f"{source}\t{pairs[source]}\n")
    return parts


def make_corpus(lang, out, locale_dir="/usr/share/locale", max_words=12):
    """Writes OUT/{train,dev,test}.tsv and prints what it wrote; returns the numbers of catalogs
    read and skipped, the skipped ones' names and the pairs in each part."""
    files = sorted(glob.glob(os.path.join(locale_dir, lang, "LC_MESSAGES", "*.mo")))
    if not files:
        sys.exit(f"no catalogs in {locale_dir}/{lang}/LC_MESSAGES")
    pairs, unreadable = read_catalogs(files, max_words)
    os.makedirs(out, exist_ok=True)
    parts = split(pairs)
    for part, lines in parts.items():
        with open(os.path.join(out, part + ".tsv"), "w", encoding="utf-8") as f:
            f.writelines(lines)
        print(f"{os.path.join(out, part + '.tsv')}: {len(lines)} pairs")
    print(f"from {len(files) - len(unreadable)} catalogs in {locale_dir}/{lang}")
    if unreadable:
        print(f"skipped {len(unreadable)} that could not be read: {', '.join(unreadable)}")
    return {"read": len(files) - len(unreadable), "skipped": unreadable,
            "pairs": {part: len(lines) for part, lines in parts.items()}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lang", help="target language code, e.g. de, fr, es")
    parser.add_argument("--out", required=True, help="directory for train.tsv, dev.tsv, test.tsv")
    parser.add_argument("--max-words", type=int, default=12)
    parser.add_argument("--locale-dir", default="/usr/share/locale")
    args = parser.parse_args()
    make_corpus(args.lang, args.out, args.locale_dir, args.max_words)


if __name__ == "__main__":
    main()
