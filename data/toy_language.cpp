#include "data/toy_language.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <fstream>
#include <set>
#include <stdexcept>

namespace gf::data {

// ---------------------------------------------------------------------------------------------
// The lexicon. The target words are invented; their agreement suffixes are
//
//                 singular  plural
//   animate          -o      -oj
//   inanimate        -a      -aj
//
// and a plural noun adds -n to its stem.

namespace {

struct Noun {
  const char* singular;
  const char* plural;
  const char* stem;  // the target word for the singular
  bool animate;
};
constexpr std::array<Noun, 10> kNouns = {{
    {"cat", "cats", "miru", true},
    {"dog", "dogs", "tavi", true},
    {"bird", "birds", "pelu", true},
    {"child", "children", "naki", true},
    {"farmer", "farmers", "bauri", true},
    {"house", "houses", "domi", false},
    {"tree", "trees", "kulu", false},
    {"car", "cars", "veki", false},
    {"book", "books", "sire", false},
    {"river", "rivers", "joku", false},
}};

struct Adjective {
  const char* english;
  const char* stem;
};
constexpr std::array<Adjective, 8> kAdjectives = {{
    {"big", "gran"},
    {"small", "pik"},
    {"red", "ros"},
    {"old", "vek"},
    {"happy", "fel"},
    {"green", "verd"},
    {"quick", "rap"},
    {"quiet", "kalm"},
}};

struct Determiner {
  const char* singular;
  const char* plural;
  const char* stem;
};
constexpr std::array<Determiner, 4> kDeterminers = {{
    {"the", "the", "l"},
    {"a", "some", "un"},
    {"this", "these", "est"},
    {"my", "my", "mi"},
}};

struct Verb {
  const char* third_person;  // after a singular subject: "the cat sees"
  const char* base;          // after a plural subject or "does not": "the cats see"
  const char* stem;
};
constexpr std::array<Verb, 6> kVerbs = {{
    {"sees", "see", "vid"},
    {"likes", "like", "am"},
    {"finds", "find", "trov"},
    {"carries", "carry", "port"},
    {"follows", "follow", "sekv"},
    {"watches", "watch", "rigard"},
}};

struct Preposition {
  const char* english;
  const char* postposition;
};
constexpr std::array<Preposition, 4> kPrepositions = {{
    {"near", "pres"},
    {"under", "sub"},
    {"behind", "post"},
    {"with", "kun"},
}};

constexpr const char* kObjectParticle = "ka";
constexpr const char* kNegation = "ne";

const char* agreement_suffix(bool animate, bool plural) {
  if (animate) return plural ? "oj" : "o";
  return plural ? "aj" : "a";
}

// What a noun phrase is made of, drawn once and then written out in both languages.
struct NounPhrase {
  int64_t determiner = 0;
  std::vector<int64_t> adjectives;  // 0, 1 or 2 distinct adjectives, in English order
  int64_t noun = 0;
  bool plural = false;
};

// The draws and their odds: no adjective 2 times in 5, one 2 in 5, two 1 in 5; plural 2 in 5.
NounPhrase draw_noun_phrase(Rng& rng) {
  NounPhrase np;
  np.determiner = rng.below(kDeterminers.size());
  const int64_t roll = rng.below(5);
  const int64_t count = roll < 2 ? 0 : roll < 4 ? 1 : 2;
  while (static_cast<int64_t>(np.adjectives.size()) < count) {
    const int64_t a = rng.below(kAdjectives.size());
    if (np.adjectives.empty() || np.adjectives[0] != a) np.adjectives.push_back(a);
  }
  np.noun = rng.below(kNouns.size());
  np.plural = rng.below(5) < 2;
  return np;
}

// Appends the pair's words as it grows, recording where each target word comes from.
class PairBuilder {
 public:
  int32_t add_source(const std::string& word) {
    pair_.source.push_back(word);
    return static_cast<int32_t>(pair_.source.size()) - 1;
  }
  // A target word translating source word `from`, or nothing (from < 0).
  void add_target(const std::string& word, int32_t from) {
    if (from >= 0) pair_.alignment.emplace_back(from, static_cast<int32_t>(pair_.target.size()));
    pair_.target.push_back(word);
  }
  AlignedPair take() { return std::move(pair_); }

 private:
  AlignedPair pair_;
};

// The English words of a noun phrase, in order; returns their source indices so that the
// target side can align to them: [determiner, adjectives..., noun].
std::vector<int32_t> write_source(const NounPhrase& np, PairBuilder& out) {
  const Determiner& det = kDeterminers[static_cast<size_t>(np.determiner)];
  std::vector<int32_t> at;
  at.push_back(out.add_source(np.plural ? det.plural : det.singular));
  for (int64_t a : np.adjectives)
    at.push_back(out.add_source(kAdjectives[static_cast<size_t>(a)].english));
  const Noun& noun = kNouns[static_cast<size_t>(np.noun)];
  at.push_back(out.add_source(np.plural ? noun.plural : noun.singular));
  return at;
}

// The mirrored target noun phrase: noun, adjectives in reverse, determiner, all agreeing.
void write_target(const NounPhrase& np, const std::vector<int32_t>& source_at, PairBuilder& out) {
  const Noun& noun = kNouns[static_cast<size_t>(np.noun)];
  const std::string suffix = agreement_suffix(noun.animate, np.plural);
  out.add_target(std::string(noun.stem) + (np.plural ? "n" : ""), source_at.back());
  for (size_t i = np.adjectives.size(); i-- > 0;)
    out.add_target(kAdjectives[static_cast<size_t>(np.adjectives[i])].stem + suffix,
                   source_at[1 + i]);
  out.add_target(kDeterminers[static_cast<size_t>(np.determiner)].stem + suffix, source_at[0]);
}

bool contains_combination(const NounPhrase& np,
                          const std::set<std::pair<int64_t, int64_t>>& combos) {
  for (int64_t a : np.adjectives)
    if (combos.count({a, np.noun})) return true;
  return false;
}

// A sentence's noun phrases, kept so that the compositional split can look inside it.
struct Sentence {
  AlignedPair pair;
  std::vector<NounPhrase> noun_phrases;
};

// S = subject verb-group object [preposition noun-phrase] "."
// T = subject' object' ka [noun-phrase' postposition] [ne] verb+agreement "."
Sentence draw_sentence(Rng& rng) {
  const NounPhrase subject = draw_noun_phrase(rng);
  const int64_t verb_index = rng.below(kVerbs.size());
  const bool negated = rng.below(10) < 3;
  const NounPhrase object = draw_noun_phrase(rng);
  const bool has_pp = rng.below(2) == 0;
  const int64_t preposition_index = has_pp ? rng.below(kPrepositions.size()) : 0;
  const NounPhrase pp_object = has_pp ? draw_noun_phrase(rng) : NounPhrase{};

  PairBuilder out;
  const std::vector<int32_t> subject_at = write_source(subject, out);
  const Verb& verb = kVerbs[static_cast<size_t>(verb_index)];
  int32_t not_at = -1, verb_at = -1;
  if (negated) {
    out.add_source(subject.plural ? "do" : "does");  // no counterpart in the target
    not_at = out.add_source("not");
    verb_at = out.add_source(verb.base);
  } else {
    verb_at = out.add_source(subject.plural ? verb.base : verb.third_person);
  }
  const std::vector<int32_t> object_at = write_source(object, out);
  int32_t preposition_at = -1;
  std::vector<int32_t> pp_at;
  if (has_pp) {
    preposition_at = out.add_source(kPrepositions[static_cast<size_t>(preposition_index)].english);
    pp_at = write_source(pp_object, out);
  }
  const int32_t stop_at = out.add_source(".");

  write_target(subject, subject_at, out);
  write_target(object, object_at, out);
  out.add_target(kObjectParticle, -1);
  if (has_pp) {
    write_target(pp_object, pp_at, out);
    out.add_target(kPrepositions[static_cast<size_t>(preposition_index)].postposition,
                   preposition_at);
  }
  if (negated) out.add_target(kNegation, not_at);
  const bool subject_animate = kNouns[static_cast<size_t>(subject.noun)].animate;
  out.add_target(std::string(verb.stem) + agreement_suffix(subject_animate, subject.plural),
                 verb_at);
  out.add_target(".", stop_at);

  Sentence sentence{out.take(), {subject, object}};
  if (has_pp) sentence.noun_phrases.push_back(pp_object);
  return sentence;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::string join_words(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& w : words) {
    if (!text.empty()) text += ' ';
    text += w;
  }
  return text;
}

std::string alignment_text(const std::vector<std::pair<int32_t, int32_t>>& alignment) {
  std::string text;
  for (const auto& [s, t] : alignment) {
    if (!text.empty()) text += ' ';
    text += fmt::format("{}-{}", s, t);
  }
  return text;
}

std::vector<std::pair<int32_t, int32_t>> parse_alignment(std::string_view text) {
  std::vector<std::pair<int32_t, int32_t>> alignment;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    const size_t end = std::min(text.find(' ', i), text.size());
    const std::string_view item = text.substr(i, end - i);
    const size_t dash = item.find('-');
    int32_t s = -1, t = -1;
    const auto parse = [](std::string_view digits, int32_t& value) {
      const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      return !digits.empty() && ec == std::errc{} && ptr == digits.data() + digits.size() &&
             value >= 0;
    };
    if (dash == std::string_view::npos || !parse(item.substr(0, dash), s) ||
        !parse(item.substr(dash + 1), t))
      throw std::invalid_argument(fmt::format(
          "alignment: \"{}\" is not a SOURCE-TARGET pair of word indices like \"3-1\"", item));
    alignment.emplace_back(s, t);
    i = end;
  }
  return alignment;
}

ToySplit parse_toy_split(std::string_view name) {
  if (name == "random") return ToySplit::Random;
  if (name == "compositional") return ToySplit::Compositional;
  if (name == "length") return ToySplit::Length;
  throw std::invalid_argument(
      fmt::format("unknown split \"{}\" (valid splits: random, compositional, length)", name));
}

std::string toy_split_name(ToySplit split) {
  switch (split) {
    case ToySplit::Random:
      return "random";
    case ToySplit::Compositional:
      return "compositional";
    case ToySplit::Length:
      return "length";
  }
  return "random";
}

void validate(const ToyLanguageConfig& config) {
  const auto require = [](bool ok, const std::string& message) {
    if (!ok) throw std::invalid_argument("toy language: " + message);
  };
  require(config.train >= 1, fmt::format("train is {} but must be at least 1", config.train));
  require(config.dev >= 0, fmt::format("dev is {} but must be at least 0", config.dev));
  require(config.test >= 0, fmt::format("test is {} but must be at least 0", config.test));
  require(config.length_threshold >= 6 && config.length_threshold < 17,
          fmt::format("length_threshold is {} but must be in [6, 16] (sentences have 6 to 17 "
                      "words, and each side of the split needs some)",
                      config.length_threshold));
  const int64_t combinations = static_cast<int64_t>(kAdjectives.size() * kNouns.size());
  require(config.held_out_combinations >= 1 && config.held_out_combinations <= combinations / 4,
          fmt::format("held_out_combinations is {} but must be in [1, {}]",
                      config.held_out_combinations, combinations / 4));
}

AlignedPair generate_toy_pair(Rng& rng) {
  return draw_sentence(rng).pair;
}

ToyCorpus generate_toy_corpus(const ToyLanguageConfig& config, Rng& rng) {
  validate(config);
  ToyCorpus corpus;

  // The held-out adjective-noun combinations come first in the random stream, and are drawn
  // for every split, so that the other draws do not depend on which split was asked for.
  std::set<std::pair<int64_t, int64_t>> held_out;
  while (static_cast<int64_t>(held_out.size()) < config.held_out_combinations)
    held_out.insert({rng.below(kAdjectives.size()), rng.below(kNouns.size())});
  if (config.split == ToySplit::Compositional)
    for (const auto& [a, n] : held_out)
      corpus.held_out.push_back(fmt::format("{} {}", kAdjectives[static_cast<size_t>(a)].english,
                                            kNouns[static_cast<size_t>(n)].singular));

  // Which part a sentence may go to: 0 = train or dev, 1 = test, -1 = neither.
  const auto side = [&](const Sentence& s) {
    switch (config.split) {
      case ToySplit::Random:
        return 0;
      case ToySplit::Length:
        return static_cast<int64_t>(s.pair.source.size()) <= config.length_threshold ? 0 : 1;
      case ToySplit::Compositional:
        for (const NounPhrase& np : s.noun_phrases)
          if (contains_combination(np, held_out)) return 1;
        return 0;
    }
    return 0;
  };

  // Pool 0 feeds train and dev (and test, for the random split); pool 1 feeds test.
  const bool random_split = config.split == ToySplit::Random;
  const int64_t want[2] = {config.train + config.dev + (random_split ? config.test : 0),
                           random_split ? 0 : config.test};
  std::vector<AlignedPair> pools[2];
  std::set<std::string> seen;
  // Duplicates become rare once the pool is large, so 50 draws per wanted sentence (plus a
  // floor for tiny corpora) is far more than enough for any sensible size.
  const int64_t max_draws = 50 * (want[0] + want[1]) + 100000;
  const auto size = [&](int where) {
    return static_cast<int64_t>(pools[where].size());
  };
  for (int64_t draws = 0; size(0) < want[0] || size(1) < want[1]; ++draws) {
    if (draws == max_draws)
      throw std::runtime_error(fmt::format(
          "toy language: only {} + {} distinct sentences found after {} draws; ask for fewer",
          size(0), size(1), max_draws));
    Sentence s = draw_sentence(rng);
    const int where = side(s);
    if (size(where) == want[where]) continue;
    if (!seen.insert(join_words(s.pair.source)).second) continue;
    pools[where].push_back(std::move(s.pair));
  }

  // The pools are in draw order, which is already random: cut them, no shuffle needed.
  std::vector<AlignedPair>& first = pools[0];
  const auto take = [&](std::vector<AlignedPair>& from, size_t begin, int64_t count) {
    return std::vector<AlignedPair>(
        from.begin() + static_cast<std::ptrdiff_t>(begin),
        from.begin() + static_cast<std::ptrdiff_t>(begin) + static_cast<std::ptrdiff_t>(count));
  };
  corpus.train = take(first, 0, config.train);
  corpus.dev = take(first, static_cast<size_t>(config.train), config.dev);
  corpus.test = random_split
                    ? take(first, static_cast<size_t>(config.train + config.dev), config.test)
                    : std::move(pools[1]);
  return corpus;
}

void write_aligned_tsv(const std::filesystem::path& path, const std::vector<AlignedPair>& pairs) {
  std::filesystem::path temporary = path;
  temporary += ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary);
    if (!out)
      throw std::runtime_error(fmt::format("cannot write {}: cannot open it", path.string()));
    for (const AlignedPair& p : pairs)
      out << join_words(p.source) << '\t' << join_words(p.target) << '\t'
          << alignment_text(p.alignment) << '\n';
    out.flush();
    if (!out) throw std::runtime_error(fmt::format("cannot write {}: write failed", path.string()));
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error)
    throw std::runtime_error(fmt::format("cannot write {}: {}", path.string(), error.message()));
}

SentencePairsFile sentence_pairs_of(const std::vector<AlignedPair>& pairs,
                                    const std::string& name) {
  SentencePairsFile file{.name = name, .pairs = {}, .lines = {}, .skipped = {}};
  for (const AlignedPair& p : pairs) {
    file.pairs.push_back({join_words(p.source), join_words(p.target), alignment_text(p.alignment)});
    file.lines.push_back(static_cast<int64_t>(file.pairs.size()));
  }
  return file;
}

}  // namespace gf::data
