// Next-token prediction on a text, the training data of a decoder-only model (a language
// model): the text's tokens as one stream, cut into windows of `context` tokens. The example of
// a window is a Pair without a source (pair.h) whose target is bos and then the window, so the
// model reads bos, t[k], ..., t[k+context-2] and predicts t[k], ..., t[k+context-1]: context
// positions, each predicting one token from those before it in its window. Every sequence
// starts with bos, which gives the first prediction something to read and sampling a start
// (models/sample.h).
//
// Training draws windows at random starts (BatchSource::windows), so that the model sees every
// offset of the text; scoring cuts the text into consecutive windows, so that every token is
// predicted exactly once (the first of a window from bos alone: a window knows nothing before
// its start).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "data/pair.h"

namespace gf::data {

// A text file, whole. Throws FormatError "cannot open PATH: REASON", "PATH: the file is empty",
// or "PATH:LINE: invalid UTF-8 at byte N of the line: PROBLEM".
struct TextFile {
  std::string name;  // the path, for messages
  std::string text;
};
TextFile read_text_file(const std::filesystem::path& path);

// The example of the window of `context` tokens at start: {src: {}, tgt: bos, then
// stream[start .. start + context - 1]}, shorter when the stream ends first. Throws
// std::invalid_argument for context < 1 or a start outside the stream.
Pair window_at(std::span<const int32_t> stream, int64_t start, int64_t context, int32_t bos);

// Consecutive windows covering the stream from its first token to its last: starts 0, context,
// 2 context, ...; the last may be shorter. None for an empty stream.
std::vector<Pair> consecutive_windows(std::span<const int32_t> stream, int64_t context,
                                      int32_t bos);

// `count` of those consecutive windows spread evenly over the stream (all of them when there
// are fewer): a check's sample of a dev text that may be ordered by topic.
std::vector<Pair> spread_windows(std::span<const int32_t> stream, int64_t context, int64_t count,
                                 int32_t bos);

}  // namespace gf::data
