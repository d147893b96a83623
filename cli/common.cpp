#include "cli/common.h"

#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "models/decode.h"

namespace gf::cli {

std::vector<int32_t> parse_ids(const std::string& text, const std::string& what) {
  std::istringstream in(text);
  std::vector<int32_t> ids;
  std::string word;
  while (in >> word) {
    size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || value < 0 || value > INT32_MAX)
      throw std::invalid_argument(
          fmt::format("{}: \"{}\" is not a token id (expected non-negative integers)", what, word));
    ids.push_back(static_cast<int32_t>(value));
  }
  if (ids.empty()) throw std::invalid_argument(fmt::format("{}: no token ids given", what));
  return ids;
}

std::vector<int32_t> own_translation(Transformer& model, const std::vector<int32_t>& src) {
  const TransformerConfig& c = model.config;
  std::vector<int32_t> tgt = {c.bos_id};
  const std::vector<TokenIds> decoded =
      greedy_decode(model, IndexTensor::from({1, std::ssize(src)}, src));
  tgt.insert(tgt.end(), decoded[0].begin(), decoded[0].end());
  tgt.push_back(c.eos_id);
  return tgt;
}

std::string beside(const std::string& path, const std::string& suffix) {
  return std::filesystem::path(path).replace_extension().string() + suffix;
}

namespace {
volatile std::sig_atomic_t stop_signal = 0;

extern "C" void request_stop(int signal_number) {
  if (stop_signal != 0) {
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
  }
  stop_signal = signal_number;
}
}  // namespace

void stop_after_step_on_signals() {
  struct sigaction action = {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int pending_stop_signal() {
  return stop_signal;
}

Progress::Progress(int64_t total)
    : total_(total),
      terminal_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void Progress::update(int64_t done, const std::string& status) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (terminal_) {
    if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    constexpr int kWidth = 28;
    const auto filled = static_cast<int>(kWidth * done / std::max<int64_t>(total_, 1));
    const double eta =
        done > 0 ? elapsed * static_cast<double>(total_ - done) / static_cast<double>(done) : 0.0;
    fmt::print(stderr, "\r[{:=<{}}{:<{}}] {}/{} {} {:.0f}s left  ", "", filled, ">",
               kWidth - filled, done, total_, status, eta);
    std::fflush(stderr);
  } else {
    const int64_t tenth = done * 10 / std::max<int64_t>(total_, 1);
    if (tenth == last_logged_) return;
    last_logged_ = tenth;
    fmt::print(stderr, "{}/{} {} ({:.1f}s)\n", done, total_, status, elapsed);
  }
}

void Progress::note(const std::string& line) {
  if (terminal_) fmt::print(stderr, "\r{:<100}\r", "");  // the next update redraws the bar below
  fmt::print(stderr, "{}\n", line);
}

void Progress::finish(const std::string& status) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (terminal_) fmt::print(stderr, "\r{:<100}\r", "");
  fmt::print(stderr, "{} steps in {:.1f}s: {}\n", total_, elapsed, status);
}

}  // namespace gf::cli
