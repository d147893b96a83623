#!/usr/bin/env python3
"""scripts/check_translations.py on a small tree made here: one lesson, English and Chinese.

Each test starts from a pair that passes, breaks one thing the way an editor would (an English
edit with no Chinese one, a translated command, a dropped number or paragraph, a link to the
English page), and asserts that the check fails naming the file and the problem. The tests of a page marked as
behind its English page (--mark-behind) check what the mark and the note say, that the check
lets such a page pass, and that a mark left behind or a note missing fails.
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent.parent / "scripts" / "check_translations.py"

ENGLISH_README = """# toy

**English** · [中文](README.zh.md)

Read [lesson 01](lessons/01_demo/README.md).
"""

CHINESE_README = """# 玩具

[English](README.md) · **中文**

请读[第 01 课](lessons/01_demo/README.zh.md)。
"""

ENGLISH_LESSON = """# Lesson 01: demo

**English** · [中文](README.zh.md)

The loss falls to 0.35 in 300 steps, as $\\sqrt{d_k}$ predicts (§3.2.1).

![The loss against the step](images/loss.png)

```sh
./build/bin/lesson01_demo --quick
```

## What to remember

Back to the [top](../../README.md).
"""

CHINESE_LESSON = """# 第 01 课：演示

[English](README.md) · **中文**

损失在 300 步内降到 0.35，正如 $\\sqrt{d_k}$ 所预言（§3.2.1）。

![损失随步数的变化](images/loss.png)

图：横轴是训练步数，纵轴是损失。

```sh
./build/bin/lesson01_demo --quick
```

## 要记住什么

回到[首页](../../README.zh.md)。见[上文](#要记住什么)。
"""


class SmallTree(unittest.TestCase):
    """The two pages of the top README and of one lesson, stamped, and helpers to edit and check them."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        lesson = self.root / "lessons" / "01_demo"
        (lesson / "images").mkdir(parents=True)
        (lesson / "images" / "loss.png").write_bytes(b"png")
        self.write("README.md", ENGLISH_README)
        self.write("README.zh.md", CHINESE_README)
        self.write("lessons/01_demo/README.md", ENGLISH_LESSON)
        self.write("lessons/01_demo/README.zh.md", CHINESE_LESSON)
        self.run_script("--stamp", self.root / "README.zh.md", self.root / "lessons/01_demo/README.zh.md")

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        (self.root / name).write_text(text, encoding="utf-8")

    def read(self, name):
        return (self.root / name).read_text(encoding="utf-8")

    def blob(self, name):
        """What git hash-object prints for the file."""
        data = (self.root / name).read_bytes()
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()

    def edit(self, name, old, new):
        path = self.root / name
        text = path.read_text(encoding="utf-8")
        self.assertIn(old, text)
        path.write_text(text.replace(old, new), encoding="utf-8")

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, "--root", self.root, *map(str, args)],
                              capture_output=True, text=True, env={**os.environ, "LC_ALL": "C.UTF-8"})

    def check_fails_with(self, *expected):
        result = self.run_script()
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        for text in expected:
            self.assertIn(text, result.stderr)


class CheckTranslations(SmallTree):
    def test_a_faithful_translation_passes(self):
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("2 English pages, 0 problems", result.stdout)
        first_line = (self.root / "lessons/01_demo/README.zh.md").read_text(encoding="utf-8").split("\n")[0]
        self.assertRegex(first_line, r"^<!-- 译自 README.md（git blob [0-9a-f]{40}）")

    def test_the_stamp_is_the_git_blob_id(self):
        self.assertIn(self.blob("lessons/01_demo/README.md"), self.read("lessons/01_demo/README.zh.md"))

    def test_an_english_edit_without_the_chinese_one_fails_until_stamped(self):
        self.edit("lessons/01_demo/README.md", "300 steps", "300 steps of 8 pairs")
        self.check_fails_with("lessons/01_demo/README.md has changed since lessons/01_demo/README.zh.md",
                              "git cat-file -p", "--stamp lessons/01_demo/README.zh.md",
                              "if you cannot write Chinese",
                              "scripts/check_translations.py --mark-behind lessons/01_demo/README.zh.md")
        self.edit("lessons/01_demo/README.zh.md", "300 步", "300 步（每步 8 对）")
        self.run_script("--stamp", self.root / "lessons/01_demo/README.zh.md")
        self.assertEqual(self.run_script().returncode, 0)

    def test_a_missing_chinese_page_fails(self):
        (self.root / "lessons/01_demo/README.zh.md").unlink()
        self.check_fails_with("lessons/01_demo/README.md has no Chinese page")

    def test_a_translated_code_block_fails(self):
        self.edit("lessons/01_demo/README.zh.md", "--quick", "--快速")
        self.run_script("--stamp", self.root / "lessons/01_demo/README.zh.md")
        self.check_fails_with("code block 1 differs", "--快速")

    def test_a_missing_number_fails(self):
        self.edit("lessons/01_demo/README.zh.md", "降到 0.35", "降下来")
        self.check_fails_with("numbers of lessons/01_demo/README.md missing from the Chinese text: 0.35")

    def test_a_rewritten_formula_fails(self):
        self.edit("lessons/01_demo/README.zh.md", "$\\sqrt{d_k}$", "$d_k^{1/2}$")
        self.check_fails_with("formula $\\sqrt{d_k}$")

    def test_a_dropped_section_fails(self):
        self.edit("lessons/01_demo/README.zh.md", "## 要记住什么", "要记住什么")
        self.check_fails_with("headings differ")

    def test_a_picture_needs_a_chinese_caption(self):
        self.edit("lessons/01_demo/README.zh.md", "图：横轴", "横轴")
        self.check_fails_with("picture images/loss.png must be followed by a paragraph starting with '图：'")

    def test_a_chinese_page_links_to_chinese_pages_and_real_anchors(self):
        self.edit("lessons/01_demo/README.zh.md", "../../README.zh.md", "../../README.md")
        self.edit("lessons/01_demo/README.zh.md", "#要记住什么", "#what-to-remember")
        self.check_fails_with("link to ../../README.md; link to its Chinese page ../../README.zh.md",
                              "has no heading with anchor #what-to-remember")

    def test_bold_that_github_would_show_as_asterisks_fails(self):
        self.edit("lessons/01_demo/README.zh.md", "损失在 300 步内", "**损失：**在 300 步内")
        self.check_fails_with("shows as asterisks on GitHub")
        self.edit("lessons/01_demo/README.zh.md", "**损失：**在", "**损失**：在")
        self.assertEqual(self.run_script().returncode, 0)

    def stamp_chinese(self):
        self.run_script("--stamp", self.root / "lessons/01_demo/README.zh.md")

    def passes(self):
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_numbers_are_compared_as_the_numbers_they_are(self):
        self.edit("lessons/01_demo/README.md", "in 300 steps",
                  "in 300 steps of 43,000 pairs (1.2 billion tokens, 65M parameters; see lesson 05)")
        self.edit("lessons/01_demo/README.zh.md", "在 300 步内",
                  "在 300 步内（每步 4.3 万个句对，共 12 亿个词元，6500 万个参数；见第 5 课）")
        self.stamp_chinese()
        self.passes()
        self.edit("lessons/01_demo/README.zh.md", "见第 5 课", "见第 05 课")  # leading zeros too
        self.stamp_chinese()
        self.passes()
        self.edit("lessons/01_demo/README.zh.md", "4.3 万", "4.2 万")
        self.edit("lessons/01_demo/README.zh.md", "12 亿", "1.2 万")
        self.stamp_chinese()
        self.check_fails_with("numbers of lessons/01_demo/README.md missing from the Chinese text: "
                              "43,000 1.2 billion")

    def test_a_section_numbered_like_3_2_1_is_compared_as_written(self):
        self.edit("lessons/01_demo/README.zh.md", "（§3.2.1）", "（§3.21）")
        self.check_fails_with("missing from the Chinese text: 3.2.1")

    def test_a_missing_paragraph_fails_naming_its_section(self):
        self.edit("lessons/01_demo/README.md", "## What to remember\n",
                  "## What to remember\n\nAttention is a soft dictionary lookup.\n")
        self.stamp_chinese()
        self.check_fails_with("lessons/01_demo/README.zh.md: 1 paragraphs in section '要记住什么' "
                              "('What to remember' in English), lessons/01_demo/README.md has 2: "
                              "a paragraph is missing")
        self.edit("lessons/01_demo/README.zh.md", "## 要记住什么\n", "## 要记住什么\n\n注意力是一种软性的字典查找。\n")
        self.stamp_chinese()
        self.passes()

    def test_a_missing_paragraph_after_a_picture_and_its_explanation_fails(self):
        self.edit("lessons/01_demo/README.md", "(images/loss.png)\n",
                  "(images/loss.png)\n\nThe loss falls, then stays.\n\nRead it slowly.\n")
        self.stamp_chinese()
        self.check_fails_with("lessons/01_demo/README.zh.md: 2 paragraphs in section '第 01 课：演示' "
                              "('Lesson 01: demo' in English), lessons/01_demo/README.md has 3")

    def test_what_is_not_prose_is_not_counted_as_a_paragraph(self):
        # A table, a quote, a rule, HTML, a list with blank lines between its items, a wrapped line
        # that starts with "30. ", and the paragraph that explains a picture, which the Chinese
        # caption takes in: the Chinese has fewer blocks, but no paragraph is missing.
        self.edit("lessons/01_demo/README.md", "(§3.2.1).\n",
                  "(§3.2.1).\n\n| a | b |\n|---|---|\n\n> quoted\n\n---\n\n<img src=\"x.png\">\n\n"
                  "- one\n\n- two\n\nIt falls from\n30. Then it stays.\n")
        self.edit("lessons/01_demo/README.md", "(images/loss.png)\n",
                  "(images/loss.png)\n\nThe loss falls, then stays.\n")
        self.edit("lessons/01_demo/README.zh.md", "（§3.2.1）。\n",
                  "（§3.2.1）。\n\n- 一\n- 二\n\n它从 30 开始下降，然后保持不变。\n")
        self.stamp_chinese()
        self.passes()
        self.edit("lessons/01_demo/README.zh.md", "- 一\n- 二\n", "- 一二\n")  # a list item is gone
        self.stamp_chinese()
        self.check_fails_with("4 paragraphs in section '第 01 课：演示' ('Lesson 01: demo' in English), "
                              "lessons/01_demo/README.md has 5: a paragraph is missing")

    def test_a_page_of_lessons_itself_is_paired_like_a_lesson_page(self):
        # lessons/GLOSSARY.md, beside the lesson folders: its Chinese page is checked the same way.
        self.write("lessons/GLOSSARY.md", "# Glossary\n\n**English** · [中文](GLOSSARY.zh.md)\n\n"
                   "| English | 中文 | definition |\n|---|---|---|\n"
                   "| mask | 掩码 | Scores set to $-\\infty$ before the softmax (§3.2.3). |\n")
        self.check_fails_with("lessons/GLOSSARY.md has no Chinese page")
        self.write("lessons/GLOSSARY.zh.md", "# 术语表\n\n[English](GLOSSARY.md) · **中文**\n\n"
                   "| 中文 | English | 定义 |\n|---|---|---|\n"
                   "| 掩码 | mask | 在 softmax 之前被设为 $-\\infty$ 的分数（§3.2.3）。 |\n")
        self.run_script("--stamp", self.root / "lessons/GLOSSARY.zh.md")
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("3 English pages, 0 problems", result.stdout)
        self.edit("lessons/01_demo/README.zh.md", "回到[首页]", "见[术语表](../GLOSSARY.md)。回到[首页]")
        self.check_fails_with("link to ../GLOSSARY.md; link to its Chinese page ../GLOSSARY.zh.md")
        self.edit("lessons/01_demo/README.zh.md", "见[术语表](../GLOSSARY.md)。", "")
        self.edit("lessons/GLOSSARY.zh.md", "（§3.2.3）", "")
        self.check_fails_with("lessons/GLOSSARY.zh.md: numbers of lessons/GLOSSARY.md missing from the "
                              "Chinese text: 3.2.3")

    def test_each_page_links_to_the_other_language(self):
        self.edit("README.md", "**English** · [中文](README.zh.md)", "")
        self.check_fails_with("README.md: link to the Chinese page near the top")


class MarkedBehind(SmallTree):
    """An English edit lets the Chinese page fall behind, with a mark and a note to its readers."""

    LESSON, CHINESE = "lessons/01_demo/README.md", "lessons/01_demo/README.zh.md"
    NOTE = ("> **译文待更新**：自这篇译文完成以来，[英文原文](README.md)已有改动，本页尚未同步；"
            "内容请以英文版为准。")

    def setUp(self):
        super().setUp()
        self.stamped_blob = self.blob(self.LESSON)
        self.in_step = self.read(self.CHINESE)
        # A new number and a new code block: the comparisons would fail on an unmarked page.
        self.edit(self.LESSON, "## What to remember", "Run it 3 times:\n\n```sh\nmake\n```\n\n## What to remember")

    def mark_behind(self):
        result = self.run_script("--mark-behind", self.root / self.CHINESE)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def test_a_marked_page_passes_and_tells_its_readers(self):
        result = self.mark_behind()
        self.assertIn(f"translated from {self.stamped_blob[:12]}, English now {self.blob(self.LESSON)[:12]}",
                      result.stdout)
        lines = self.read(self.CHINESE).split("\n")
        self.assertIn(f"（git blob {self.stamped_blob}）", lines[0], "the stamp stays the old one")
        self.assertTrue(lines[1].startswith(f"<!-- 落后于 README.md（git blob {self.blob(self.LESSON)}）"))
        self.assertIn(f"git cat-file -p {self.stamped_blob} | diff - README.md", lines[1])
        self.assertEqual(lines[2:8], ["# 第 01 课：演示", "", "[English](README.md) · **中文**", "",
                                      self.NOTE, ""])
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("2 English pages, 0 problems", result.stdout)

    def test_a_marked_page_keeps_passing_when_the_english_changes_again(self):
        self.mark_behind()
        first_behind = self.blob(self.LESSON)
        self.edit(self.LESSON, "Run it 3 times", "Run it 5 times")
        self.assertEqual(self.run_script().returncode, 0)
        self.mark_behind()  # again: the mark keeps the English text the page first fell behind
        text = self.read(self.CHINESE)
        self.assertIn(f"<!-- 落后于 README.md（git blob {first_behind}）", text)
        self.assertEqual(text.count(self.NOTE), 1)

    def test_the_chinese_page_on_its_own_is_still_checked(self):
        self.mark_behind()
        self.edit(self.CHINESE, "图：横轴", "横轴")
        self.check_fails_with("picture images/loss.png must be followed by a paragraph starting with '图：'")

    def test_a_marked_page_without_its_note_fails(self):
        self.mark_behind()
        self.edit(self.CHINESE, self.NOTE, "> 本页过时了。")
        self.check_fails_with("lessons/01_demo/README.zh.md is marked as behind lessons/01_demo/README.md, "
                              "so below the link to the English page it must tell its readers, word for "
                              f"word:\n    {self.NOTE}")
        self.edit(self.CHINESE, "> 本页过时了。", self.NOTE)  # written by hand, from the message
        self.assertEqual(self.run_script().returncode, 0)

    def test_a_stale_mark_fails(self):
        self.mark_behind()
        # The English edit is undone: the page is in step again, and the note would be untrue.
        self.edit(self.LESSON, "Run it 3 times:\n\n```sh\nmake\n```\n\n", "")
        self.check_fails_with("lessons/01_demo/README.zh.md is marked as behind lessons/01_demo/README.md, "
                              "but lessons/01_demo/README.md has not changed since the stamp",
                              "scripts/check_translations.py --stamp lessons/01_demo/README.zh.md")

    def test_a_note_without_a_mark_fails(self):
        self.mark_behind()
        lines = self.read(self.CHINESE).split("\n")
        self.write(self.CHINESE, "\n".join(lines[:1] + lines[2:]))
        self.check_fails_with("lessons/01_demo/README.zh.md: it tells readers that it is behind "
                              "lessons/01_demo/README.md, but line 2 has no mark",
                              "--mark-behind lessons/01_demo/README.zh.md")

    def test_stamping_removes_the_mark_and_the_note(self):
        self.mark_behind()
        self.edit(self.CHINESE, "## 要记住什么", "运行 3 次：\n\n```sh\nmake\n```\n\n## 要记住什么")
        result = self.run_script("--stamp", self.root / self.CHINESE)
        self.assertIn("and removed its mark 'behind' and the note", result.stdout)
        text = self.read(self.CHINESE)
        self.assertNotIn("落后于", text)
        self.assertNotIn("译文待更新", text)
        in_step = self.in_step.replace(self.stamped_blob, self.blob(self.LESSON)).replace(
            "## 要记住什么", "运行 3 次：\n\n```sh\nmake\n```\n\n## 要记住什么")
        self.assertEqual(text, in_step, "only the stamp and the new paragraph changed")
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("2 English pages, 0 problems", result.stdout)

    def test_a_page_in_step_cannot_be_marked(self):
        self.edit(self.LESSON, "Run it 3 times:\n\n```sh\nmake\n```\n\n", "")
        result = self.run_script("--mark-behind", self.root / self.CHINESE)
        self.assertEqual(result.returncode, 1)
        self.assertIn("README.md has not changed since the stamp; nothing to mark", result.stderr)
        self.assertEqual(self.read(self.CHINESE), self.in_step)


if __name__ == "__main__":
    unittest.main()
