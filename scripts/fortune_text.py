"""Plain text for next-token training from fortune files: what scripts/corpus.py makes of them.

A fortune file (fortune(6), strfile(1)) is UTF-8 text whose documents (fortunes) are separated
by lines holding only "%". Debian's fortunes, fortunes-min and fortunes-zh packages hold such
files for a terminal: some words are underlined or accented by overstriking (a character,
backspace, another character), the Chinese ones are coloured with ANSI escape sequences, and a
few English ones hold text encoded twice. This module reads every file of a directory, keeps
the text a reader sees and nothing else, and writes train, dev and test files in the same
format, so each is a fortune file again:

    text of the first document
    %
    text of the second document
    %

The output depends only on the files: they are read in sorted order, documents in file order,
duplicates are dropped (the first kept), and each document goes to dev or test by a hash of its
text, as mo_pairs.py splits pairs (docs/corpus.md). Its only user is scripts/corpus.py.
"""
import hashlib
import os
import re
import unicodedata

# The fortunes overstrike a letter with one of these to accent it on a printer ("'\be" prints
# as e with an acute accent, "^\bu" as u with a circumflex, ",\bc" as c with a cedilla): the
# combining mark each one stands for, so the letter keeps its accent when the backspace goes.
ACCENTS = {"'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303", ",": "\u0327"}

# UTF-8 bytes read as Latin-1 and written again as UTF-8 (a right quote, e2 80 99, becomes the
# three characters a-circumflex, U+0080, U+0099): one such character sequence each, which is
# the UTF-8 encoding of a single character when taken back to bytes.
TWICE_ENCODED = re.compile("[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")

# An ANSI escape sequence (ESC [ parameters letter), the colours of the Chinese fortunes; one
# that another interrupts before its final letter ("ESC [; ESC [34;1m m") is taken whole, with
# the letter after the inner one, so no stray "m" is left in the text.
ESCAPE_SEQUENCE = re.compile(r"\x1b\[[0-9;]*(?:\x1b\[[0-9;]*[A-Za-z])*[A-Za-z]?")

# A colour written in caret notation, "^[" for ESC: three lines of fortunes-zh's chinese open a
# title so ("^[[32m" before the title, a real ESC [m after it). The printable twin of the above.
CARET_COLOUR = re.compile(r"\^\[\[[0-9;]*m")

# The three files, in the order the manifest lists them (part_of says which a document goes to).
PARTS = ("train", "dev", "test")


def part_of(document):
    """dev, test or train, by the sha256 of the document's UTF-8 text: a document stays in its
    part whatever other documents come or go, and no Python version or random seed matters."""
    bucket = int(hashlib.sha256(document.encode("utf-8")).hexdigest(), 16) % 20
    return "dev" if bucket == 0 else "test" if bucket == 1 else "train"


def undo_twice_encoded(line):
    """LINE with each character encoded twice put back, and again for one encoded three times."""
    def original(match):
        try:
            return match.group().encode("latin-1").decode("utf-8")
        except UnicodeDecodeError:  # bytes shaped like UTF-8 that are not (an overlong form)
            return match.group()
    while True:
        repaired = TWICE_ENCODED.sub(original, line)
        if repaired == line:
            return line
        line = repaired


def overstrike(line):
    """LINE as a printer shows it, the backspaces gone: each column's characters are struck on
    the same place, so an underline ("_\\bx", "___\\b\\b\\bnot") keeps the letters, a bold
    letter ("I\\bI") is one letter, and an accent struck on a letter gives the accented letter."""
    columns, at = [], 0
    for char in line:
        if char == "\b":
            at = max(at - 1, 0)
            continue
        if at < len(columns):
            columns[at].append(char)
        else:
            columns.append([char])
        at += 1
    return "".join(struck(chars) for chars in columns)


def struck(chars):
    """The one character the strokes CHARS of a column show (see overstrike): the last one
    struck, as on a screen, but for an underline under it and an accent struck on it."""
    shown = [c for c in chars if c != "_"] or ["_"]
    letters = [c for c in shown if c not in ACCENTS]
    if not letters:
        return shown[-1]
    marks = "".join(dict.fromkeys(ACCENTS[c] for c in shown if c in ACCENTS))
    accented = unicodedata.normalize("NFC", letters[-1] + marks)
    return accented if len(accented) == 1 else letters[-1]  # no such accented letter: the letter


def clean_line(line, changed):
    """The text a reader sees of one line: twice-encoded characters put back, overstrikes
    printed, escape sequences (and colours in caret notation) and other control characters (but
    tab) dropped, trailing whitespace (invisible) dropped. Counts in CHANGED the lines each step
    changed."""
    steps = (("twice-encoded", undo_twice_encoded),
             ("overstrike", lambda text: overstrike(text) if "\b" in text else text),
             ("control", lambda text: "".join(c for c in ESCAPE_SEQUENCE.sub("", CARET_COLOUR.sub("", text))
                                              if c == "\t" or unicodedata.category(c) != "Cc")),
             ("trailing-whitespace", str.rstrip))
    for name, step in steps:
        done = step(line)
        if done != line:
            changed[name] += 1
            line = done
    return line


def read_documents(text, changed):
    """The documents of one fortune file's TEXT: its lines cleaned (so a "%" followed by spaces
    separates too), split at the lines holding only "%", each without the empty lines it starts
    or ends with. Two separators in a row give an empty document, "", for the caller to count."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.endswith("\n"):
        text = text[:-1]  # the newline that ends the last line, not an empty line after it
    documents, current = [], []
    for line in text.split("\n"):
        line = clean_line(line, changed)
        if line == "%":
            documents.append(current)
            current = []
        else:
            current.append(line)
    if current:  # nothing after the file's last separator is no document
        documents.append(current)
    texts = []
    for lines in documents:
        while lines and not lines[0]:
            lines.pop(0)
        while lines and not lines[-1]:
            lines.pop()
        texts.append("\n".join(lines))
    return texts


def fortune_files(directory):
    """The fortune files of DIRECTORY in sorted order: every file but strfile's .dat indexes."""
    return sorted(name for name in os.listdir(directory)
                  if not name.endswith(".dat") and os.path.isfile(os.path.join(directory, name))
                  and not os.path.islink(os.path.join(directory, name)))


def sizes(documents, text):
    """What one part holds: documents; lines, words (split at whitespace) of the documents,
    the "%" lines not counted; characters, distinct characters and bytes of the whole file."""
    return {"documents": len(documents),
            "lines": sum(document.count("\n") + 1 for document in documents),
            "words": sum(len(document.split()) for document in documents),
            "characters": len(text), "distinct-characters": len(set(text)),
            "bytes": len(text.encode("utf-8"))}


def make_corpus(directory, out):
    """Writes OUT/{train,dev,test}.txt from the fortune files in DIRECTORY and prints what it
    wrote; returns the files read, those skipped (with why), the documents read, those dropped,
    the lines each cleaning step changed and the sizes of each part."""
    changed = {"twice-encoded": 0, "overstrike": 0, "control": 0, "trailing-whitespace": 0}
    read, skipped, documents = [], [], []
    for name in fortune_files(directory):
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:  # guessing another encoding could garble it silently
            skipped.append(f"{name} (not UTF-8 at byte {e.start})")
            continue
        read.append(name)
        documents.extend(read_documents(text, changed))
    kept, seen, empty = [], set(), 0
    for document in documents:
        if not document:  # its lines were all blank, or two separators were in a row
            empty += 1
        elif document not in seen:
            seen.add(document)
            kept.append(document)
    parts = {part: [] for part in PARTS}
    for document in kept:
        parts[part_of(document)].append(document)
    os.makedirs(out, exist_ok=True)
    made = {}
    for part, part_documents in parts.items():
        text = "".join(document + "\n%\n" for document in part_documents)
        path = os.path.join(out, part + ".txt")
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        made[part] = sizes(part_documents, text)
        print(f"{path}: {len(part_documents)} documents, {made[part]['bytes']} bytes")
    print(f"from {len(read)} fortune files in {directory}")
    if skipped:
        print(f"skipped {len(skipped)}: {', '.join(skipped)}")
    return {"read": len(read), "skipped": skipped, "documents": len(documents),
            "dropped": {"empty": empty, "duplicate": len(documents) - empty - len(kept)},
            "changed": changed, "parts": made}
