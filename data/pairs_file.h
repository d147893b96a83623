// Reading and writing pairs of token-id sequences as text, for training on, or scoring, data
// that was tokenized elsewhere (the CLI's --pairs FILE), and the id lines `decode` reads.
//
// A pairs file has one pair per line: the source ids, a tab, the target ids, each a list of
// non-negative decimal integers separated by spaces:
//
//   5 9 4 2<TAB>1 5 9 4 2
//
// The target is the full sequence the decoder sees (pair.h): it must start with bos (1) and
// have at least 2 ids, because the model is scored on tgt[1:] given tgt[:-1]. It need not end
// with eos: a target without one scores a prefix, and training on it teaches the model not to
// stop. The source must not be empty. Neither may contain pad (0), which batching adds.
// Blank lines, runs of spaces, a missing final newline and \r\n line endings are all accepted.
//
// Every error is a FormatError that names the file, the line and the problem:
//   pairs.tsv:7: expected SRC<TAB>TGT, found no tab
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "data/pair.h"

namespace gf::data {

// The pairs of a file, with where each came from, so that later checks can name the line.
struct PairsFile {
  std::string source;          // the name used in messages, e.g. "pairs.tsv"
  std::vector<Pair> pairs;     // in file order
  std::vector<int64_t> lines;  // lines[i] is the 1-based line number of pairs[i]
};

// Reads a pairs file. Throws FormatError "cannot open PATH: REASON" when the file cannot be
// opened, "PATH:LINE: PROBLEM" for a malformed line, and "PATH: no pairs ..." when the file
// holds no pair at all.
PairsFile read_pairs(const std::filesystem::path& path);
// The same from a stream; source names it in messages.
PairsFile read_pairs(std::istream& in, const std::string& source);

// Writes pairs in the format read_pairs reads, one per line, each line ending in \n.
// Throws std::runtime_error "cannot write PATH: REASON".
void write_pairs(const std::filesystem::path& path, std::span<const Pair> pairs);

// Source sequences, one per line, as `decode` reads them from stdin: space-separated ids,
// nothing added (no bos or eos). Blank lines are skipped; empty input gives no sequences.
struct IdLines {
  std::string source;
  std::vector<std::vector<int32_t>> sequences;
  std::vector<int64_t> lines;  // lines[i] is the 1-based line number of sequences[i]
};
// Throws FormatError "SOURCE:LINE: PROBLEM" for a bad id or the pad id.
IdLines read_id_lines(std::istream& in, const std::string& source = "stdin");

// Checks that every id lies in [0, vocab_size), the model's embedding rows. Throws FormatError
// naming the first offender: pairs.tsv: id 12 on line 4 is out of range [0, 11) (target).
// Throws std::invalid_argument for vocab_size < 1.
void check_ids(const PairsFile& file, int32_t vocab_size);
void check_ids(const IdLines& file, int32_t vocab_size);

}  // namespace gf::data
