#!/usr/bin/env python3
"""scripts/check_lesson_outputs.py on a made-up lesson page and a saved output: each rule lets
through what it states, and a changed number, word or line order fails, naming the page's line.
"""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent.parent / "scripts" / "check_lesson_outputs.py"

OUTPUT = """
== 1. A section ==

  loss 2.3979 at step 0, 0.5012 at step 400 (1.5 s)
  backward() is 1344x faster: 0.039 ms against 52.4 ms
  table:
      n    rows
      8      16
     16      32
  wrote out/99_demo/curve.png (720 x 440)
  [ok] the loss falls below 0.6
  [--] the cache makes a step faster (61.9x) (a timing: not checked in this run)
  [--] a step runs at 12.8 GFLOP/s, 10% of the peak of 1 thread (a timing: not checked in this run)
  sleeping:
                 12558.51 us (the worker sleeps)

  size    time
    64    2.82
   128    5.70
  2 threads against one: 0.78x (the other cores were busy)
  (the other cores are busy: the models run on 1 thread)
  done

lesson 99: all 2 checks passed
"""


def page_with(block: str, before: str = "") -> str:
    return f"# demo\n\nSome text.\n{before}\n```\n{block}\n```\n\nMore text.\n"


class CheckLessonOutputs(unittest.TestCase):
    def check(self, page: str) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory() as folder:
            lesson = Path(folder, "99_demo")
            lesson.mkdir()
            (lesson / "README.md").write_text(page, encoding="utf-8")
            saved = Path(folder, "output.txt")
            saved.write_text(OUTPUT, encoding="utf-8")
            return subprocess.run([sys.executable, str(SCRIPT), str(lesson), "--output",
                                   str(saved)], capture_output=True, text=True, check=False)

    def assert_passes(self, page: str):
        done = self.check(page)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("1 of 1 output blocks as printed", done.stdout)

    def assert_fails(self, page: str, expected: str):
        done = self.check(page)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertRegex(done.stdout, r"README.md:[56]: ")  # the line of the block's fence
        self.assertIn(expected, done.stdout)

    def test_a_block_as_printed_without_its_indentation(self):
        self.assert_passes(page_with("table:\n    n    rows\n    8      16\n   16      32"))

    def test_a_changed_number_fails(self):
        self.assert_fails(page_with("table:\n    n    rows\n    8      16\n   16      33"),
                          "16      33")

    def test_a_changed_word_fails(self):
        self.assert_fails(page_with("[ok] the loss falls below 0.7"), "not in the program")

    def test_relative_indentation_counts(self):
        self.assert_fails(page_with("table:\n  n    rows"), "  n    rows")

    def test_lines_in_another_order_fail(self):
        self.assert_fails(page_with("[ok] the loss falls below 0.6\n"
                                    "wrote out/99_demo/curve.png (720 x 440)"),
                          "then the page has\n    wrote out/99_demo/curve.png")

    def test_an_elision_stands_for_lines_left_out(self):
        self.assert_passes(page_with("loss 2.3979 at step 0, 0.5012 at step 400 (1.5 s)\n"
                                     "...\n[ok] the loss falls below 0.6"))
        self.assert_fails(page_with("loss 2.3979 at step 0, 0.5012 at step 400 (1.5 s)\n"
                                    "...\n[ok] the loss falls below 0.5"), "then the page has\n    ...")

    def test_timings_and_their_ratios_are_masked(self):
        self.assert_passes(page_with("loss 2.3979 at step 0, 0.5012 at step 400 (0.9 s)\n"
                                     "backward() is 2000x faster: 0.041 ms against 80.0 ms"))
        # but not the numbers beside them
        self.assert_fails(page_with("loss 2.3979 at step 0, 0.5013 at step 400 (1.5 s)"),
                          "not in the program")

    def test_an_unchecked_timing_claim_stands_for_the_checked_one(self):
        self.assert_passes(page_with("[ok] the loss falls below 0.6\n"
                                     "[ok] the cache makes a step faster (76x)"))
        self.assert_fails(page_with("[ok] the loss falls below 0.6\n"
                                    "[ok] the cache makes a step slower (76x)"), "slower")

    def test_an_unchecked_claim_may_count_other_threads(self):
        self.assert_passes(page_with("[ok] a step runs at 180.9 GFLOP/s, 32% of the peak of "
                                     "2 threads"))
        self.assert_fails(page_with("[ok] a step runs at 180.9 GFLOP/s, 32% of the peak of "
                                    "2 cores"), "2 cores")

    def test_a_right_aligned_timing_may_start_elsewhere(self):
        self.assert_passes(page_with("sleeping:\n    33.29 us (the worker sleeps)"))
        self.assert_fails(page_with("sleeping:\n    33.29 us (the worker wakes)"), "wakes")

    def test_a_table_of_timings_is_masked_only_when_marked(self):
        table = "size    time\n  64    2.91\n 128    5.12"
        self.assert_fails(page_with(table), "64    2.91")
        self.assert_passes(page_with(table, before="<!-- output: timings -->"))
        self.assert_fails(page_with("size    speed\n  64    2.91",
                                    before="<!-- output: timings -->\n"), "not in the program")

    def test_notes_on_busy_cores_are_left_out(self):
        self.assert_passes(page_with("size    time\n  64    2.82\n 128    5.70\n"
                                     "2 threads against one: 1.92x\ndone",
                                     before="<!-- output: timings -->"))

    def test_blocks_with_a_language_are_not_output(self):
        done = self.check("# demo\n\n```text\nanything\n```\n\n```cpp\nint x;\n```\n")
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertIn("0 of 0 output blocks", done.stdout)


BLOCK = ("```\nloss 2.3979 at step 0, 0.5012 at step 400 (1.5 s)\n"
         "backward() is 1344x faster: 0.039 ms against 52.4 ms\n"
         "accuracy 32% (96 of 300), ratio 2.46x\n```\n")


class ProseNumbers(unittest.TestCase):
    """Rules 7 and 8: the numbers of the prose, held by the blocks or named by a comment."""

    def check(self, prose: str, chinese: str = "") -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory() as folder:
            lesson = Path(folder, "99_demo")
            lesson.mkdir()
            (lesson / "README.md").write_text(f"# demo\n\n{BLOCK}\n{prose}\n", encoding="utf-8")
            if chinese:
                (lesson / "README.zh.md").write_text(chinese, encoding="utf-8")
            return subprocess.run([sys.executable, str(SCRIPT), "--prose", str(lesson)],
                                  capture_output=True, text=True, check=False)

    def assert_passes(self, prose: str, chinese: str = ""):
        done = self.check(prose, chinese)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)

    def assert_fails(self, prose: str, expected: str):
        done = self.check(prose)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn(expected, done.stdout)

    def test_a_number_a_block_shows_at_the_prose_digits(self):
        self.assert_passes("The loss falls from 2.3979, about 2.40, to 0.50 and 0.5.")
        self.assert_fails("The loss falls to 0.49.", "README.md:9: the prose quotes 0.49")
        self.assert_fails("The loss falls to 0.5013.", "the prose quotes 0.5013")

    def test_percentages_and_ratios_by_their_kind(self):
        self.assert_passes("It gets 32% right, and the ratio is 2.5x.")
        self.assert_fails("It gets 96% right.", "the prose quotes 96%")  # 96 is not a percentage
        self.assert_fails("It is 2.39x the first.", "the prose quotes 2.39x")  # nor 2.3979 a ratio

    def test_a_masked_number_holds_nothing(self):
        self.assert_fails("One pass takes 1.5 s.", "the prose quotes 1.5")
        # nor does a block's number hold a timing of the prose
        self.assert_fails("One pass takes 0.50 s.", "the prose quotes 0.50")
        self.assert_fails("backward() is 1344x faster.", "the prose quotes 1344x")

    def test_a_comment_names_what_the_run_does_not_print(self):
        self.assert_passes("<!-- numbers: 1.5 1344x: timings on the machine of the block -->\n"
                           "One pass takes 1.5 s; backward() is 1344x faster.")
        self.assert_fails("<!-- numbers: 1.5 -->\nOne pass takes 1.5 s.", "without a reason")
        self.assert_fails("<!-- numbers: 1.5 7.25: timings -->\nOne pass takes 1.5 s.",
                          "the comment names 7.25, which the prose does not quote")

    def test_quotes_code_references_and_the_chinese_pages_are_not_read(self):
        self.assert_passes("> We used beta2 = 0.98 and dropout 0.1. (§5.3)\n\n"
                           "Section 3.2.1 and Table 3 say so; `--lr 0.25` too, and [a link]"
                           "(https://example.com/v1.5/).", chinese="数字 0.77 不在这里检查。\n")


if __name__ == "__main__":
    unittest.main()
