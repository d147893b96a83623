#!/usr/bin/env python3
"""scripts/mo_pairs.py, scripts/fortune_text.py and scripts/corpus.py on message catalogs, fortune
files and packages made here, offline.

The catalogs are written by a small .mo writer below (the GNU format Python's gettext reads);
the fortune files hold what Debian's do (overstrikes, escape sequences, text encoded twice,
duplicates, empty documents) and a file that is not UTF-8; the packages are built with
dpkg-deb and put into corpus.py's cache under the names apt-get download gives, so corpus.py
finds them all and never starts apt.
"""
import contextlib
import hashlib
import io
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts")
sys.path.insert(0, SCRIPTS)
import fortune_text  # noqa: E402
import mo_pairs  # noqa: E402

HEADER = "Content-Type: text/plain; charset=UTF-8\nPlural-Forms: nplurals=2; plural=(n != 1);\n"


def write_mo(path, messages):
    """A GNU .mo catalog of MESSAGES ({msgid: msgstr}, plural forms as "one\\0many"), no hash table."""
    messages = {"": HEADER, **messages}
    entries = sorted((source.encode(), target.encode()) for source, target in messages.items())
    count = len(entries)
    sources_at, targets_at = 28, 28 + 8 * count
    data_at = 28 + 16 * count
    table_sources, table_targets, data = b"", b"", b""
    for source, _ in entries:
        table_sources += struct.pack("<II", len(source), data_at + len(data))
        data += source + b"\0"
    for _, target in entries:
        table_targets += struct.pack("<II", len(target), data_at + len(data))
        data += target + b"\0"
    with open(path, "wb") as f:
        f.write(struct.pack("<7I", 0x950412DE, 0, count, sources_at, targets_at, 0, data_at))
        f.write(table_sources + table_targets + data)


def part_of(source):
    """The split mo_pairs.py promises: one English text in twenty to dev, one to test, by sha256."""
    bucket = int(hashlib.sha256(source.encode()).hexdigest(), 16) % 20
    return "dev" if bucket == 0 else "test" if bucket == 1 else "train"


def read_parts(out):
    parts = {}
    for part in ("train", "dev", "test"):
        with open(os.path.join(out, part + ".tsv"), encoding="utf-8") as f:
            parts[part] = [line.rstrip("\n").split("\t") for line in f]
    return parts


MANY = {f"Open window {i}": f"Fenster {i} öffnen" for i in range(200)}


class MoPairs(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.catalogs = os.path.join(self.dir, "locale", "xx", "LC_MESSAGES")
        os.makedirs(self.catalogs)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def make(self):
        out = os.path.join(self.dir, "out")
        with contextlib.redirect_stdout(io.StringIO()):  # the files it wrote, the catalogs it read
            made = mo_pairs.make_corpus("xx", out, os.path.join(self.dir, "locale"))
        return made, read_parts(out)

    def test_keeps_only_short_plain_pairs_and_the_first_translation(self):
        write_mo(os.path.join(self.catalogs, "a.mo"), {
            "Quit": "Beenden", " Open file ": "Datei öffnen", "Save %s": "%s speichern",
            "<b>Bold</b>": "<b>Fett</b>", "_File": "_Datei", "Same": "Same", "Two\nlines": "Zwei\nZeilen",
            "one two three four five six seven eight nine ten eleven twelve thirteen": "zu lang",
            "See https:": "Siehe https:", "42": "42 Stück", "File\0Files": "Datei\0Dateien"})
        write_mo(os.path.join(self.catalogs, "b.mo"), {"Quit": "Verlassen", "Help": "Hilfe"})
        made, parts = self.make()
        pairs = sorted(pair for lines in parts.values() for pair in lines)
        self.assertEqual(pairs, [["Help", "Hilfe"], ["Open file", "Datei öffnen"], ["Quit", "Beenden"]])
        self.assertEqual(made["read"], 2)
        self.assertEqual(made["skipped"], [])

    def test_names_the_catalogs_it_cannot_read(self):
        write_mo(os.path.join(self.catalogs, "good.mo"), {"Help": "Hilfe"})
        with open(os.path.join(self.catalogs, "broken.mo"), "wb") as f:
            f.write(b"not a catalog")
        made, _ = self.make()
        self.assertEqual(made["read"], 1)
        self.assertEqual(made["skipped"], ["broken.mo (OSError)"])

    def test_splits_by_a_hash_of_the_english_side(self):
        write_mo(os.path.join(self.catalogs, "a.mo"), MANY)
        _, parts = self.make()
        for part, lines in parts.items():
            self.assertEqual([source for source, _ in lines], sorted(source for source, _ in lines))
            for source, _ in lines:
                self.assertEqual(part_of(source), part, source)
        self.assertGreater(len(parts["dev"]), 0)
        self.assertGreater(len(parts["test"]), 0)
        # Another catalog adds pairs but moves none of those already there.
        write_mo(os.path.join(self.catalogs, "b.mo"), {"Help": "Hilfe", "Quit": "Beenden"})
        _, more = self.make()
        for part in parts:
            self.assertEqual([p for p in more[part] if p[0] not in ("Help", "Quit")], parts[part])


def build_deb(directory, name, version, files):
    """A package NAME VERSION (architecture all) holding FILES ({path: bytes, or "->target" for a
    symlink}), named as apt-get download names it."""
    root = os.path.join(directory, "root-" + name)
    os.makedirs(os.path.join(root, "DEBIAN"))
    with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
        f.write(f"Package: {name}\nVersion: {version}\nArchitecture: all\n"
                "Maintainer: Nobody <nobody@example.org>\nDescription: catalogs for a test\n")
    for path, content in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if isinstance(content, str):
            os.symlink(content[2:], full)
        else:
            with open(full, "wb") as f:
                f.write(content)
    deb = os.path.join(directory, f"{name}_{version.replace(':', '%3a')}_all.deb")
    command = ["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, deb]
    subprocess.run(command, check=True, capture_output=True)
    return deb


@unittest.skipUnless(shutil.which("dpkg-deb") and shutil.which("apt-get"), "needs Debian's dpkg-deb, apt-get")
class Corpus(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.spec = os.path.join(self.dir, "spec")
        self.cache = os.path.join(self.dir, "cache")
        self.out = os.path.join(self.dir, "out")
        debs = os.path.join(self.cache, "debs")
        os.makedirs(self.spec)
        os.makedirs(debs)
        catalogs = os.path.join(self.dir, "catalogs")
        os.makedirs(catalogs)
        write_mo(os.path.join(catalogs, "a.mo"), MANY)
        write_mo(os.path.join(catalogs, "b.mo"), {"Help": "Hilfe", "Quit": "Beenden"})
        write_mo(os.path.join(catalogs, "c.mo"), {"Cancel": "Abbrechen"})

        def mo(name):
            with open(os.path.join(catalogs, name), "rb") as f:
                return f.read()
        locale = "usr/share/locale/"
        build_deb(debs, "gf-one", "1.0", {locale + "xx/LC_MESSAGES/a.mo": mo("a.mo"),
                                          locale + "xx/LC_MESSAGES/alias.mo": "->a.mo",
                                          locale + "yy/LC_MESSAGES/c.mo": mo("c.mo"),
                                          "usr/share/doc/gf-one/c.mo": mo("c.mo")})
        build_deb(debs, "gf-two", "2:1.0-1", {locale + "xx/LC_MESSAGES/b.mo": mo("b.mo")})
        build_deb(debs, "gf-unlisted", "1.0", {locale + "xx/LC_MESSAGES/c.mo": mo("c.mo")})
        with open(os.path.join(self.spec, "xx.packages"), "w") as f:
            f.write("# test packages\ngf-one 1.0  # a comment\ngf-two 2:1.0-1\n")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_corpus(self, env=None):
        command = [sys.executable, os.path.join(SCRIPTS, "corpus.py"), "xx", "--arch", "amd64",
                   "--out", self.out, "--cache", self.cache, "--spec-dir", self.spec,
                   "--mirror", "http://offline.invalid"]  # never asked: every package is in the cache
        return subprocess.run(command, capture_output=True, text=True, env=env)

    def manifest(self):
        with open(os.path.join(self.out, "xx", "MANIFEST"), encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f if not line.startswith("#")]

    def expect(self, lines):
        with open(os.path.join(self.spec, "xx.amd64.manifest"), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))

    def test_manifest_names_packages_catalogs_counts_and_hashes(self):
        result = self.run_corpus()
        self.assertEqual(result.returncode, 1, result.stderr)  # nothing to compare with yet
        self.assertIn("no committed manifest", result.stdout)
        lines = self.manifest()

        def sha256(path):
            with open(path, "rb") as f:
                return hashlib.sha256(f.read()).hexdigest()
        debs = os.path.join(self.cache, "debs")
        parts = read_parts(os.path.join(self.out, "xx"))
        self.assertEqual(lines[:2], ["language xx", "architecture amd64"])
        self.assertEqual(lines[3:], [
            f"package gf-one 1.0 all sha256={sha256(os.path.join(debs, 'gf-one_1.0_all.deb'))}",
            f"package gf-two 2:1.0-1 all sha256={sha256(os.path.join(debs, 'gf-two_2%3a1.0-1_all.deb'))}",
            f"catalog a.mo gf-one sha256={sha256(os.path.join(self.cache, 'locale/xx/LC_MESSAGES/a.mo'))}",
            "catalog alias.mo gf-one -> a.mo",
            f"catalog b.mo gf-two sha256={sha256(os.path.join(self.cache, 'locale/xx/LC_MESSAGES/b.mo'))}",
            "catalogs read 3", "catalogs skipped 0",
            *(f"pairs {part} {len(parts[part])}" for part in ("train", "dev", "test")),
            *(f"file {part}.tsv sha256={sha256(os.path.join(self.out, 'xx', part + '.tsv'))}"
              for part in ("train", "dev", "test"))])
        self.assertEqual(sum(len(lines) for lines in parts.values()), len(MANY) + 2)  # c.mo is not taken

    def test_says_identical_or_shows_the_differences(self):
        self.run_corpus()
        lines = self.manifest()
        self.expect(lines)
        result = self.run_corpus()
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("xx: identical to the corpus the README reports", result.stdout)

        # Another version of a package, the same catalogs: still identical, and said so.
        self.expect([line.replace("gf-two 2:1.0-1", "gf-two 2:0.9-1") for line in lines])
        result = self.run_corpus()
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("identical to the corpus", result.stdout)
        self.assertIn("package gf-two: expected 2:0.9-1 all", result.stdout)

        # Other pairs: the differing lines are printed and the exit status says so.
        self.expect([line.replace("pairs train ", "pairs train 1") if line.startswith("pairs train") else line
                     for line in lines])
        result = self.run_corpus()
        self.assertEqual(result.returncode, 1)
        self.assertIn("xx: DIFFERS from the corpus the README reports", result.stdout)
        self.assertIn("pairs train: expected 1", result.stdout)

    def test_says_what_is_missing(self):
        bin_dir = os.path.join(self.dir, "bin")
        os.makedirs(bin_dir)
        os.symlink(sys.executable, os.path.join(bin_dir, "python3"))
        result = self.run_corpus(env={"PATH": bin_dir})
        self.assertEqual(result.returncode, 2)
        self.assertIn("apt-get not found", result.stderr)

        with open(os.path.join(self.spec, "xx.packages"), "a") as f:
            f.write("two words here\n")
        result = self.run_corpus()
        self.assertEqual(result.returncode, 2)
        self.assertIn("xx.packages:4: expected NAME VERSION, got 'two words here'", result.stderr)


# Fortune files as Debian's are: one that ends without a separator, "%" lines with spaces after,
# two separators in a row (an empty document), a document in two files, CRLF line ends, trailing
# blanks, a bell, ANSI colours (one sequence interrupted by another, one written "^[[32m", as in
# fortunes-zh's chinese; other caret notation is text, as in fortunes' linux), an underline and
# an accent made by backspacing, a right quote encoded twice, twice over (as in fortunes' law),
# a pound sign encoded twice (as in pets), and a file in GB2312, not UTF-8.
ALPHA = ("Plain first.\n%\n%\nHonor'\be de Balzac wrote *___\b\b\bnot* this.\r\n%   \n"
         "^[[32mBell\a and \x1b[32mcolour\x1b[m, \x1b[35;1mtwice\x1b[;\x1b[34;1mm here.   \n\n%\n"
         "Don\u00c3\u00a2\u00c2\u0080\u00c2\u0099t pay \u00c2\u00a35.\n%\n").encode()
BETA = ("Plain first.\n%\n\n  Indented, kept.\t\n\n  Second paragraph.\n%\nKeys ^[[D^[[D stay.\n%\n"
        + "".join(f"Fortune number {i}.\n%\n" for i in range(60))).encode()
ZETA = "Last file, no final separator".encode()
GAMMA = "中文\n%\n".encode("gb2312")

# What a reader sees of them, in file order (alpha, beta, zeta; gamma is left out), each once.
CLEAN = ["Plain first.", "Honoré de Balzac wrote *not* this.", "Bell and colour, twice here.",
         "Don\u2019t pay \u00a35.", "  Indented, kept.\n\n  Second paragraph.", "Keys ^[[D^[[D stay.",
         *(f"Fortune number {i}." for i in range(60)), "Last file, no final separator"]


def write_fortunes(directory):
    """The fortune files above, with a strfile index and a .u8 link beside one, as Debian has them."""
    for name, data in (("alpha", ALPHA), ("beta", BETA), ("gamma", GAMMA), ("zeta", ZETA),
                       ("alpha.dat", b"\0\0\0\2 an index, not text")):
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    os.symlink("alpha", os.path.join(directory, "alpha.u8"))


def expected_parts():
    """The three files CLEAN must give: each document where its sha256 sends it, in file order."""
    texts = {part: "" for part in ("train", "dev", "test")}
    for document in CLEAN:
        texts[part_of(document)] += document + "\n%\n"
    return texts


def read_texts(out):
    texts = {}
    for part in ("train", "dev", "test"):
        with open(os.path.join(out, part + ".txt"), "rb") as f:
            texts[part] = f.read().decode("utf-8")  # strictly: an invalid byte fails the test
    return texts


class FortuneText(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.fortunes = os.path.join(self.dir, "fortunes")
        os.makedirs(self.fortunes)
        write_fortunes(self.fortunes)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def make(self):
        out = os.path.join(self.dir, "out")
        with contextlib.redirect_stdout(io.StringIO()):
            made = fortune_text.make_corpus(self.fortunes, out)
        return made, read_texts(out)

    def test_keeps_the_text_a_reader_sees_once_each_in_file_order(self):
        made, texts = self.make()
        self.assertEqual(texts, expected_parts())
        self.assertEqual(made["read"], 3)
        self.assertEqual(made["skipped"], ["gamma (not UTF-8 at byte 0)"])
        self.assertEqual(made["documents"], len(CLEAN) + 2)
        self.assertEqual(made["dropped"], {"empty": 1, "duplicate": 1})
        self.assertEqual(made["changed"], {"twice-encoded": 1, "overstrike": 1, "control": 1,
                                           "trailing-whitespace": 3})
        self.assertGreater(len(texts["dev"]), 0)
        self.assertGreater(len(texts["test"]), 0)
        for text in texts.values():
            self.assertNotIn("\r", text)
            self.assertFalse([c for c in text if c not in "\n\t" and ord(c) < 32])

    def test_counts_what_each_part_holds(self):
        made, texts = self.make()
        for part, text in texts.items():
            documents = [document for document in CLEAN if part_of(document) == part]
            self.assertEqual(made["parts"][part], {
                "documents": len(documents),
                "lines": sum(len(document.split("\n")) for document in documents),
                "words": sum(len(document.split()) for document in documents),
                "characters": len(text), "distinct-characters": len(set(text)),
                "bytes": len(text.encode())})

    def test_a_document_keeps_its_part_when_others_come(self):
        _, texts = self.make()
        with open(os.path.join(self.fortunes, "omega"), "w", encoding="utf-8") as f:
            f.write("".join(f"Another fortune {i}.\n%\n" for i in range(40)))
        _, more = self.make()
        for part in texts:
            kept = "".join(document + "\n%\n" for document in more[part].split("\n%\n")[:-1]
                           if not document.startswith("Another fortune"))
            self.assertEqual(kept, texts[part])

    def test_prints_overstrikes_as_a_printer_does(self):
        for struck, shown in (("_\bN", "N"), ("I\bI", "I"), ("__\b\bis", "is"), ("'\be", "é"),
                              ("e\b'", "é"), ("^\bu", "û"), (",\bc", "ç"), ('"\bu', "ü"), ("`\ba", "à"),
                              ("'\bq", "q"), ("\bx", "x"), ("ab\b\bcd", "cd")):
            self.assertEqual(fortune_text.overstrike(struck), shown, repr(struck))


@unittest.skipUnless(shutil.which("dpkg-deb") and shutil.which("apt-get"), "needs Debian's dpkg-deb, apt-get")
class TextCorpus(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.spec = os.path.join(self.dir, "spec")
        self.cache = os.path.join(self.dir, "cache")
        self.out = os.path.join(self.dir, "out")
        self.debs = os.path.join(self.cache, "debs")
        os.makedirs(self.spec)
        os.makedirs(self.debs)
        fortunes = os.path.join(self.dir, "fortunes")
        os.makedirs(fortunes)
        write_fortunes(fortunes)

        def data(name):
            with open(os.path.join(fortunes, name), "rb") as f:
                return f.read()
        games = "usr/share/games/fortunes/"
        build_deb(self.debs, "gf-fortunes", "1:2.0-1", {
            games + "alpha": data("alpha"), games + "alpha.dat": data("alpha.dat"),
            games + "alpha.u8": "->alpha", games + "gamma": data("gamma"), games + "zeta": data("zeta"),
            games + "off/rude": b"Not taken: not directly in the directory.\n%\n",
            "usr/share/doc/gf-fortunes/notes": b"Not taken: not in the directory.\n%\n"})
        build_deb(self.debs, "gf-fortunes-min", "2:2.0-1", {games + "beta": data("beta")})
        with open(os.path.join(self.spec, "yy.packages"), "w") as f:
            f.write("# test fortunes\nfortune-files: usr/share/games/fortunes/\n"
                    "gf-fortunes 1:2.0-1\ngf-fortunes-min 2:2.0-1  # beta\n")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_corpus(self, *names, arch="amd64", out=None):
        command = [sys.executable, os.path.join(SCRIPTS, "corpus.py"), *names, "--arch", arch,
                   "--out", out or self.out, "--cache", self.cache, "--spec-dir", self.spec,
                   "--mirror", "http://offline.invalid"]  # never asked: every package is in the cache
        return subprocess.run(command, capture_output=True, text=True)

    def manifest(self, out=None):
        with open(os.path.join(out or self.out, "yy", "MANIFEST"), encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f if not line.startswith("#")]

    def test_writes_the_clean_text_and_a_manifest_of_it(self):
        result = self.run_corpus("yy")
        self.assertEqual(result.returncode, 1, result.stderr)  # nothing to compare with yet
        self.assertIn("no committed manifest", result.stdout)
        self.assertIn("yy.all.manifest", result.stdout)  # every package is Architecture: all
        texts = read_texts(os.path.join(self.out, "yy"))
        self.assertEqual(texts, expected_parts())

        def sha256(path):
            with open(path, "rb") as f:
                return hashlib.sha256(f.read()).hexdigest()
        sources = os.path.join(self.cache, "text", "yy")
        self.assertEqual(sorted(os.listdir(sources)), ["alpha", "beta", "gamma", "zeta"])
        lines = self.manifest()
        self.assertEqual(lines[:2], ["text yy", "architecture all"])
        sizes = {}
        for part, text in texts.items():
            separators = text.count("\n%\n")
            sizes[part] = {"documents": separators, "lines": text.count("\n") - separators,
                           "words": len(text.split()) - separators, "characters": len(text),
                           "distinct-characters": len(set(text)), "bytes": len(text.encode())}
        fortunes_deb = os.path.join(self.debs, "gf-fortunes_1%3a2.0-1_all.deb")
        fortunes_min_deb = os.path.join(self.debs, "gf-fortunes-min_2%3a2.0-1_all.deb")
        self.assertEqual(lines[3:], [
            f"package gf-fortunes 1:2.0-1 all sha256={sha256(fortunes_deb)}",
            f"package gf-fortunes-min 2:2.0-1 all sha256={sha256(fortunes_min_deb)}",
            *(f"source {name} {package} sha256={hashlib.sha256(content).hexdigest()}"
              for name, package, content in (
                  ("alpha", "gf-fortunes", ALPHA), ("beta", "gf-fortunes-min", BETA),
                  ("gamma", "gf-fortunes", GAMMA), ("zeta", "gf-fortunes", ZETA))),
            "sources read 3", "sources skipped 1 gamma (not UTF-8 at byte 0)",
            f"documents read {len(CLEAN) + 2}", "dropped empty 1", "dropped duplicate 1",
            "changed twice-encoded 1", "changed overstrike 1", "changed control 1",
            "changed trailing-whitespace 3",
            *(f"{measure} {part} {sizes[part][measure]}"
              for measure in ("documents", "lines", "words", "characters", "distinct-characters", "bytes")
              for part in ("train", "dev", "test")),
            *(f"file {part}.txt sha256={sha256(os.path.join(self.out, 'yy', part + '.txt'))}"
              for part in ("train", "dev", "test"))])

    def test_one_manifest_for_every_architecture(self):
        self.run_corpus("yy")
        lines = self.manifest()
        with open(os.path.join(self.spec, "yy.all.manifest"), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        other_out = os.path.join(self.dir, "out-arm64")
        for arch, out in (("amd64", self.out), ("arm64", other_out)):
            result = self.run_corpus("yy", arch=arch, out=out)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertIn("yy: identical to the corpus the README reports", result.stdout)
        self.assertEqual(self.manifest(other_out), lines)
        self.assertEqual(read_texts(os.path.join(other_out, "yy")), read_texts(os.path.join(self.out, "yy")))

        # Another text: the differing counts and files are printed and the exit status says so.
        with open(os.path.join(self.spec, "yy.all.manifest"), "w", encoding="utf-8") as f:
            f.write("".join(line.replace("dropped duplicate 1", "dropped duplicate 2") + "\n"
                            for line in lines))
        result = self.run_corpus("yy")
        self.assertEqual(result.returncode, 1)
        self.assertIn("yy: DIFFERS from the corpus the README reports", result.stdout)
        self.assertIn("dropped duplicate: expected 2, made 1", result.stdout)

    def test_a_language_and_a_text_in_one_run(self):
        catalogs = os.path.join(self.dir, "catalogs")
        os.makedirs(catalogs)
        write_mo(os.path.join(catalogs, "a.mo"), MANY)
        with open(os.path.join(catalogs, "a.mo"), "rb") as f:
            build_deb(self.debs, "gf-one", "1.0", {"usr/share/locale/xx/LC_MESSAGES/a.mo": f.read()})
        with open(os.path.join(self.spec, "xx.packages"), "w") as f:
            f.write("gf-one 1.0\n")
        result = self.run_corpus("xx", "yy")
        self.assertEqual(result.returncode, 1, result.stderr)  # no committed manifests
        self.assertIn("take out their catalogs and fortune files", result.stdout)
        pairs = read_parts(os.path.join(self.out, "xx"))
        self.assertEqual(sum(len(lines) for lines in pairs.values()), len(MANY))
        self.assertEqual(read_texts(os.path.join(self.out, "yy")), expected_parts())
        with open(os.path.join(self.out, "xx", "MANIFEST"), encoding="utf-8") as f:
            self.assertNotIn("gf-fortunes", f.read())


if __name__ == "__main__":
    unittest.main()
