#include "data/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace gf::data {

namespace {

using Json = nlohmann::ordered_json;

constexpr int32_t kByteCount = 256;
constexpr const char* kUnknownText = "\u2047";  // "⁇", what <unk> decodes to
constexpr const char* kSpaceMark = "\u2581";    // "▁", how labels show a space

bool in(char32_t c, char32_t first, char32_t last) {
  return c >= first && c <= last;
}

// Runs fn(word) for every word of every text, and names the text that is not UTF-8.
template <typename Fn>
void for_each_word(std::span<const std::string> texts, const char* who, Fn&& fn) {
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<std::string> words;
    try {
      words = split_words(texts[i]);
    } catch (const Utf8Error& e) {
      throw Utf8Error(e.offset(), fmt::format("{} (in {} training text {}, counting from 0)",
                                              e.problem(), who, i));
    }
    for (std::string& word : words) fn(std::move(word));
  }
}

}  // namespace

// ---- characters and words ----

CharClass char_class(char32_t c) {
  // Unicode's White_Space property.
  if (in(c, 0x09, 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
      in(c, 0x2000, 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
      c == 0x3000)
    return CharClass::kSpace;
  if (c < 0x80) {
    const bool letter_or_digit = in(c, '0', '9') || in(c, 'A', 'Z') || in(c, 'a', 'z');
    return letter_or_digit ? CharClass::kLetter : CharClass::kAlone;  // punctuation, controls
  }
  // Blocks of punctuation and symbols, coarser than Unicode's categories but enough to split
  // « », „ “, ¿ ¡, – —, €, 。、 and emoji off the words they touch.
  if (in(c, 0x80, 0xBF) || c == 0xD7 || c == 0xF7 ||  // C1 controls, Latin-1 signs (ª º µ too), × ÷
      in(c, 0x2010, 0x205E) ||                        // general punctuation
      in(c, 0x20A0, 0x20CF) ||                        // currency
      in(c, 0x2100, 0x2BFF) ||                        // letterlike, arrows, maths, shapes
      in(c, 0x3001, 0x303F) ||                        // CJK punctuation
      in(c, 0xFE10, 0xFE1F) || in(c, 0xFE30, 0xFE6F) ||  // vertical and small forms
      in(c, 0xFF01, 0xFF0F) || in(c, 0xFF1A, 0xFF20) || in(c, 0xFF3B, 0xFF40) ||
      in(c, 0xFF5B, 0xFF65) ||  // fullwidth punctuation
      in(c, 0x1F000, 0x1FAFF))  // emoji and pictographs
    return CharClass::kAlone;
  // CJK ideographs: Chinese writes no spaces, so each ideograph is its own word (as BERT's
  // basic tokenizer does) rather than a whole sentence being one.
  if (in(c, 0x3400, 0x4DBF) || in(c, 0x4E00, 0x9FFF) || in(c, 0xF900, 0xFAFF) ||
      in(c, 0x20000, 0x3FFFF))
    return CharClass::kAlone;
  return CharClass::kLetter;
}

std::vector<std::string> split_words(std::string_view text) {
  const std::vector<std::string_view> chars = split_utf8(text);
  std::vector<CharClass> classes;
  classes.reserve(chars.size());
  for (const std::string_view c : chars) classes.push_back(char_class(decode_utf8(c)[0]));

  std::vector<std::string> words;
  size_t i = 0;
  while (i < chars.size()) {
    std::string word;
    // A single space joins the word after it: "a b" is "a", " b", and decoding needs no
    // rule for where spaces go.
    if (chars[i] == " " && i + 1 < chars.size() && classes[i + 1] != CharClass::kSpace) {
      word = " ";
      ++i;
    }
    if (classes[i] == CharClass::kLetter) {
      while (i < chars.size() && classes[i] == CharClass::kLetter) word += chars[i++];
    } else {
      word += chars[i++];  // a punctuation mark, a symbol, an ideograph, or other whitespace
    }
    words.push_back(std::move(word));
  }
  return words;
}

std::string printable(std::string_view token_text) {
  std::string shown;
  for (const char c : token_text) {
    switch (c) {
      case ' ':
        shown += kSpaceMark;
        break;
      case '\n':
        shown += "\\n";
        break;
      case '\t':
        shown += "\\t";
        break;
      case '\r':
        shown += "\\r";
        break;
      default:
        shown += c;
    }
  }
  return shown;
}

// ---- the shared interface ----

Tokenizer::Tokenizer(bool byte_fallback) : byte_fallback_(byte_fallback) {
  for (const char* special : {"<pad>", "<bos>", "<eos>", "<unk>"}) add_token(special);
  if (byte_fallback_)
    for (int b = 0; b < kByteCount; ++b) add_token(fmt::format("<0x{:02X}>", b));
}

int32_t Tokenizer::add_token(const std::string& token_text) {
  const auto [it, added] = ids_.emplace(token_text, size());
  if (added) tokens_.push_back(token_text);
  return it->second;
}

const std::string& Tokenizer::token(int32_t id) const {
  if (id < 0 || id >= size())
    throw IndexError(fmt::format("tokenizer: token id {} is out of range [0, {})", id, size()));
  return tokens_[static_cast<size_t>(id)];
}

std::optional<int32_t> Tokenizer::id(std::string_view token_text) const {
  const auto it = ids_.find(std::string(token_text));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void Tokenizer::append_unknown(std::string_view character, std::vector<int32_t>& ids) const {
  if (!byte_fallback_) {
    ids.push_back(kUnk);
    return;
  }
  for (const char byte : character)
    ids.push_back(kNumSpecial + static_cast<int32_t>(static_cast<unsigned char>(byte)));
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string text;
  std::string bytes;  // a run of byte tokens, written out once it ends
  const auto flush_bytes = [&] {
    text += repair_utf8(bytes);
    bytes.clear();
  };
  for (const int32_t id : ids) {
    const std::string& piece = token(id);  // checks the range
    if (id == kPad || id == kBos || id == kEos) continue;
    if (byte_fallback_ && id >= kNumSpecial && id < kNumSpecial + kByteCount) {
      bytes += static_cast<char>(static_cast<unsigned char>(id - kNumSpecial));
      continue;
    }
    flush_bytes();
    text += id == kUnk ? kUnknownText : piece;
  }
  flush_bytes();
  return text;
}

bool Tokenizer::covers(std::string_view text) const {
  const int32_t first_content = kNumSpecial + (byte_fallback_ ? kByteCount : 0);
  const std::vector<int32_t> ids = encode(text);
  return std::all_of(ids.begin(), ids.end(), [&](int32_t i) { return i >= first_content; });
}

// ---- words ----

WordTokenizer::WordTokenizer(std::span<const std::string> words) : Tokenizer(false) {
  for (const std::string& word : words) {
    if (word.empty()) throw std::invalid_argument("word tokenizer: a word is empty");
    const std::vector<std::string> pieces = split_words(word);  // throws Utf8Error
    if (pieces.size() != 1)
      throw std::invalid_argument(fmt::format(
          "word tokenizer: \"{}\" is {} words, not one (see split_words)", word, pieces.size()));
    const int32_t before = size();
    if (add_token(word) < before)
      throw std::invalid_argument(
          fmt::format("word tokenizer: \"{}\" is listed twice or is a special token", word));
  }
}

WordTokenizer WordTokenizer::learn(std::span<const std::string> texts, const WordOptions& options) {
  if (options.max_size != 0 && options.max_size <= kNumSpecial)
    throw std::invalid_argument(
        fmt::format("word tokenizer: max_size {} leaves no room after the {} special tokens",
                    options.max_size, kNumSpecial));
  std::unordered_map<std::string, int64_t> counts;
  for_each_word(texts, "word tokenizer", [&](std::string word) { ++counts[std::move(word)]; });

  std::vector<std::pair<std::string, int64_t>> by_count(counts.begin(), counts.end());
  std::sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  const auto full = [&](size_t words) {
    return options.max_size != 0 && static_cast<int64_t>(words) + kNumSpecial >= options.max_size;
  };
  std::vector<std::string> words;
  for (auto& [word, count] : by_count) {
    if (count < options.min_count || full(words.size())) break;
    words.push_back(std::move(word));
  }
  // The space on its own, for the space before an unknown word (see encode).
  if (std::find(words.begin(), words.end(), " ") == words.end()) {
    if (full(words.size())) words.pop_back();
    words.push_back(" ");
  }
  return WordTokenizer(words);
}

std::vector<int32_t> WordTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  const std::optional<int32_t> space = id(" ");
  for (const std::string& word : split_words(text)) {
    if (const auto known = id(word)) {
      ids.push_back(*known);
      continue;
    }
    // " cow" unknown: keep the space, so that decoding gives "the ⁇ sat", not "the⁇ sat".
    if (word.size() > 1 && word[0] == ' ' && space) ids.push_back(*space);
    ids.push_back(kUnk);
  }
  return ids;
}

std::string WordTokenizer::to_json() const {
  Json words = Json::array();
  for (int32_t i = kNumSpecial; i < size(); ++i) words.push_back(token(i));
  return Json{{"type", kind()}, {"version", 1}, {"size", size()}, {"words", words}}.dump();
}

// ---- characters ----

namespace {

// Throws std::invalid_argument unless text is exactly one code point.
void check_one_character(const std::string& text, const char* who) {
  const std::u32string code_points = decode_utf8(text);  // throws Utf8Error
  if (code_points.size() != 1)
    throw std::invalid_argument(
        fmt::format("{}: \"{}\" is {} characters, not one", who, text, code_points.size()));
}

// The distinct characters of texts, in code point order.
std::vector<std::string> alphabet_of(std::span<const std::string> texts, const char* who) {
  std::set<char32_t> code_points;
  for_each_word(texts, who, [&](const std::string& word) {
    for (const char32_t c : decode_utf8(word)) code_points.insert(c);
  });
  std::vector<std::string> characters;
  for (const char32_t c : code_points) characters.push_back(encode_utf8(c));
  return characters;
}

}  // namespace

CharTokenizer::CharTokenizer(std::span<const std::string> characters, bool byte_fallback)
    : Tokenizer(byte_fallback) {
  for (const std::string& c : characters) {
    check_one_character(c, "char tokenizer");
    const int32_t before = size();
    if (add_token(c) < before)
      throw std::invalid_argument(fmt::format("char tokenizer: \"{}\" is listed twice", c));
  }
}

CharTokenizer CharTokenizer::learn(std::span<const std::string> texts, const CharOptions& options) {
  return CharTokenizer(alphabet_of(texts, "char tokenizer"), options.byte_fallback);
}

std::vector<int32_t> CharTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for (const std::string_view c : split_utf8(text)) {
    if (const auto known = id(c)) {
      ids.push_back(*known);
    } else {
      append_unknown(c, ids);
    }
  }
  return ids;
}

std::string CharTokenizer::to_json() const {
  Json characters = Json::array();
  for (int32_t i = kNumSpecial + (byte_fallback() ? kByteCount : 0); i < size(); ++i)
    characters.push_back(token(i));
  return Json{{"type", kind()},
              {"version", 1},
              {"size", size()},
              {"byte_fallback", byte_fallback()},
              {"characters", characters}}
      .dump();
}

// ---- byte-pair encoding ----

namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return static_cast<uint64_t>(left) << 32 | static_cast<uint32_t>(right);
}
int32_t left_of(uint64_t key) {
  return static_cast<int32_t>(key >> 32);
}
int32_t right_of(uint64_t key) {
  return static_cast<int32_t>(key & 0xFFFFFFFFu);
}

// How often each adjacent pair of tokens occurs in the training words (each word weighted by
// its count), kept sorted so that the most frequent pair is always at hand. Ties go to the
// smaller (left id, right id): the pair whose tokens were made first. That makes learning
// independent of hash order, so the same text always gives the same merges.
class PairCounts {
 public:
  void add(uint64_t key, int64_t delta) {
    int64_t& count = counts_[key];
    if (count > 0) by_count_.erase({-count, key});
    count += delta;
    if (count > 0) {
      by_count_.insert({-count, key});
    } else {
      counts_.erase(key);
    }
  }
  bool empty() const { return by_count_.empty(); }
  uint64_t most_frequent() const { return by_count_.begin()->second; }

 private:
  std::unordered_map<uint64_t, int64_t> counts_;
  std::set<std::pair<int64_t, uint64_t>> by_count_;  // (-count, pair): the first is the best
};

// A distinct training word as its current tokens, and how often it occurs.
struct Word {
  std::vector<int32_t> tokens;
  int64_t count;
};

bool has_pair(const std::vector<int32_t>& tokens, int32_t left, int32_t right) {
  for (size_t i = 0; i + 1 < tokens.size(); ++i)
    if (tokens[i] == left && tokens[i + 1] == right) return true;
  return false;
}

// Replaces every (left, right) in tokens, from the left, by result: "a a a" with (a, a) gives
// "aa a", as a merge applied to the whole corpus does.
void merge_pair(std::vector<int32_t>& tokens, int32_t left, int32_t right, int32_t result) {
  size_t out = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i + 1 < tokens.size() && tokens[i] == left && tokens[i + 1] == right) {
      tokens[out++] = result;
      ++i;
    } else {
      tokens[out++] = tokens[i];
    }
  }
  tokens.resize(out);
}

}  // namespace

BpeTokenizer::BpeTokenizer(std::span<const std::string> characters,
                           std::span<const std::pair<std::string, std::string>> merges,
                           bool byte_fallback)
    : Tokenizer(byte_fallback) {
  first_character_id_ = size();
  for (const std::string& c : characters) {
    check_one_character(c, "bpe tokenizer");
    const int32_t before = size();
    if (add_token(c) < before)
      throw std::invalid_argument(
          fmt::format("bpe tokenizer: character \"{}\" is listed twice", c));
  }
  character_count_ = size() - first_character_id_;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const auto left_id = id(left), right_id = id(right);
    const auto known = [&](std::optional<int32_t> i) {
      return i && *i >= first_character_id_;
    };
    if (!known(left_id) || !known(right_id))
      throw std::invalid_argument(fmt::format(
          "bpe tokenizer: merge {} (\"{}\", \"{}\") uses \"{}\", which is neither a character "
          "nor the result of an earlier merge",
          rank, left, right, known(left_id) ? right : left));
    if (rank_of_pair_.count(pair_key(*left_id, *right_id)) != 0)
      throw std::invalid_argument(fmt::format(
          "bpe tokenizer: merge {} (\"{}\", \"{}\") is listed twice", rank, left, right));
    add_merge(*left_id, *right_id);
  }
}

void BpeTokenizer::add_merge(int32_t left, int32_t right) {
  // Two different merges can spell the same token ("ab"+"c" and "a"+"bc"); they share its id.
  const int32_t result = add_token(token(left) + token(right));
  rank_of_pair_.emplace(pair_key(left, right), static_cast<int32_t>(merges_.size()));
  merges_.push_back({left, right, result});
}

// Learning, after Sennrich et al. 2016, §3.2 and their Algorithm 1:
//   1. count the words of the training text; each word starts as its characters;
//   2. count every adjacent pair of tokens, over all words, weighted by word counts;
//   3. merge the most frequent pair into a new token, everywhere; repeat from 2.
// Recounting every pair after every merge would cost (merges x corpus). Only the words that
// contain the merged pair change, so we keep the counts and, for each pair, the words it
// occurs in, and update just those words: subtract their old pairs, merge, add their new
// pairs. The work per merge is then proportional to the words it touches. (The test
// "bpe's incremental pair counts learn what recounting everything learns" holds the plain
// recounting version, and checks that both learn the same merges.)
BpeTokenizer BpeTokenizer::learn(std::span<const std::string> texts, const BpeOptions& options) {
  std::unordered_map<std::string, int64_t> word_counts;
  for_each_word(texts, "bpe", [&](std::string word) { ++word_counts[std::move(word)]; });
  std::vector<std::pair<std::string, int64_t>> sorted_words(word_counts.begin(), word_counts.end());
  std::sort(sorted_words.begin(), sorted_words.end());  // a fixed order, whatever the hash

  BpeTokenizer bpe(options.byte_fallback);
  bpe.first_character_id_ = bpe.size();
  for (const std::string& c : alphabet_of(texts, "bpe")) bpe.add_token(c);
  bpe.character_count_ = bpe.size() - bpe.first_character_id_;
  if (options.vocab_size < bpe.size())
    throw std::invalid_argument(fmt::format(
        "bpe: vocab_size {} is too small for the {} special, {} byte and {} character tokens "
        "the text needs ({} in all)",
        options.vocab_size, kNumSpecial, options.byte_fallback ? kByteCount : 0,
        bpe.character_count_, bpe.size()));

  // Step 1: words as characters.
  std::vector<Word> words;
  words.reserve(sorted_words.size());
  for (const auto& [text, count] : sorted_words) {
    Word word{.tokens = {}, .count = count};
    for (const std::string_view c : split_utf8(text)) word.tokens.push_back(*bpe.id(c));
    words.push_back(std::move(word));
  }

  // Step 2: pair counts, and the words each pair occurs in (a word may stay listed after it
  // lost the pair; merging checks).
  PairCounts pair_counts;
  std::unordered_map<uint64_t, std::vector<int32_t>> words_with;
  const auto note_word = [&](uint64_t key, int32_t w) {
    std::vector<int32_t>& list = words_with[key];
    if (list.empty() || list.back() != w) list.push_back(w);
  };
  for (int32_t w = 0; w < static_cast<int32_t>(words.size()); ++w) {
    const Word& word = words[static_cast<size_t>(w)];
    for (size_t i = 0; i + 1 < word.tokens.size(); ++i) {
      const uint64_t key = pair_key(word.tokens[i], word.tokens[i + 1]);
      pair_counts.add(key, word.count);
      note_word(key, w);
    }
  }

  // Step 3: merge until the vocabulary is full or every word is a single token.
  std::unordered_map<uint64_t, int64_t> change;  // net change of each pair's count in one merge
  while (bpe.size() < options.vocab_size && !pair_counts.empty()) {
    const uint64_t best = pair_counts.most_frequent();
    const int32_t left = left_of(best), right = right_of(best);
    bpe.add_merge(left, right);
    const int32_t result = bpe.merges_.back().result;

    change.clear();
    const std::vector<int32_t> affected = std::move(words_with[best]);
    words_with.erase(best);
    for (const int32_t w : affected) {
      Word& word = words[static_cast<size_t>(w)];
      std::vector<int32_t>& tokens = word.tokens;
      if (!has_pair(tokens, left, right)) continue;  // lost it to an earlier merge
      for (size_t i = 0; i + 1 < tokens.size(); ++i)
        change[pair_key(tokens[i], tokens[i + 1])] -= word.count;
      merge_pair(tokens, left, right, result);
      for (size_t i = 0; i + 1 < tokens.size(); ++i) {
        const uint64_t key = pair_key(tokens[i], tokens[i + 1]);
        change[key] += word.count;
        if (tokens[i] == result || tokens[i + 1] == result) note_word(key, w);
      }
    }
    for (const auto& [key, delta] : change)
      if (delta != 0) pair_counts.add(key, delta);
  }
  return bpe;
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
  std::vector<int32_t> tokens;
  for (const std::string_view c : split_utf8(word)) {
    const auto known = id(c);
    if (known && *known >= first_character_id_) {
      tokens.push_back(*known);
    } else {
      append_unknown(c, tokens);  // bytes or <unk>, which no merge involves
    }
  }
  // Apply the merges in the order they were learned: find the adjacent pair learned first,
  // merge it everywhere, repeat. This replays learning on this one word, so a training word
  // is split exactly as learning left it.
  while (tokens.size() > 1) {
    int32_t best_rank = std::numeric_limits<int32_t>::max();
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      const auto it = rank_of_pair_.find(pair_key(tokens[i], tokens[i + 1]));
      if (it != rank_of_pair_.end()) best_rank = std::min(best_rank, it->second);
    }
    if (best_rank == std::numeric_limits<int32_t>::max()) break;
    const BpeMerge& m = merges_[static_cast<size_t>(best_rank)];
    merge_pair(tokens, m.left, m.right, m.result);
  }
  ids.insert(ids.end(), tokens.begin(), tokens.end());
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for (const std::string& word : split_words(text)) encode_word(word, ids);
  return ids;
}

std::string BpeTokenizer::to_json() const {
  Json characters = Json::array();
  for (int32_t i = first_character_id_; i < first_character_id_ + character_count_; ++i)
    characters.push_back(token(i));
  Json merges = Json::array();
  for (const BpeMerge& m : merges_) merges.push_back(Json::array({token(m.left), token(m.right)}));
  return Json{{"type", kind()},           {"version", 1},
              {"size", size()},           {"byte_fallback", byte_fallback()},
              {"characters", characters}, {"merges", merges}}
      .dump();
}

// ---- reading JSON ----

namespace {

[[noreturn]] void json_error(const std::string& problem) {
  throw FormatError("tokenizer json: " + problem);
}

const Json& field(const Json& doc, const char* name) {
  const auto it = doc.find(name);
  if (it == doc.end()) json_error(fmt::format("missing \"{}\"", name));
  return *it;
}

std::vector<std::string> string_list(const Json& doc, const char* name) {
  const Json& list = field(doc, name);
  if (!list.is_array()) json_error(fmt::format("\"{}\" must be an array of strings", name));
  std::vector<std::string> strings;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string())
      json_error(fmt::format("\"{}\"[{}] is {}, not a string", name, i, list[i].type_name()));
    strings.push_back(list[i].get<std::string>());
  }
  return strings;
}

bool flag(const Json& doc, const char* name) {
  const Json& value = field(doc, name);
  if (!value.is_boolean()) json_error(fmt::format("\"{}\" must be true or false", name));
  return value.get<bool>();
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_json(std::string_view json) {
  // A valid document nests three deep (the object, "merges", one merge). Anything deeper is
  // refused while parsing: the error messages below print values with dump(), which recurses
  // once per level and would overflow the stack on a document of a million "[".
  static constexpr int kMaxDepth = 3;
  const auto limit_depth = [](int depth, nlohmann::json::parse_event_t event, Json&) {
    using Event = nlohmann::json::parse_event_t;
    if ((event == Event::object_start || event == Event::array_start) && depth >= kMaxDepth)
      json_error(fmt::format("nested deeper than {} levels", kMaxDepth));
    return true;
  };
  Json doc;
  try {
    doc = Json::parse(json, limit_depth);
  } catch (const nlohmann::json::exception& e) {
    json_error(fmt::format("not valid JSON ({})", e.what()));
  }
  if (!doc.is_object()) json_error(fmt::format("expected an object, found {}", doc.type_name()));
  const Json& type = field(doc, "type");
  if (!type.is_string() || (type != "word" && type != "char" && type != "bpe"))
    json_error(fmt::format("\"type\" is {}, expected \"word\", \"char\" or \"bpe\"", type.dump()));
  const Json& version = field(doc, "version");
  if (version != 1)
    json_error(fmt::format("\"version\" is {}; this build reads version 1", version.dump()));
  const Json& size = field(doc, "size");
  if (!size.is_number_integer()) json_error("\"size\" must be an integer");

  std::vector<std::string> allowed = {"type", "version", "size"};
  std::unique_ptr<Tokenizer> tokenizer;
  try {
    if (type == "word") {
      allowed.push_back("words");
      tokenizer = std::make_unique<WordTokenizer>(string_list(doc, "words"));
    } else if (type == "char") {
      allowed.insert(allowed.end(), {"byte_fallback", "characters"});
      tokenizer = std::make_unique<CharTokenizer>(string_list(doc, "characters"),
                                                  flag(doc, "byte_fallback"));
    } else {
      allowed.insert(allowed.end(), {"byte_fallback", "characters", "merges"});
      const Json& list = field(doc, "merges");
      if (!list.is_array()) json_error("\"merges\" must be an array of [left, right] pairs");
      std::vector<std::pair<std::string, std::string>> merges;
      for (size_t i = 0; i < list.size(); ++i) {
        const Json& m = list[i];
        if (!m.is_array() || m.size() != 2 || !m[0].is_string() || !m[1].is_string())
          json_error(fmt::format("\"merges\"[{}] is {}, not a pair of strings", i, m.dump()));
        merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      }
      tokenizer = std::make_unique<BpeTokenizer>(string_list(doc, "characters"), merges,
                                                 flag(doc, "byte_fallback"));
    }
  } catch (const std::invalid_argument& e) {
    json_error(e.what());
  } catch (const Utf8Error& e) {
    json_error(e.what());
  }
  for (const auto& [key, value] : doc.items())
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      json_error(fmt::format("unexpected key \"{}\" for type {}", key, type.dump()));
  if (size != tokenizer->size())
    json_error(fmt::format("\"size\" is {} but the tokens listed make {}", size.dump(),
                           tokenizer->size()));
  return tokenizer;
}

}  // namespace gf::data
