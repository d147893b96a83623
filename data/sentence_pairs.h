// Reading parallel text: a UTF-8 file of sentence pairs, one per line, source, tab, target,
// as the Tatoeba project's downloads and the toy language's files are laid out:
//
//   Go.<TAB>Geh.<TAB>CC-BY 2.0 (France) Attribution: tatoeba.org #2877272 (CM) & #8597805
//   the cat sees a dog .<TAB>miru lo tavi uno ka vido .<TAB>1-0 0-1 4-2 3-3 2-5 5-6
//
// Columns after the second are not part of the pair; the third is kept as `extra` (the toy
// language's gold alignment) and the rest are ignored. Blank lines, \r\n line endings, a
// missing final newline and a UTF-8 byte-order mark at the start of the file are accepted.
// Spaces at either end of a sentence are trimmed.
//
// A line that is not a pair is an error naming the file, the line and the problem:
//
//   train.tsv:17: expected SOURCE<TAB>TARGET, found no tab
//   train.tsv:42: invalid UTF-8 at byte 13 of the line: 0xFC is not a valid UTF-8 byte ...
//   train.tsv:90: the target is empty
//
// By default the first such line stops the read, so nothing is lost silently. With
// skip_malformed the read goes on, and every skipped line is listed in `skipped`, for the
// caller to report: web-scraped corpora often have a few broken lines among many good ones.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace gf::data {

struct SentencePair {
  std::string source;
  std::string target;
  std::string extra;  // the third column, or empty
};

struct SentencePairsFile {
  std::string name;                  // the name used in messages, e.g. "train.tsv"
  std::vector<SentencePair> pairs;   // in file order
  std::vector<int64_t> lines;        // lines[i] is the 1-based line number of pairs[i]
  std::vector<std::string> skipped;  // with skip_malformed: one "NAME:LINE: PROBLEM" per line
};

struct SentencePairsOptions {
  bool skip_malformed = false;
};

// Throws FormatError "cannot open PATH: REASON", "NAME:LINE: PROBLEM" for the first malformed
// line (unless skip_malformed), and "NAME: no sentence pairs" when nothing usable is left.
SentencePairsFile read_sentence_pairs(const std::filesystem::path& path,
                                      const SentencePairsOptions& options = {});
SentencePairsFile read_sentence_pairs(std::istream& in, const std::string& name,
                                      const SentencePairsOptions& options = {});

}  // namespace gf::data
