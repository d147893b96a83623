#!/usr/bin/env python3
"""scripts/near_duplicates.py and scripts/reproduce_real_text.py on small inputs made here.

The near-copy count is checked on a made-up corpus whose answers are known (a substitution, an
insertion and a deletion counted; two words away, two words swapped and messages under four
words not), and against the plain definition on random sentences. The README's numbers are
read from a made-up section in the README's words, compared with made-up measurements, and a
changed number must fail. With a transformer binary as argument, --quick also runs end to end
on a tiny corpus (a few seconds); the real corpus and the real runs are not needed.

Usage: test_reproduce_real_text.py [TRANSFORMER_BINARY]
"""
import contextlib
import io
import random
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent.parent / "scripts"
SCRIPT = SCRIPTS / "reproduce_real_text.py"
sys.path.insert(0, str(SCRIPTS))
import near_duplicates  # noqa: E402
import reproduce_real_text as reproduce  # noqa: E402

BINARY = None  # set from the command line

TRAIN = [
    "open the folder now",
    "could not read the file",
    "unable to write the output file",
    "cannot open the database",
    "remove all temporary files",
    "open files",
    "print the version and exit",
]
# Held-out English texts and whether each counts as having a near copy: None when it has fewer
# than four words and is not counted at all.
HELD_OUT = {
    "open the file now": True,  # one word substituted (folder -> file)
    "could not read the config file": True,  # one word inserted
    "unable to write output file": True,  # one word deleted
    "Print the version and exit": True,  # case counts: "Print" is another word than "print"
    "cannot close the table": False,  # two words substituted
    "remove temporary all files": False,  # two words swapped: two edits
    "show the help and quit now": False,  # far from everything
    "open file": None,  # one word from "open files", but under four words
}


def write_corpus(folder: Path, train, test, dev=()) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, sources in [("train", train), ("test", test), ("dev", dev)]:
        (folder / f"{name}.tsv").write_text(
            "".join(f"{s}\tT({s})\n" for s in sources), encoding="utf-8")


class NearCopies(unittest.TestCase):
    def test_known_answers(self):
        index = near_duplicates.NearIndex(TRAIN)
        for text, expected in HELD_OUT.items():
            if expected is None:
                continue
            with self.subTest(text=text):
                self.assertEqual(index.near_copy(text) is not None, expected)

    def test_the_near_copy_found_is_one_word_away(self):
        index = near_duplicates.NearIndex(TRAIN)
        n = index.near_copy("could not read the config file")
        self.assertEqual(TRAIN[n], "could not read the file")

    def test_counts_of_a_corpus_folder(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_corpus(folder, TRAIN, list(HELD_OUT), dev=["open the folder later"])
            counts = near_duplicates.count_corpus(folder)
            test = counts["test"]
            self.assertEqual(test.messages, len(HELD_OUT))
            self.assertEqual(test.long, 7)  # "open file" has two words
            self.assertEqual(len(test.near), 4)
            self.assertAlmostEqual(test.share, 4 / 7)
            self.assertEqual(
                [near_duplicates.source(line) for line in test.far],
                ["cannot close the table", "remove temporary all files",
                 "show the help and quit now"])
            self.assertEqual(len(counts["dev"].near), 1)
            near_file, far_file = near_duplicates.write_split(test, folder / "split")
            self.assertEqual(near_file.read_text(encoding="utf-8").splitlines()[0],
                             "open the file now\tT(open the file now)")
            self.assertEqual(len(far_file.read_text(encoding="utf-8").splitlines()), 3)

    def test_english_in_the_second_column(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            folder.mkdir(exist_ok=True)
            (folder / "train.tsv").write_text("x\topen the folder now\n", encoding="utf-8")
            (folder / "test.tsv").write_text("y\topen the file now\n", encoding="utf-8")
            (folder / "dev.tsv").write_text("", encoding="utf-8")
            self.assertEqual(len(near_duplicates.count_corpus(folder, english=1)["test"].near), 1)
            self.assertEqual(near_duplicates.count_corpus(folder, english=0)["test"].long, 0)

    def test_index_agrees_with_the_definition_on_random_sentences(self):
        rng = random.Random(7)
        vocabulary = ["a", "b", "c", "d"]

        def sentence():
            return " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 6)))

        train = [sentence() for _ in range(60)]
        index = near_duplicates.NearIndex(train)
        for _ in range(400):
            text = sentence()
            words = near_duplicates.words(text)
            expected = any(near_duplicates.within_one_word(words, near_duplicates.words(t))
                           for t in train)
            with self.subTest(text=text):
                self.assertEqual(index.near_copy(text) is not None, expected)


SECTION = """### Real sentences: German and Chinese

```
recipe for 10 pairs of 50 words (40 distinct), where no flag says otherwise: BPE vocabulary 100
--minutes 10: 0.093 s a step (24 steps timed), so 6469 steps, 200 of them warm-up; --steps 6469 repeats this run exactly
```

- The model is small (1.45 million parameters), so that ten minutes on two cores go through
  the corpus 21 times (814 pairs/s). Bigger reached dev BLEU 11.0 where this model reaches 22.9.

```
BLEU on 100 dev pairs (greedy): the last step's weights (6469) 20.85, the best check's weights (step 5814) 20.88, the average of the last 5 checkpoints 20.75
the checkpoint holds the best check's weights (step 5814)
BLEU = 22.88 49.0/29.0/19.0/12.6 (BP = 0.947 ratio = 0.949 hyp_len = 6087 ref_len = 6417) tok:13a on 1422 dev pairs (greedy), chrF = 51.57
```

```
1391 pairs from out/de/test.tsv, beam 4, length penalty 0.6
BLEU = 21.91 51.7/31.1/20.1/12.6 (BP = 0.867 ratio = 0.875 hyp_len = 5419 ref_len = 6190) tok:13a
chrF2 = 52.82 (precision 59.70, recall 51.35)
```

Now 246 of the 1,391
test messages (18%) come out exactly as their reference, 199 of the 705 of up to three words:
`invalid UTF-8 sequence` gives `ungültige UTF-8-Sequenz`.

**Chinese.** The same command on `out/zh_CN` for 4 minutes (`--minutes 4`: 2456 steps, 253 s):

```
1189 pairs from out/zh_CN/test.tsv, beam 4, length penalty 0.6
BLEU = 28.69 61.4/42.8/28.0/20.6 (BP = 0.818 ratio = 0.833 hyp_len = 7797 ref_len = 9364) tok:zh
chrF2 = 24.87 (precision 32.47, recall 23.49)
```

Chinese to English: 4 minutes (2370 steps) reach test BLEU 13.14 and chrF 33.73 with beam 4.
English to Chinese, held-out `Open the file` becomes `打开文件`.

| run | test messages of 4+ words | with a near copy | dev | all | near copy | no near copy |
|---|---|---|---|---|---|---|
| English to German | 686 | 202 (29.4%) | 27.0% | 21.91 / 52.82 | 30.00 / 60.00 | 15.00 / 45.00 |

## Lessons

Not part of it: BLEU = 99.99.
"""

# What the runs would print for the section above, as parse_train, parse_eval and the counts
# give it.
TRAIN_LOG = """recipe for 10 pairs of 50 words (40 distinct), where no flag says otherwise: BPE vocabulary 100
data: 25505 training pairs, 1422 dev pairs, bpe tokenizer of 4100 tokens (learned in 0.3s)
model: 1453696 parameters (d_model 128, d_ff 512, heads 4, layers 2+2, vocab 4100, tied)
6469 steps in 674.0s: final loss 2.5000, 9000 target tokens/s, 814 sentence pairs/s
BLEU on 100 dev pairs (greedy): the last step's weights (6469) 20.85, the best check's weights (step 5814) 20.88, the average of the last 5 checkpoints 20.75
the checkpoint holds the best check's weights (step 5814)
BLEU = 22.88 49.0/29.0/19.0/12.6 (BP = 0.947 ratio = 0.949 hyp_len = 6087 ref_len = 6417) tok:13a on 1422 dev pairs (greedy), chrF = 51.57
saved: x.html (the run's page, 1 kB: open it in a browser)
"""
EVAL_LOG = """1391 pairs from out/reproduce/de/test.tsv, beam 4, length penalty 0.6
BLEU = 21.91 51.7/31.1/20.1/12.6 (BP = 0.867 ratio = 0.875 hyp_len = 5419 ref_len = 6190) tok:13a
chrF2 = 52.82 (precision 59.70, recall 51.35)
"""


def measured_german() -> dict:
    m = reproduce.parse_train(TRAIN_LOG)
    m.update(reproduce.parse_eval(EVAL_LOG, "test"))
    m.update(reproduce.parse_eval(EVAL_LOG.replace("21.91", "30.00").replace("52.82", "60.00"),
                                  "test.near"))
    m.update(reproduce.parse_eval(EVAL_LOG.replace("21.91", "15.00").replace("52.82", "45.00"),
                                  "test.far"))
    m.update({"exact.exact": "246", "exact.total": "1,391", "exact.percent": "18",
              "exact.short": "199", "exact.short_total": "705",
              "example:invalid UTF-8 sequence": "ungültige UTF-8-Sequenz",
              "near.long": "686", "near.count": "202", "near.percent": "29.4",
              "near.dev_percent": "27.0"})
    return m


class ReadmeNumbers(unittest.TestCase):
    def test_every_claim_read(self):
        claims = reproduce.readme_claims(SECTION)
        german = {c.key: c.value for c in claims["de"] if c.key != "dev.bleu"}
        self.assertEqual(german["steps"], "6469")
        self.assertEqual(german["test.bleu"], "21.91")
        self.assertEqual(german["test.chrf_r"], "51.35")
        self.assertEqual(german["dev100.best_step"], "5814")
        self.assertEqual(german["exact.total"], "1,391")
        self.assertEqual(german["near.percent"], "29.4")
        self.assertEqual(german["test.far.bleu"], "15.00")
        self.assertEqual(german["example:invalid UTF-8 sequence"], "ungültige UTF-8-Sequenz")
        # The prose's rounded 22.9 and the printed 22.88 are both compared with the dev BLEU.
        self.assertEqual([c.value for c in claims["de"] if c.key == "dev.bleu"], ["22.9", "22.88"])
        chinese = {c.key: c.value for c in claims["zh_CN"]}
        self.assertEqual((chinese["steps"], chinese["test.bleu"], chinese["test.tok"]),
                         ("2456", "28.69", "tok:zh"))
        self.assertEqual(chinese["example:Open the file"], "打开文件")
        self.assertEqual({c.key: c.value for c in claims["zh-en"]},
                         {"steps": "2370", "test.bleu": "13.14", "test.chrf": "33.73"})
        self.assertNotIn("99.99", [c.value for run in claims.values() for c in run])

    def test_the_same_numbers_match(self):
        claims = reproduce.readme_claims(SECTION)["de"]
        verdicts = reproduce.compare(claims, measured_german(), tolerant=False)
        self.assertEqual([v.line() for v in verdicts if not v.ok], [])
        self.assertEqual(len(verdicts), len(claims) - 1)  # all but the step count, an input

    def test_a_changed_number_fails(self):
        claims = reproduce.readme_claims(SECTION.replace("21.91", "21.92"))["de"]
        failed = [v for v in reproduce.compare(claims, measured_german(), tolerant=False)
                  if not v.ok]
        # The test BLEU is in the eval block and in the table.
        self.assertEqual([(v.claim.key, v.claim.value, v.measured, v.verdict) for v in failed],
                         [("test.bleu", "21.92", "21.91", "DIFFERS")] * 2)
        self.assertIn("README     21.92   reproduced     21.91   DIFFERS", failed[0].line())

    def test_a_changed_translation_or_count_fails(self):
        section = SECTION.replace("`ungültige UTF-8-Sequenz`", "`ungültige Sequenz`")
        section = section.replace("202 (29.4%)", "203 (29.4%)")
        failed = [v.claim.key for v in reproduce.compare(
            reproduce.readme_claims(section)["de"], measured_german(), tolerant=False) if not v.ok]
        self.assertEqual(failed, ["example:invalid UTF-8 sequence", "near.count"])

    def test_rounded_in_prose(self):
        self.assertEqual(reproduce.to_printed_digits("22.9", "22.88"), "22.9")
        self.assertEqual(reproduce.to_printed_digits("1,391", "1391"), "1,391")
        self.assertEqual(reproduce.judge(reproduce.Claim("de", "k", "k", "22.8", "score"), "22.88",
                                         tolerant=False).verdict, "DIFFERS")

    def test_tolerant(self):
        def verdict(value, kind, measured):
            return reproduce.judge(reproduce.Claim("de", "k", "k", value, kind), measured,
                                   tolerant=True)
        width = reproduce.TOLERANCE["score"]
        self.assertTrue(verdict("21.91", "score", f"{21.91 - width + 0.01:.2f}").ok)
        self.assertFalse(verdict("21.91", "score", f"{21.91 + width + 0.01:.2f}").ok)
        self.assertTrue(verdict("5419", "length", "5500").ok)
        self.assertFalse(verdict("5419", "length", "7000").ok)
        self.assertFalse(verdict("6190", "fixed", "6191").ok)  # no float rounding changes it
        self.assertTrue(verdict("5814", "step", "5173").ok)  # shown, not judged
        self.assertFalse(reproduce.judge(reproduce.Claim("de", "k", "k", "1", "score"), None,
                                         tolerant=True).ok)

    def test_exit_status(self):
        """main() on the made-up README, the runs replaced by the made-up measurements: 0 when
        every number matches, 1 when the README has one changed."""
        def fake_reproduce(run, steps, settings):
            self.assertEqual((run, steps), ("de", 6469))
            return measured_german()

        real = reproduce.reproduce
        reproduce.reproduce = fake_reproduce
        try:
            with tempfile.TemporaryDirectory() as tmp:
                readme = Path(tmp) / "README.md"
                for section, status in [(SECTION, 0), (SECTION.replace("20.88", "20.89"), 1)]:
                    readme.write_text(section, encoding="utf-8")
                    with contextlib.redirect_stdout(io.StringIO()) as out:
                        code = reproduce.main(["--only", "de", "--exact", "--readme", str(readme),
                                               "--binary", sys.executable])
                    self.assertEqual(code, status, out.getvalue())
                self.assertIn("best check's BLEU", out.getvalue().split("these do not:")[1])
        finally:
            reproduce.reproduce = real

    def test_a_sentence_gone_from_the_readme_is_an_error(self):
        with self.assertRaises(reproduce.ReadmeError):
            reproduce.readme_claims(SECTION.replace("reach test BLEU", "reached BLEU"))

    def test_exact_translations(self):
        counts = reproduce.exact_translations(["a b", "a b c d", "x"], ["A", "B", "C"],
                                              ["A", "B", "c"])
        self.assertEqual(counts, {"exact.exact": "2", "exact.total": "3", "exact.percent": "67",
                                  "exact.short": "1", "exact.short_total": "2"})


class Quick(unittest.TestCase):
    def test_help(self):
        result = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True,
                                text=True, check=False)
        self.assertEqual(result.returncode, 0)
        self.assertIn("--quick", result.stdout)

    def test_quick_runs_end_to_end(self):
        if BINARY is None:
            self.skipTest("no transformer binary given")
        rng = random.Random(3)
        words = ["open", "close", "read", "write", "the", "a", "file", "folder", "now", "later",
                 "cannot", "disk", "new", "old"]
        english = sorted({" ".join(rng.choice(words) for _ in range(rng.randint(1, 7)))
                          for _ in range(400)})
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data"
            write_corpus(data / "de", english[40:], english[:20], english[20:40])
            write_corpus(data / "zh_CN", english[40:], english[:20], english[20:40])
            result = subprocess.run(
                [sys.executable, str(SCRIPT), "--quick", "6", "--only", "de", "zh-en",
                 "--binary", BINARY, "--data", str(data), "--out", str(Path(tmp) / "out"),
                 "--threads", "1"], capture_output=True, text=True, check=False, timeout=600)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertRegex(result.stdout, r"(?m)^de +test\.bleu +\d+\.\d\d$")
            self.assertRegex(result.stdout, r"(?m)^zh-en +test\.far\.bleu +\d+\.\d\d$")
            # zh-en was made from zh_CN with its columns swapped.
            first = (data / "zh-en" / "train.tsv").read_text(encoding="utf-8").splitlines()[0]
            self.assertEqual(first, f"T({english[40]})\t{english[40]}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        BINARY = sys.argv.pop(1)
    unittest.main()
