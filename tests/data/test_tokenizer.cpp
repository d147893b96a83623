#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "autograd/errors.h"
#include "autograd/random.h"
#include "data/tokenizer.h"
#include "data/utf8.h"

using namespace gf;
using namespace gf::data;
using Catch::Matchers::Contains;
using Strings = std::vector<std::string>;

namespace {

// Texts every tokenizer must give back unchanged.
const Strings kRoundTrip = {
    "The cat sat on the mat.",
    "Grüße aus Köln",
    "Ça déjà été",
    "我爱北京天安门",
    "emoji: \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD and a family "
    "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7",
    "mixed: «Schöne Grüße», dit-il — 北京 (2024) costs 3.50 €!",
    "  leading, trailing and  double spaces  ",
    "tabs\tand\nnew lines\r\n",
    "",
    " ",
    "▁ a literal U+2581 is just a character",
    "<pad> <unk> <0x41> look like specials but are text",
};

const Strings kTraining = {
    "the cat sat on the mat .",         "the dog sat on the log .",
    "die Katze saß auf der Matte .",    "der Hund saß auf dem Baumstamm .",
    "le chat est assis sur le tapis .", "le chien est assis sur la bûche .",
};

std::vector<int32_t> encode(const Tokenizer& t, const std::string& s) {
  return t.encode(s);
}

}  // namespace

TEST_CASE("split_words keeps one leading space with each word and splits off punctuation",
          "[data][tokenizer]") {
  CHECK(split_words("Grüße, Köln!") == Strings{"Grüße", ",", " Köln", "!"});
  CHECK(split_words("a  b\n") == Strings{"a", " ", " b", "\n"});
  CHECK(split_words("我爱北京") == Strings{"我", "爱", "北", "京"});
  CHECK(split_words("«Ça» va") == Strings{"«", "Ça", "»", " va"});
  CHECK(split_words("3.50 €") == Strings{"3", ".", "50", " €"});
  CHECK(split_words("").empty());
  for (const std::string& s : kRoundTrip) {
    std::string joined;
    for (const std::string& w : split_words(s)) joined += w;
    CHECK(joined == s);
  }
  REQUIRE_THROWS_AS(split_words("a\xC3"), Utf8Error);
}

TEST_CASE("specials have the ids of data/vocab.h and labels show spaces as U+2581",
          "[data][tokenizer]") {
  const BpeTokenizer bpe = BpeTokenizer::learn(kTraining, {.vocab_size = 320});
  CHECK(bpe.token(kPad) == "<pad>");
  CHECK(bpe.token(kBos) == "<bos>");
  CHECK(bpe.token(kEos) == "<eos>");
  CHECK(bpe.token(kUnk) == "<unk>");
  CHECK(bpe.token(kNumSpecial) == "<0x00>");
  CHECK(bpe.token(kNumSpecial + 0xC3) == "<0xC3>");
  CHECK(bpe.id("<eos>") == kEos);
  CHECK_FALSE(bpe.id("no such token").has_value());
  const auto the = bpe.id(" the");
  REQUIRE(the.has_value());
  CHECK(bpe.label(*the) == "▁the");
  CHECK(printable("a\tb\n") == "a\\tb\\n");
  REQUIRE_THROWS_AS(bpe.token(bpe.size()), IndexError);
  REQUIRE_THROWS_WITH(bpe.token(-1), "tokenizer: token id -1 is out of range [0, 320)");
}

TEST_CASE("char and bpe tokenizers with byte fallback round-trip any valid UTF-8",
          "[data][tokenizer]") {
  // Learned on text that lacks most of the characters below: byte fallback covers them.
  const CharTokenizer chars = CharTokenizer::learn(kTraining);
  const BpeTokenizer bpe = BpeTokenizer::learn(kTraining, {.vocab_size = 330});
  for (const Tokenizer* t : std::vector<const Tokenizer*>{&chars, &bpe}) {
    for (const std::string& s : kRoundTrip) {
      INFO(t->kind() << ": \"" << s << "\"");
      const std::vector<int32_t> ids = t->encode(s);
      CHECK(t->decode(ids) == s);
      for (const int32_t id : ids) CHECK((id >= kNumSpecial && id < t->size()));  // no unk
    }
  }
  // An unseen character becomes the bytes of its UTF-8 encoding: é is C3 A9.
  CHECK(encode(chars, "é") == std::vector<int32_t>{kNumSpecial + 0xC3, kNumSpecial + 0xA9});
  CHECK_FALSE(chars.covers("café"));
  CHECK(chars.covers("the cat"));
  CHECK(bpe.covers("le chat"));
}

TEST_CASE("char and bpe tokenizers round-trip random code points from every plane",
          "[data][tokenizer]") {
  const CharTokenizer chars = CharTokenizer::learn(kTraining);
  const BpeTokenizer bpe = BpeTokenizer::learn(kTraining, {.vocab_size = 330});
  Rng rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    std::u32string code_points;
    const int64_t length = rng.below(12);
    for (int64_t k = 0; k < length; ++k) {
      // Half ASCII (spaces and punctuation included), half anywhere up to U+10FFFF.
      char32_t c = rng.bernoulli(0.5f) ? static_cast<char32_t>(rng.below(0x80))
                                       : static_cast<char32_t>(rng.below(0x110000));
      if (c >= 0xD800 && c <= 0xDFFF) c = U'x';  // surrogates have no UTF-8 form
      code_points.push_back(c);
    }
    const std::string s = encode_utf8(code_points);
    CHECK(chars.decode(chars.encode(s)) == s);
    CHECK(bpe.decode(bpe.encode(s)) == s);
  }
}

TEST_CASE("without byte fallback, and for words, text outside the vocabulary becomes unk",
          "[data][tokenizer]") {
  const CharTokenizer chars = CharTokenizer::learn(kTraining, {.byte_fallback = false});
  CHECK(chars.size() == CharTokenizer::learn(kTraining).size() - 256);
  const std::vector<int32_t> ids = chars.encode("café");
  REQUIRE(ids.size() == 4);
  CHECK(ids[3] == kUnk);
  CHECK(chars.decode(ids) == "caf\u2047");  // <unk> decodes to ⁇

  const WordTokenizer words = WordTokenizer::learn(kTraining);
  for (const std::string& s : kTraining) CHECK(words.decode(words.encode(s)) == s);
  CHECK(words.covers("the cat sat on the log ."));
  CHECK_FALSE(words.covers("the cow sat"));
  // An unknown word after a space keeps its space, so the decoded text keeps its spacing.
  CHECK(words.encode("the cow sat") ==
        std::vector<int32_t>{*words.id("the"), *words.id(" "), kUnk, *words.id(" sat")});
  CHECK(words.decode(words.encode("the cow sat")) == "the ⁇ sat");
  // " the" (after a space) and "the" (at the start) are different words.
  CHECK(words.id(" the") != words.id("the"));

  // A word tokenizer learned on the round-trip texts gives them all back.
  const WordTokenizer own = WordTokenizer::learn(kRoundTrip);
  for (const std::string& s : kRoundTrip) CHECK(own.decode(own.encode(s)) == s);
}

TEST_CASE("word tokenizer: most frequent first, min_count and max_size", "[data][tokenizer]") {
  const Strings texts = {"b a b", "c b a", "d"};
  // Words: "b" " a" " b" | "c" " b" " a" | "d", so " a" 2, " b" 2, "b" 1, "c" 1, "d" 1,
  // sorted by count, then by bytes; the lone space " " comes last, added for unknown words.
  const WordTokenizer all = WordTokenizer::learn(texts);
  REQUIRE(all.size() == kNumSpecial + 6);
  CHECK(all.token(4) == " a");
  CHECK(all.token(5) == " b");
  CHECK(all.token(6) == "b");
  CHECK(all.token(8) == "d");
  CHECK(all.token(9) == " ");
  const WordTokenizer frequent = WordTokenizer::learn(texts, {.max_size = 0, .min_count = 2});
  CHECK(frequent.size() == kNumSpecial + 3);  // " a", " b", " "
  // Room for 3 words: " a", " b", then " " takes the place "b" would have had.
  const WordTokenizer small = WordTokenizer::learn(texts, {.max_size = 7, .min_count = 1});
  CHECK(small.size() == 7);
  CHECK(small.token(6) == " ");
  CHECK(small.encode("b") == std::vector<int32_t>{kUnk});
  REQUIRE_THROWS_WITH(WordTokenizer::learn(texts, {.max_size = 4, .min_count = 1}),
                      Contains("max_size 4 leaves no room"));
}

TEST_CASE("decode skips pad, bos and eos, repairs bad byte runs, and checks ids",
          "[data][tokenizer]") {
  const CharTokenizer chars = CharTokenizer::learn(Strings{"ab"});
  const int32_t a = *chars.id("a"), b = *chars.id("b");
  CHECK(chars.decode(std::vector<int32_t>{kBos, a, kPad, b, kEos, kPad}) == "ab");
  // A model may emit byte tokens that are not UTF-8: each bad byte shows as U+FFFD.
  CHECK(chars.decode(std::vector<int32_t>{a, kNumSpecial + 0xC3, b}) ==
        "a\uFFFD"
        "b");
  CHECK(chars.decode(std::vector<int32_t>{kNumSpecial + 0xC3, kNumSpecial + 0xA9}) == "é");
  REQUIRE_THROWS_WITH(chars.decode(std::vector<int32_t>{a, 9999}),
                      Contains("token id 9999 is out of range [0, 262)"));
}

TEST_CASE("encoding or learning from invalid UTF-8 names the byte offset", "[data][tokenizer]") {
  const CharTokenizer chars = CharTokenizer::learn(kTraining);
  REQUIRE_THROWS_AS(chars.encode("ab\x80"), Utf8Error);
  REQUIRE_THROWS_WITH(chars.encode("ab\x80"), Contains("invalid UTF-8 at byte 2"));
  const Strings bad = {"fine", "also fine", "K\xF6ln"};
  REQUIRE_THROWS_WITH(BpeTokenizer::learn(bad),
                      Contains("invalid UTF-8 at byte 1: the 4-byte sequence starting with 0xF6"));
  REQUIRE_THROWS_WITH(BpeTokenizer::learn(bad), Contains("in bpe training text 2"));
  REQUIRE_THROWS_WITH(WordTokenizer::learn(bad), Contains("in word tokenizer training text 2"));
}

TEST_CASE("bpe learns the merges of the classic low/lower/newest/widest example in order",
          "[data][tokenizer][bpe]") {
  // Sennrich et al. 2016, §3.2: "low" x5, "lower" x2, "newest" x6, "widest" x3, each its own
  // text so that no word carries a space. Characters get ids in code point order:
  //   d 4, e 5, i 6, l 7, n 8, o 9, r 10, s 11, t 12, w 13   (no byte fallback)
  Strings texts;
  for (const auto& [word, count] : std::vector<std::pair<std::string, int>>{
           {"low", 5}, {"lower", 2}, {"newest", 6}, {"widest", 3}})
    for (int i = 0; i < count; ++i) texts.push_back(word);
  const BpeTokenizer bpe = BpeTokenizer::learn(texts, {.vocab_size = 100, .byte_fallback = false});
  // Pair counts at the start (low 5, lower 2, newest 6, widest 3):
  //   es 6+3 = 9, st 9, we 2+6 = 8, lo 5+2 = 7, ow 7, ne 6, ew 6, wi 3, id 3, de 3, er 2
  // 1. es and st tie at 9; ties go to the smaller (left id, right id): (e 5, s 11) < (s 11,
  //    t 12), so "es". Then "es"+t counts 9 and wins: "est".
  // 3. lo 7 and ow 7 tie: (l 7, o 9) < (o 9, w 13): "lo", then "lo"+w 7: "low".
  // 5. ne (8, 5), ew (5, 13) and w+est (13, 15) tie at 6; (5, 13) is the smallest: "ew" is
  //    id 18. Then n+ew (8, 18) and ew+est (18, 15) tie at 6: (8, 18) first, "new", then
  //    "newest".
  // 8. wi (13, 6), id (6, 4) and d+est (4, 15) tie at 3: "dest" (21), then i+dest (6, 21):
  //    "idest", then w+idest: "widest".
  // 11. low+e (17, 5) and er (5, 10) tie at 2: "er", then low+er: "lower". Every word is now
  //    one token and learning stops short of 100: 4 specials + 10 characters + 12 merges = 26.
  const Strings expected = {"es",     "est",  "lo",    "low",    "ew", "new",
                            "newest", "dest", "idest", "widest", "er", "lower"};
  REQUIRE(bpe.merges().size() == expected.size());
  for (size_t rank = 0; rank < expected.size(); ++rank) {
    INFO("merge " << rank);
    CHECK(bpe.token(bpe.merges()[rank].result) == expected[rank]);
  }
  CHECK(bpe.size() == kNumSpecial + 10 + 12);
  CHECK(bpe.encode("lowest") == std::vector<int32_t>{*bpe.id("low"), *bpe.id("est")});
  CHECK(bpe.encode("newer") == std::vector<int32_t>{*bpe.id("new"), *bpe.id("er")});
}

TEST_CASE("bpe reaches the vocabulary size asked for and is deterministic",
          "[data][tokenizer][bpe]") {
  // A corpus of 400 sentences of made-up words, from a seed.
  Rng rng(7);
  const Strings syllables = {"ka", "lo", "mü", "ré", "sa", "te", "un", "ver", "ion", "北"};
  Strings texts;
  for (int s = 0; s < 400; ++s) {
    std::string sentence;
    for (int w = 0; w < 8; ++w) {
      if (w > 0) sentence += ' ';
      const int64_t length = 1 + rng.below(3);
      for (int64_t k = 0; k < length; ++k)
        sentence += syllables[static_cast<size_t>(rng.below(10))];
    }
    texts.push_back(sentence + ".");
  }
  const BpeTokenizer a = BpeTokenizer::learn(texts, {.vocab_size = 400});
  CHECK(a.size() == 400);
  // The texts in another order count the same pairs, so they give the same merges.
  const Strings reversed(texts.rbegin(), texts.rend());
  const BpeTokenizer b = BpeTokenizer::learn(reversed, {.vocab_size = 400});
  CHECK(a.to_json() == b.to_json());
  // Merges shorten the training text: far fewer tokens than characters.
  size_t tokens = 0, characters = 0;
  for (const std::string& s : texts) {
    tokens += a.encode(s).size();
    characters += decode_utf8(s).size();
    CHECK(a.decode(a.encode(s)) == s);
  }
  CHECK(tokens * 2 < characters);

  REQUIRE_THROWS_WITH(BpeTokenizer::learn(texts, {.vocab_size = 100}),
                      Contains("vocab_size 100 is too small for the 4 special, 256 byte and"));
}

namespace {

// Learning as Sennrich et al. 2016 write it: recount every pair of every word after each
// merge. Slow, plainly right; the fast version must learn the same merges.
std::vector<std::pair<std::string, std::string>> naive_bpe_merges(const Strings& texts,
                                                                  int32_t vocab_size) {
  std::map<std::string, int64_t> word_counts;
  for (const std::string& text : texts)
    for (const std::string& word : split_words(text)) ++word_counts[word];
  // Ids as BpeTokenizer assigns them: specials and bytes, characters in code point order,
  // then each new token (a spelling made twice keeps its first id).
  std::map<std::string, int32_t> ids;
  std::vector<std::string> tokens;
  const auto add = [&](const std::string& t) {
    if (ids.emplace(t, static_cast<int32_t>(kNumSpecial + 256 + tokens.size())).second)
      tokens.push_back(t);
  };
  std::set<char32_t> alphabet;
  for (const auto& [word, count] : word_counts)
    for (const char32_t c : decode_utf8(word)) alphabet.insert(c);
  for (const char32_t c : alphabet) add(encode_utf8(c));
  std::vector<std::pair<std::vector<std::string>, int64_t>> words;
  for (const auto& [word, count] : word_counts) {
    std::vector<std::string> pieces;
    for (const std::string_view c : split_utf8(word)) pieces.emplace_back(c);
    words.emplace_back(pieces, count);
  }
  std::vector<std::pair<std::string, std::string>> merges;
  while (kNumSpecial + 256 + static_cast<int32_t>(tokens.size()) < vocab_size) {
    std::map<std::pair<int32_t, int32_t>, int64_t> pairs;
    for (const auto& [pieces, count] : words)
      for (size_t i = 0; i + 1 < pieces.size(); ++i)
        pairs[{ids[pieces[i]], ids[pieces[i + 1]]}] += count;
    if (pairs.empty()) break;
    auto best = pairs.begin();  // the most frequent; on a tie the first in (left, right) order
    for (auto it = pairs.begin(); it != pairs.end(); ++it)
      if (it->second > best->second) best = it;
    const std::string left = tokens[static_cast<size_t>(best->first.first - kNumSpecial - 256)];
    const std::string right = tokens[static_cast<size_t>(best->first.second - kNumSpecial - 256)];
    merges.emplace_back(left, right);
    add(left + right);
    for (auto& [pieces, count] : words) {
      std::vector<std::string> merged;
      for (size_t i = 0; i < pieces.size(); ++i) {
        if (i + 1 < pieces.size() && pieces[i] == left && pieces[i + 1] == right) {
          merged.push_back(left + right);
          ++i;
        } else {
          merged.push_back(pieces[i]);
        }
      }
      pieces = merged;
    }
  }
  return merges;
}

}  // namespace

TEST_CASE("bpe's incremental pair counts learn what recounting everything learns",
          "[data][tokenizer][bpe]") {
  Rng rng(3);
  const Strings letters = {"a", "b", "c", "ä", "ab", "ba", "北", " ", " ", "."};
  Strings texts;
  for (int s = 0; s < 60; ++s) {
    std::string text;
    const int64_t length = 1 + rng.below(30);
    for (int64_t k = 0; k < length; ++k) text += letters[static_cast<size_t>(rng.below(10))];
    texts.push_back(text);
  }
  const int32_t vocab_size = 500;
  const BpeTokenizer fast = BpeTokenizer::learn(texts, {.vocab_size = vocab_size});
  const auto slow = naive_bpe_merges(texts, vocab_size);
  REQUIRE(fast.merges().size() == slow.size());
  CHECK(slow.size() > 100);
  for (size_t rank = 0; rank < slow.size(); ++rank) {
    INFO("merge " << rank);
    CHECK(fast.token(fast.merges()[rank].left) == slow[rank].first);
    CHECK(fast.token(fast.merges()[rank].right) == slow[rank].second);
  }
}

TEST_CASE("bpe: two merges that spell the same token share its id", "[data][tokenizer][bpe]") {
  const Strings characters = {"a", "b", "c"};
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"a", "b"}, {"b", "c"}, {"ab", "c"}, {"a", "bc"}};
  const BpeTokenizer bpe(characters, merges, /*byte_fallback=*/false);
  CHECK(bpe.size() == kNumSpecial + 3 + 3);  // ab, bc, abc
  CHECK(bpe.merges()[2].result == bpe.merges()[3].result);
  // "abc": (a, b) has rank 0, so ab + c, then (ab, c) gives abc.
  CHECK(bpe.encode("abc") == std::vector<int32_t>{*bpe.id("abc")});
  CHECK(bpe.encode("bcb") == std::vector<int32_t>{*bpe.id("bc"), *bpe.id("b")});
}

TEST_CASE("to_json and tokenizer_from_json round-trip every kind", "[data][tokenizer][json]") {
  const WordTokenizer words = WordTokenizer::learn(kTraining);
  const CharTokenizer chars = CharTokenizer::learn(kTraining, {.byte_fallback = false});
  const BpeTokenizer bpe = BpeTokenizer::learn(kTraining, {.vocab_size = 330});
  for (const Tokenizer* t : std::vector<const Tokenizer*>{&words, &chars, &bpe}) {
    INFO(t->kind());
    const std::string json = t->to_json();
    CHECK(json.find('\n') == std::string::npos);  // one line, for the checkpoint metadata
    const std::unique_ptr<Tokenizer> back = tokenizer_from_json(json);
    CHECK(back->kind() == t->kind());
    CHECK(back->to_json() == json);
    REQUIRE(back->size() == t->size());
    for (int32_t id = 0; id < t->size(); ++id) CHECK(back->token(id) == t->token(id));
    for (const std::string& s : kRoundTrip) CHECK(back->encode(s) == t->encode(s));
  }
  const std::string head = R"({"type":"char","version":1,"size":)" + std::to_string(chars.size()) +
                           R"(,"byte_fallback":false,"characters":[" ",".",")";
  CHECK(chars.to_json().substr(0, head.size()) == head);
}

TEST_CASE("tokenizer_from_json refuses malformed documents with a clear message",
          "[data][tokenizer][json]") {
  const auto refuses = [](const std::string& json, const std::string& message) {
    INFO(json);
    REQUIRE_THROWS_AS(tokenizer_from_json(json), FormatError);
    REQUIRE_THROWS_WITH(tokenizer_from_json(json), Contains(message));
  };
  refuses("{\"type\": \"bpe\"", "tokenizer json: not valid JSON");
  refuses("[1, 2]", "tokenizer json: expected an object, found array");
  refuses(R"({"version": 1})", "tokenizer json: missing \"type\"");
  refuses(R"({"type": "sentencepiece", "version": 1, "size": 4})",
          "\"type\" is \"sentencepiece\", expected \"word\", \"char\" or \"bpe\"");
  refuses(R"({"type": "word", "version": 2, "size": 4, "words": []})",
          "\"version\" is 2; this build reads version 1");
  refuses(R"({"type": "word", "version": 1, "words": []})", "missing \"size\"");
  refuses(R"({"type": "word", "version": 1, "size": 5, "words": ["a"], "merges": []})",
          "unexpected key \"merges\" for type \"word\"");
  refuses(R"({"type": "word", "version": 1, "size": 6, "words": ["a"]})",
          "\"size\" is 6 but the tokens listed make 5");
  refuses(R"({"type": "word", "version": 1, "size": 6, "words": ["a", 7]})",
          "\"words\"[1] is number, not a string");
  refuses(R"({"type": "word", "version": 1, "size": 6, "words": ["a", "a"]})",
          "\"a\" is listed twice");
  refuses(R"({"type": "word", "version": 1, "size": 5, "words": ["<pad>"]})",
          "\"<pad>\" is 3 words, not one");
  refuses(R"({"type": "char", "version": 1, "size": 5, "characters": ["a"]})",
          "missing \"byte_fallback\"");
  refuses(R"({"type": "char", "version": 1, "size": 5, "byte_fallback": 1, "characters": ["a"]})",
          "\"byte_fallback\" must be true or false");
  refuses(R"({"type": "char", "version": 1, "size": 5, "byte_fallback": false,
              "characters": ["ab"]})",
          "\"ab\" is 2 characters, not one");
  refuses(R"({"type": "bpe", "version": 1, "size": 7, "byte_fallback": false,
              "characters": ["a", "b"], "merges": [["a", "c"]]})",
          "merge 0 (\"a\", \"c\") uses \"c\", which is neither a character nor the result");
  refuses(R"({"type": "bpe", "version": 1, "size": 7, "byte_fallback": false,
              "characters": ["a", "b"], "merges": [["a", "b"], ["a", "b"]]})",
          "merge 1 (\"a\", \"b\") is listed twice");
  refuses(R"({"type": "bpe", "version": 1, "size": 7, "byte_fallback": false,
              "characters": ["a", "b"], "merges": [["a"]]})",
          "\"merges\"[0] is [\"a\"], not a pair of strings");
  refuses(R"({"type": "bpe", "version": 1, "size": 262, "byte_fallback": true,
              "characters": ["a", "b"], "merges": [["<0x41>", "b"]]})",
          "uses \"<0x41>\", which is neither a character");
}

// Not a test: how long learning BPE takes on 15k synthetic sentence pairs (the size of the
// toy translation corpus). Run with: gradformer_tests "[.bpe-speed]" -s
TEST_CASE("bpe learning speed on 15k synthetic sentence pairs", "[.bpe-speed]") {
  Rng rng(1);
  const Strings syllables = {"a", "e", "i",  "o", "u", "ä", "ö",  "ü",  "é",  "ch",  "sch",  "st",
                             "n", "r", "t",  "l", "m", "k", "ge", "en", "er", "ung", "tion", "qu",
                             "ß", "ç", "th", "w", "h", "s", "d",  "b",  "p",  "f",   "v",    "z"};
  // A Zipf-like lexicon: 20k made-up words, word k drawn with probability ~ 1 / (k + 1).
  Strings lexicon;
  for (int k = 0; k < 20000; ++k) {
    std::string word;
    const int64_t length = 2 + rng.below(5);
    for (int64_t s = 0; s < length; ++s)
      word += syllables[static_cast<size_t>(rng.below(static_cast<int64_t>(syllables.size())))];
    lexicon.push_back(word);
  }
  std::vector<double> cumulative;
  double total = 0;
  for (size_t k = 0; k < lexicon.size(); ++k)
    cumulative.push_back(total += 1.0 / static_cast<double>(k + 1));
  const auto draw = [&] {
    const double u = static_cast<double>(rng.uniform()) * total;
    const size_t k = static_cast<size_t>(std::lower_bound(cumulative.begin(), cumulative.end(), u) -
                                         cumulative.begin());
    return lexicon[std::min(k, lexicon.size() - 1)];
  };
  Strings texts;  // 15k source sentences and 15k target sentences, 12 words on average
  int64_t characters = 0;
  for (int i = 0; i < 2 * 15000; ++i) {
    std::string sentence;
    const int64_t words = 6 + rng.below(13);
    for (int64_t w = 0; w < words; ++w) sentence += (w > 0 ? " " : "") + draw();
    sentence += ".";
    characters += static_cast<int64_t>(sentence.size());
    texts.push_back(sentence);
  }
  for (const int32_t vocab_size : {4000, 8000, 16000}) {
    const auto start = std::chrono::steady_clock::now();
    const BpeTokenizer bpe = BpeTokenizer::learn(texts, {.vocab_size = vocab_size});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto start_encode = std::chrono::steady_clock::now();
    int64_t tokens = 0;
    for (const std::string& s : texts) tokens += static_cast<int64_t>(bpe.encode(s).size());
    const double encode_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_encode).count();
    WARN("bpe: " << texts.size() << " sentences (" << characters << " bytes), vocab " << bpe.size()
                 << " (" << bpe.merges().size() << " merges) learned in " << seconds
                 << " s; encoding them all: " << encode_seconds << " s, " << tokens << " tokens");
    CHECK(bpe.size() == vocab_size);
  }
}
