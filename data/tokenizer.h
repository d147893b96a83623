// Tokenizers: text -> token ids -> text, three ways behind one interface.
//
//   WordTokenizer  one id per word or punctuation mark; unknown words become unk
//   CharTokenizer  one id per character (Unicode code point)
//   BpeTokenizer   byte-pair encoding (Sennrich, Haddow and Birch 2016, "Neural Machine
//                  Translation of Rare Words with Subword Units", §3.2): start from characters
//                  and merge the most frequent adjacent pair, again and again, until the
//                  vocabulary has the size asked for. The paper (Vaswani et al. 2017, §5.1)
//                  learns one such vocabulary shared by source and target ("a shared
//                  source-target vocabulary of about 37000 tokens"); learn from both sides'
//                  sentences together to do the same.
//
// Every vocabulary starts with the special tokens of data/vocab.h: <pad> 0, <bos> 1, <eos> 2,
// <unk> 3. With byte fallback (CharTokenizer and BpeTokenizer, on by default) the next 256 ids
// are the bytes <0x00> .. <0xFF>, and a character the vocabulary lacks is written as the bytes
// of its UTF-8 encoding, as SentencePiece does.
//
// Words. Text is first cut into words (split_words): a run of letters and digits, or a single
// punctuation mark, symbol or CJK ideograph, each taking one space in front of it when there
// is one; every other whitespace character stands alone. "Grüße, Köln!" gives
// "Grüße" "," " Köln" "!". The space is part of the token text (shown as "▁", U+2581, in
// labels), so decoding is plain concatenation and no spacing is ever lost. BPE merges stay
// inside a word.
//
// What round-trips, decode(encode(s)) == s:
//   - CharTokenizer and BpeTokenizer with byte fallback: every valid UTF-8 string.
//   - Without byte fallback, and for WordTokenizer: every string whose characters (words,
//     for WordTokenizer) the vocabulary holds, e.g. any text it was learned from; covers(s)
//     says whether s is such a string. Anything else encodes to <unk> (a word after a space
//     to " " and <unk>, keeping the space), and <unk> decodes to "⁇".
// encode throws Utf8Error (naming the byte offset) for invalid UTF-8. decode skips <pad>,
// <bos> and <eos>, writes a run of byte tokens that is not valid UTF-8 with U+FFFD in place
// of each bad byte (a model may emit any sequence), and throws IndexError for an id outside
// [0, size()).
//
// to_json()/tokenizer_from_json() store a tokenizer as one line of JSON, for the checkpoint's
// __metadata__ (docs/checkpoint-format.md, "The tokenizer"); the round trip gives the same ids
// for every text, and a malformed document is refused with a FormatError saying what is wrong.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data/utf8.h"
#include "data/vocab.h"

namespace gf::data {

// How split_words and bleu_tokenize see a character.
enum class CharClass {
  kSpace,   // Unicode White_Space: separates words
  kLetter,  // letters, digits, marks, and anything not listed below: runs of them make a word
  kAlone,   // punctuation, symbols, emoji, control characters and CJK ideographs: one per word
};
CharClass char_class(char32_t code_point);

// The words of text as described above; concatenating them gives text back. Throws Utf8Error.
std::vector<std::string> split_words(std::string_view text);

// The token text shown for one token: spaces as "▁", newline, tab and carriage return as
// "\n", "\t", "\r"; everything else as it is.
std::string printable(std::string_view token_text);

// The interface all three tokenizers share. Ids are int32_t, as in data/pair.h.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // "word", "char" or "bpe".
  virtual std::string kind() const = 0;
  // Token ids of text, without <bos> or <eos> (batching adds them). Throws Utf8Error.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // The text of ids; see the header comment for specials and byte tokens.
  std::string decode(std::span<const int32_t> ids) const;
  // Whether every character (word, for WordTokenizer) of text has its own token, so that
  // encode(text) has no <unk> and no byte tokens. Throws Utf8Error.
  bool covers(std::string_view text) const;

  // The number of ids: the rows of the embedding table.
  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  // The text of token id: " low", "<eos>", "<0xC3>". Throws IndexError.
  const std::string& token(int32_t id) const;
  // The token for a heatmap axis: printable(token(id)). Throws IndexError.
  std::string label(int32_t id) const { return printable(token(id)); }
  // The id of a token text, if the vocabulary has it.
  std::optional<int32_t> id(std::string_view token_text) const;
  // Whether byte tokens <0x00> .. <0xFF> hold ids kNumSpecial .. kNumSpecial + 255.
  bool byte_fallback() const { return byte_fallback_; }

  // One line of JSON, {"type": ..., "version": 1, "size": ..., ...}.
  virtual std::string to_json() const = 0;

 protected:
  explicit Tokenizer(bool byte_fallback);
  // Appends a token and returns its id, or returns the id it already has.
  int32_t add_token(const std::string& token_text);
  // Appends the ids of a character that has no token of its own: its bytes, or <unk>.
  void append_unknown(std::string_view character, std::vector<int32_t>& ids) const;

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> ids_;
  bool byte_fallback_;
};

// Reads what to_json wrote, whatever the kind. Throws FormatError ("tokenizer json: ...")
// for a document that is not one.
std::unique_ptr<Tokenizer> tokenizer_from_json(std::string_view json);

// ---- words ----

struct WordOptions {
  int32_t max_size = 0;   // at most this many ids in all, specials included; 0: no limit
  int64_t min_count = 1;  // leave out words seen fewer times
};

// A word-level vocabulary, most frequent words first (ties in byte order of the text), and
// always the lone space " ": an unknown word after a space encodes as " " and <unk>, so that
// "the cow sat" with "cow" unknown decodes to "the ⁇ sat".
class WordTokenizer : public Tokenizer {
 public:
  static WordTokenizer learn(std::span<const std::string> texts, const WordOptions& options = {});
  // The vocabulary given word by word (ids from kNumSpecial on, in order); throws
  // std::invalid_argument for an empty, duplicate or reserved word.
  explicit WordTokenizer(std::span<const std::string> words);

  std::string kind() const override { return "word"; }
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string to_json() const override;
};

// ---- characters ----

struct CharOptions {
  bool byte_fallback = true;
};

// One token per character of the training text, in code point order.
class CharTokenizer : public Tokenizer {
 public:
  static CharTokenizer learn(std::span<const std::string> texts, const CharOptions& options = {});
  // The characters given one by one; throws std::invalid_argument for a string that is not
  // exactly one character, or a duplicate.
  CharTokenizer(std::span<const std::string> characters, bool byte_fallback);

  std::string kind() const override { return "char"; }
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string to_json() const override;
};

// ---- byte-pair encoding ----

struct BpeOptions {
  int32_t vocab_size = 8000;  // ids in all: specials, bytes, characters and merges
  bool byte_fallback = true;
};

// One learned merge: the adjacent tokens left, right become result.
struct BpeMerge {
  int32_t left;
  int32_t right;
  int32_t result;
};

class BpeTokenizer : public Tokenizer {
 public:
  // Learns merges until size() == options.vocab_size, or until no word has two tokens left
  // (then size() is smaller). Throws std::invalid_argument when vocab_size is too small to
  // hold the specials, the bytes and every character of texts.
  static BpeTokenizer learn(std::span<const std::string> texts, const BpeOptions& options = {});
  // The characters, then the merges as pairs of token texts, in the order they were learned.
  // Throws std::invalid_argument for a bad character or a merge of unknown tokens.
  BpeTokenizer(std::span<const std::string> characters,
               std::span<const std::pair<std::string, std::string>> merges, bool byte_fallback);

  std::string kind() const override { return "bpe"; }
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string to_json() const override;

  // The merges in rank order (rank 0 learned first); the ids are this tokenizer's.
  const std::vector<BpeMerge>& merges() const { return merges_; }

 private:
  explicit BpeTokenizer(bool byte_fallback) : Tokenizer(byte_fallback) {}
  void add_merge(int32_t left, int32_t right);
  // Splits one word into tokens: characters first, then the merges by rank.
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;

  int32_t first_character_id_ = 0;
  int32_t character_count_ = 0;
  std::vector<BpeMerge> merges_;
  std::unordered_map<uint64_t, int32_t> rank_of_pair_;  // (left << 32 | right) -> rank
};

}  // namespace gf::data
