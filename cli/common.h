// Pieces the subcommands share: reading id lists from the command line, a model's own
// translation, paths beside a checkpoint, stopping on a signal, and the progress bar. Loading and saving a model is
// the library's (training/model_file.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "models/transformer.h"
#include "training/model_file.h"

namespace gf::cli {

// "5 6 7 2" -> {5, 6, 7, 2}. Throws std::invalid_argument naming `what` for anything else.
std::vector<int32_t> parse_ids(const std::string& text, const std::string& what);

// The target the decoder reads for the model's own translation of src: <s>, the greedy output,
// </s>. What `attention` and `report` draw when no target is given.
std::vector<int32_t> own_translation(Transformer& model, const std::vector<int32_t>& src);

// path with its extension replaced: ("runs/copy.safetensors", ".loss.png") -> "runs/copy.loss.png"
std::string beside(const std::string& path, const std::string& suffix);

// From now on SIGINT (Ctrl-C) and SIGTERM ask the program to stop at its next safe point
// instead of ending it; pending_stop_signal() tells which came (0: none). The handler only
// records the signal, since saving is not async-signal-safe; a second signal while the first
// is pending ends the program at once, in the default way.
void stop_after_step_on_signals();
int pending_stop_signal();

// A one-line progress bar on stderr, redrawn at most ten times a second when stderr is a
// terminal, and a plain line every tenth of the run otherwise (logs stay readable).
class Progress {
 public:
  explicit Progress(int64_t total);
  void update(int64_t done, const std::string& status);
  // A message line between updates: on a terminal it takes the bar's place (the bar comes
  // back below it), in a log it is just the next line.
  void note(const std::string& line);
  void finish(const std::string& status);

 private:
  int64_t total_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  int64_t last_logged_ = -1;
};

}  // namespace gf::cli
