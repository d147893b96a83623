// BLEU's tokenizers, 13a and zh (data/bleu.h), on cases worked out by hand from their rules,
// and corpus BLEU and chrF checked against scripts/score.py, a second implementation in Python.
// The comments name the rule each case turns on: R1-R4 as data/bleu.h lists them.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "data/bleu.h"
#include "data/utf8.h"
#include "tests/support/temp_dir.h"

using namespace gf::data;
using Strings = std::vector<std::string>;

namespace {

Strings tokens_13a(const std::string& text) {
  return bleu_tokenize(text, BleuTokenize::k13a);
}

Strings tokens_zh(const std::string& text) {
  return bleu_tokenize(text, BleuTokenize::kZh);
}

}  // namespace

TEST_CASE("13a: ASCII punctuation but ' , - . is set apart (R1)", "[data][bleu]") {
  CHECK(tokens_13a("Hello (world)!") == Strings{"Hello", "(", "world", ")", "!"});
  CHECK(tokens_13a("$5 a/b x:y") == Strings{"$", "5", "a", "/", "b", "x", ":", "y"});
  CHECK(tokens_13a("\"Ja\", sagte er") == Strings{"\"", "Ja", "\"", ",", "sagte", "er"});
  // ' is not in R1: contractions and quotes in ' stay whole.
  CHECK(tokens_13a("don't 'quoted'") == Strings{"don't", "'quoted'"});
  // Only ASCII: « » — € stay attached to their words.
  CHECK(tokens_13a("«Grüße» 5€ a—b") == Strings{"«Grüße»", "5€", "a—b"});
  CHECK(tokens_13a("").empty());
  CHECK(tokens_13a(" \t ").empty());
  REQUIRE_THROWS_AS(tokens_13a("a\x80"), Utf8Error);
}

TEST_CASE("13a: periods and commas, after (R2) and before (R3) a non-digit", "[data][bleu]") {
  // Digits on both sides: neither rule matches, the number stays whole.
  CHECK(tokens_13a("3.14 10,000.50") == Strings{"3.14", "10,000.50"});
  // R2 only: "a." matches, the digit after keeps R3 away.
  CHECK(tokens_13a("a.1") == Strings{"a", ".", "1"});
  // R3 only: "1." is no R2 match (a digit before), ".a" is an R3 match.
  CHECK(tokens_13a("1.a") == Strings{"1", ".", "a"});
  // The sentence end: the padding space after '.' is a non-digit (R3), as is every space (R2).
  CHECK(tokens_13a("in 2024.") == Strings{"in", "2024", "."});
  CHECK(tokens_13a(".5") == Strings{".", "5"});  // R2 with the padding space before '.'
  // Overlapping candidates: R2 turns "x..y" into "x . .y" (its match "x." consumes the first
  // '.', so ".." is not tried), then R3 matches ". " and ".y": four tokens.
  CHECK(tokens_13a("x..y") == Strings{"x", ".", ".", "y"});
  CHECK(tokens_13a("a.,b") == Strings{"a", ".", ",", "b"});
  CHECK(tokens_13a("e.g.") == Strings{"e", ".", "g", "."});
}

TEST_CASE("13a: a hyphen after a digit is set apart (R4)", "[data][bleu]") {
  // R4's matches "3-" and "4-" do not overlap: 3 - 4 - 5.
  CHECK(tokens_13a("3-4-5") == Strings{"3", "-", "4", "-", "5"});
  CHECK(tokens_13a("3-4 km") == Strings{"3", "-", "4", "km"});
  // After a letter or a space, no rule splits '-'.
  CHECK(tokens_13a("well-known x-3 -x") == Strings{"well-known", "x-3", "-x"});
}

TEST_CASE("13a: deletions and unescaping come first, in sacreBLEU's order", "[data][bleu]") {
  CHECK(tokens_13a("AT&amp;T &lt;b&gt;") == Strings{"AT", "&", "T", "<", "b", ">"});  // then R1
  // &quot; is replaced before &amp;, so "&amp;quot;" becomes "&quot;", which stays: R1 splits
  // its & and ;.
  CHECK(tokens_13a("&amp;quot;") == Strings{"&", "quot", ";"});
  CHECK(tokens_13a("a<skipped>b") == Strings{"ab"});
  CHECK(tokens_13a("well-\nknown\nword") == Strings{"wellknown", "word"});
  // The trailing whitespace goes first (sacreBLEU's rstrip), so a final "-\n" keeps its '-'.
  CHECK(tokens_13a("end-\n") == Strings{"end-"});
}

TEST_CASE("13a and zh split on whitespace as Python's str.split does", "[data][bleu]") {
  // No-break space (White_Space) and U+001C (a separator Python counts as whitespace) split;
  // U+200B (zero width space) is not whitespace.
  CHECK(tokens_13a("a\u00A0b\x1C"
                   "c\u200Bd") == Strings{"a", "b", "c\u200Bd"});
  CHECK(tokens_zh("a\u00A0b\x1C"
                  "c") == Strings{"a", "b", "c"});
}

TEST_CASE("zh: each character of sacreBLEU's blocks is a token, then R1-R4", "[data][bleu]") {
  CHECK(tokens_zh("我爱北京。") == Strings{"我", "爱", "北", "京", "。"});
  // Fullwidth punctuation (U+FF00..U+FFEF) and CJK punctuation (U+3000..U+303F) are set
  // apart; ASCII runs stay words, "3.5" a number (R2 and R3 need a non-digit).
  CHECK(tokens_zh("我有3.5个apple，你呢？") ==
        Strings{"我", "有", "3.5", "个", "apple", "，", "你", "呢", "？"});
  CHECK(tokens_zh("他说：“好”") == Strings{"他", "说", "：", "“", "好", "”"});
  // R1 and R4 as in 13a.
  CHECK(tokens_zh("(iPhone)3-4台") == Strings{"(", "iPhone", ")", "3", "-", "4", "台"});
}

TEST_CASE("zh: no unescaping and no padding, unlike 13a", "[data][bleu]") {
  CHECK(tokens_zh("&amp;") == Strings{"&", "amp", ";"});  // R1 alone
  CHECK(tokens_13a("&amp;") == Strings{"&"});
  // 13a's padding gives R2 a space before a leading '.', and R3 one after a final '.'; zh has
  // neither, so ".5" and "5." stay whole there.
  CHECK(tokens_zh(".5 5.") == Strings{".5", "5."});
  CHECK(tokens_13a(".5 5.") == Strings{".", "5", "5", "."});
}

TEST_CASE("zh: the ranges as Python reads sacreBLEU's list", "[data][bleu]") {
  // The bounds '\u20000' .. '\u2a6d6' are U+2000 '0' .. U+2A6D '6': U+2001..U+2A6D is set
  // apart, so '—' (U+2014), '€' (U+20AC) and U+2A6D are tokens of their own, U+2A6E is not.
  CHECK(tokens_zh("a—b 5€") == Strings{"a", "—", "b", "5", "€"});
  CHECK(tokens_zh("x\u2A6Dy") == Strings{"x", "\u2A6D", "y"});
  CHECK(tokens_zh("x\u2A6Ey") == Strings{"x\u2A6Ey"});
  // CJK Extension B (U+20000), the range meant, is not set apart.
  CHECK(tokens_zh("a\U00020000b") == Strings{"a\U00020000b"});
  // The ideographs end where sacreBLEU's list does: U+9FBB is in, U+9FBC is not.
  CHECK(tokens_zh("a\u9FBBb") == Strings{"a", "\u9FBB", "b"});
  CHECK(tokens_zh("a\u9FBCb") == Strings{"a\u9FBCb"});
}

TEST_CASE("choose_bleu_tokenize: zh when a tenth of the characters are ideographs",
          "[data][bleu]") {
  CHECK(choose_bleu_tokenize(Strings{"我爱北京。", "我用Python写代码"}) == BleuTokenize::kZh);
  CHECK(choose_bleu_tokenize(Strings{"Ich liebe Berlin.", "Grüße aus Köln"}) == BleuTokenize::k13a);
  // 1 ideograph of 10 non-space characters is a tenth; of 11 it is not (spaces do not count).
  CHECK(choose_bleu_tokenize(Strings{"abc def ghi 北"}) == BleuTokenize::kZh);
  CHECK(choose_bleu_tokenize(Strings{"abc def ghij 北"}) == BleuTokenize::k13a);
  CHECK(choose_bleu_tokenize(Strings{}) == BleuTokenize::k13a);
}

TEST_CASE("BLEU on Chinese counts characters with zh and names its tokenizer", "[data][bleu]") {
  // Without spaces 13a sees each sentence as one or two tokens, and no bigram matches.
  const std::string hyp = "我们明天去北京。", ref = "我们明天去上海。";
  const BleuScore words = sentence_bleu(hyp, ref);
  CHECK(words.hypothesis_length == 1);
  CHECK(words.score == 0);
  CHECK(words.tokenize == BleuTokenize::k13a);
  // zh: 8 tokens each. Unigrams: 6 of 8 match (not 北, 京); bigrams: 4 of 7 (我们 们明 明天
  // 天去); trigrams: 3 of 6; 4-grams: 2 of 5 (我们明天 们明天去):
  //   BLEU = 100 * (6/8 * 4/7 * 3/6 * 2/5)^(1/4) = 100 * (3/35)^(1/4) = 54.11
  const BleuScore chars = sentence_bleu(hyp, ref, BleuTokenize::kZh);
  CHECK(chars.score == Approx(100 * std::pow(3.0 / 35, 0.25)));
  CHECK(chars.to_string() ==
        "BLEU = 54.11 75.0/57.1/50.0/40.0 (BP = 1.000 ratio = 1.000 hyp_len = 8 ref_len = 8) "
        "tok:zh");
}

#ifdef GRADFORMER_PYTHON
namespace {

// The fixed test set the two scorers are compared on: German with umlauts, ß, quotes and
// numbers, English with contractions, hyphens and an escaped '&', Chinese with fullwidth
// punctuation and ASCII, and '—' and '€'.
const Strings kHypotheses = {
    "„Das kostet 1.5 Mio. €“, sagte Jürgen Gross am 3-4. Mai.",
    "Die Straße ist etwa 3-4 km lang &amp; schön.",
    "I don't think it is well-known &amp; that's fine.",
    "The price rose 10,000 dollars — a record, or so they say.",
    "我们在2024年买了三台iPhone，价格是5000元！",
    "他说：“这不是一个问题”。",
    "Euro-Preis: 5 € — oder 6€?",
};
const Strings kReferences = {
    "„Das kostet 1.5 Mio. €“, sagte Jürgen Groß am 3-4. Mai.",
    "Die Straße ist 3-4 km lang & schön.",
    "I don't think it's well-known, &amp; that's fine.",
    "The price rose 10,000.50 dollars — a \"record\" (or so they say).",
    "我们在2024年买了3台iPhone，价格是5,000元。",
    "他说：“这不是问题。”",
    "Euro-Preis: 5€ — oder 6 €?",
};

void write_lines(const std::string& path, const Strings& lines) {
  std::ofstream out(path, std::ios::binary);
  for (const std::string& line : lines) out << line << '\n';
}

// The output of `python3 scripts/score.py HYP REF --tokenize NAME`.
std::string run_score_py(const gf::testing::TempDir& dir, const Strings& hyps, const Strings& refs,
                         const std::string& tokenize) {
  write_lines(dir.file("hyp.txt"), hyps);
  write_lines(dir.file("ref.txt"), refs);
  const std::string command = std::string("'") + GRADFORMER_PYTHON + "' '" + GRADFORMER_SOURCE_DIR +
                              "/scripts/score.py' '" + dir.file("hyp.txt") + "' '" +
                              dir.file("ref.txt") + "' --tokenize " + tokenize + " > '" +
                              dir.file("out.txt") + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(dir.file("out.txt"));
  const std::string out{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  INFO(command << "\n" << out);
  REQUIRE(status == 0);
  return out;
}

// The number after "NAME = " on out's line that starts with it.
double number_after(const std::string& out, const std::string& name) {
  const size_t at = out.find(name + " = ");
  REQUIRE(at != std::string::npos);
  return std::stod(out.substr(at + name.size() + 3));
}

}  // namespace

TEST_CASE("scripts/score.py gives the same BLEU and chrF as data/bleu.h", "[data][bleu]") {
  const gf::testing::TempDir dir("score_py");
  const ChrfScore chrf = corpus_chrf(kHypotheses, kReferences);
  for (const BleuTokenize tokenize : {BleuTokenize::k13a, BleuTokenize::kZh}) {
    const BleuScore bleu = corpus_bleu(kHypotheses, kReferences, tokenize);
    const std::string out =
        run_score_py(dir, kHypotheses, kReferences, std::string(bleu_tokenize_name(tokenize)));
    INFO(bleu.to_string() << "\n" << out);
    CHECK(bleu.score > 10);  // every order has matches: a score worth comparing
    CHECK(number_after(out, "BLEU") == Approx(bleu.score).margin(0.01));
    CHECK(out.find(bleu.to_string() + "\n") != std::string::npos);  // counts and lengths too
    CHECK(number_after(out, "chrF2") == Approx(chrf.score).margin(0.01));
  }
  // auto: the Chinese sentences alone are zh, the others 13a, in both scorers.
  const Strings zh_hyps(kHypotheses.begin() + 4, kHypotheses.begin() + 6);
  const Strings zh_refs(kReferences.begin() + 4, kReferences.begin() + 6);
  REQUIRE(choose_bleu_tokenize(zh_refs) == BleuTokenize::kZh);
  const BleuScore zh = corpus_bleu(zh_hyps, zh_refs, BleuTokenize::kZh);
  const std::string out = run_score_py(dir, zh_hyps, zh_refs, "auto");
  INFO(zh.to_string() << "\n" << out);
  CHECK(out.find(zh.to_string() + "\n") != std::string::npos);
  CHECK(number_after(out, "chrF2") == Approx(corpus_chrf(zh_hyps, zh_refs).score).margin(0.01));
  const Strings other_refs(kReferences.begin(), kReferences.begin() + 4);
  CHECK(choose_bleu_tokenize(other_refs) == BleuTokenize::k13a);
  const Strings other_hyps(kHypotheses.begin(), kHypotheses.begin() + 4);
  CHECK_THAT(run_score_py(dir, other_hyps, other_refs, "auto"),
             Catch::Matchers::Contains(") tok:13a\n"));
}
#endif
