// transformer: train the paper's model on a toy task or on sentence pairs (or its decoder alone
// on a text), then score, decode, translate, evaluate, sample and look inside it.
//
//   transformer train --task copy --steps 600 --save out/copy.safetensors
//   echo "5 6 7 8 2" | transformer decode --ckpt out/copy.safetensors
//   transformer attention --ckpt out/copy.safetensors --src "5 6 7 8 2" --out out/attention
//   transformer report --ckpt out/copy.safetensors --src "5 6 7 8 2" --out out/copy.html
//
//   transformer generate --task toy-translation --out out/toy
//   transformer train --task translate --data out/toy/train.tsv --dev out/toy/dev.tsv
//       --save out/toy.safetensors
//   echo "the cat sees a dog ." | transformer translate --ckpt out/toy.safetensors
//   transformer eval --ckpt out/toy.safetensors --data out/toy/test.tsv --beam 4
//
//   transformer train --task lm --data out/fortunes/train.txt --dev out/fortunes/dev.txt
//       --save out/lm.safetensors
//   transformer sample --ckpt out/lm.safetensors --prompt "The " --temperature 0.8
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <string>
#include <vector>

#include "autograd/kernels/parallel.h"
#include "cli/commands.h"
#include "viz/text.h"

// A seed is any non-negative integer. CLI11 would read "-1" into an unsigned seed as
// 2^64 - 1 without a word, and its own range check prints the largest double in full.
const CLI::Validator kSeed(
    [](std::string& value) {
      const bool digits = !value.empty() && value.size() <= 20 &&
                          value.find_first_not_of("0123456789") == std::string::npos;
      return digits ? std::string()
                    : "must be a non-negative integer (below 2^64), got \"" + value + "\"";
    },
    "SEED");

const char* const kThreadsHelp =
    "Threads (0: one per core, or OMP_NUM_THREADS); the results are the same bits for any count";

namespace {

using namespace gf::cli;

// Every command that runs the model takes --threads (train keeps its own in its RunConfig).
void add_threads(CLI::App& command, int& threads) {
  command.add_option("--threads", threads, kThreadsHelp)
      ->capture_default_str()
      ->check(CLI::Range(0, gf::kernels::kMaxThreads));
}

// The commands that draw pictures take --font, repeatable: font files to draw their text with,
// in order of preference, instead of the system's DejaVu Sans and CJK fallback.
void add_fonts(CLI::App& command, std::vector<std::string>& fonts) {
  command.add_option("--font", fonts, "TrueType/OpenType font for the pictures' text (repeatable)")
      ->check(CLI::ExistingFile);
}

void add_score(CLI::App& app, ScoreOptions& o, int& threads) {
  CLI::App& s = *app.add_subcommand("score", "Negative log-likelihood (nats) of each target");
  s.add_option("--ckpt", o.ckpt, "Checkpoint")->required()->check(CLI::ExistingFile);
  s.add_option("--pairs", o.pairs, "Lines SRC_IDS<TAB>TGT_IDS")
      ->required()
      ->check(CLI::ExistingFile);
  add_threads(s, threads);
}

void add_decode(CLI::App& app, DecodeOptions& o, int& threads) {
  CLI::App& d =
      *app.add_subcommand("decode", "Translate id lines from stdin, one output line each");
  d.add_option("--ckpt", o.ckpt, "Checkpoint")->required()->check(CLI::ExistingFile);
  d.add_option("--beam", o.beam, "Beam size (1: greedy; the paper uses 4)")->capture_default_str();
  d.add_option("--length-penalty", o.length_penalty, "Beam length penalty alpha (§6.1: 0.6)")
      ->capture_default_str();
  d.add_option("--max-len", o.max_len, "Most tokens to generate (0: source length + 50)")
      ->capture_default_str();
  add_threads(d, threads);
}

void add_attention(CLI::App& app, AttentionOptions& o, int& threads) {
  CLI::App& a = *app.add_subcommand("attention", "Draw every attention map as labelled heatmaps");
  a.add_option("--ckpt", o.ckpt, "Checkpoint")->required()->check(CLI::ExistingFile);
  a.add_option("--src", o.src,
               "Source: ids such as \"5 6 7 2\", or text for a model trained on text")
      ->required();
  a.add_option("--tgt", o.tgt,
               "Target ids, or text for a model trained on text (default: the model's greedy "
               "output)");
  a.add_option("--out", o.out, "Directory for the images")->capture_default_str();
  add_threads(a, threads);
}

void add_report(CLI::App& app, ReportOptions& o, int& threads) {
  CLI::App& r = *app.add_subcommand(
      "report", "Write the page of a run (one HTML file that opens offline in any browser)");
  r.add_option("--ckpt", o.ckpt,
               "Checkpoint; its training state beside it, if any, gives the curves, timings and "
               "attention snapshots")
      ->required()
      ->check(CLI::ExistingFile);
  r.add_option("--src", o.sources,
               "A source sentence whose attention the page shows (ids such as \"5 6 7 2\", or "
               "text for a model trained on text); repeat for more");
  r.add_option("--out", o.out, "The page to write (default: the checkpoint's name with .html)");
  add_threads(r, threads);
}

void add_translate(CLI::App& app, TranslateOptions& o, int& threads) {
  CLI::App& tr = *app.add_subcommand(
      "translate", "Translate lines of text from stdin with a checkpoint trained on text");
  tr.add_option("--ckpt", o.ckpt, "Checkpoint (holds its tokenizer)")
      ->required()
      ->check(CLI::ExistingFile);
  tr.add_option("--beam", o.beam, "Beam size (1: greedy; the paper uses 4)")->capture_default_str();
  tr.add_option("--length-penalty", o.length_penalty, "Beam length penalty alpha (§6.1: 0.6)")
      ->capture_default_str();
  add_threads(tr, threads);
}

void add_eval(CLI::App& app, EvalOptions& o, int& threads) {
  CLI::App& ev = *app.add_subcommand(
      "eval", "BLEU and chrF on sentence pairs (and the alignment score on the toy language)");
  ev.add_option("--ckpt", o.ckpt, "Checkpoint (holds its tokenizer)")
      ->required()
      ->check(CLI::ExistingFile);
  ev.add_option("--data", o.data, "Pairs SOURCE<TAB>TARGET[<TAB>ALIGNMENT] to score")
      ->required()
      ->check(CLI::ExistingFile);
  ev.add_option("--beam", o.beam, "Beam size (1: greedy; the paper uses 4)")->capture_default_str();
  ev.add_option("--length-penalty", o.length_penalty, "Beam length penalty alpha (§6.1: 0.6)")
      ->capture_default_str();
  ev.add_option("--alignment-layer", o.alignment_layer,
                "Decoder layer whose cross-attention the alignment score reads (0: the last)")
      ->capture_default_str();
  ev.add_option("--hypotheses", o.hypotheses, "Write the translations to this file");
  ev.add_option("--tokenize", o.tokenize,
                "BLEU's tokenizer, as sacreBLEU's: 13a (words), zh (Chinese characters) or auto "
                "(zh when the targets are Chinese)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "13a", "zh"}));
  add_threads(ev, threads);
}

void add_generate(CLI::App& app, GenerateOptions& o) {
  CLI::App& g = *app.add_subcommand(
      "generate", "Write a generated corpus as train.tsv, dev.tsv and test.tsv in a directory");
  g.add_option("--task", o.task, "What to generate: toy-translation")
      ->capture_default_str()
      ->check(CLI::IsMember({"toy-translation"}));
  g.add_option("--split", o.split,
               "random, compositional (unseen adjective-noun pairs in test) or length (longer "
               "sentences in test)")
      ->capture_default_str()
      ->check(CLI::IsMember({"random", "compositional", "length"}));
  g.add_option("--train", o.train, "Training pairs")->capture_default_str();
  g.add_option("--dev", o.dev, "Development pairs")->capture_default_str();
  g.add_option("--test", o.test, "Test pairs")->capture_default_str();
  g.add_option("--seed", o.seed, "Random seed: the same seed gives the same files")
      ->check(kSeed)
      ->capture_default_str();
  g.add_option("--out", o.out, "Directory to write the files into")->capture_default_str();
}

void add_sample(CLI::App& app, SampleOptions& o, int& threads) {
  CLI::App& s = *app.add_subcommand(
      "sample", "Continue a prompt with text sampled from a model trained with --task lm");
  s.add_option("--ckpt", o.ckpt, "Checkpoint of a decoder-only model (holds its tokenizer)")
      ->required()
      ->check(CLI::ExistingFile);
  s.add_option("--prompt", o.prompt, "The text to continue (default: none)");
  s.add_option("--length", o.length, "Tokens to sample after the prompt")->capture_default_str();
  s.add_option("--temperature", o.temperature,
               "Divide the logits by this: below 1 sharper, above 1 flatter")
      ->capture_default_str();
  s.add_option("--top-k", o.top_k, "Sample among the k most probable tokens only (0: all)")
      ->capture_default_str();
  s.add_option("--top-p", o.top_p,
               "Sample among the fewest most probable tokens whose probabilities reach p (1: all)")
      ->capture_default_str();
  s.add_option("--count", o.count, "Samples to draw, separated by an empty line")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  s.add_option("--seed", o.seed, "Random seed: the same seed gives the same text")
      ->check(kSeed)
      ->capture_default_str();
  add_threads(s, threads);
}

// What the command line can set: the options of every command.
struct Options {
  gf::training::RunConfig train;
  ScoreOptions score;
  DecodeOptions decode;
  AttentionOptions attention;
  ReportOptions report;
  TranslateOptions translate;
  EvalOptions eval;
  SampleOptions sample;
  GenerateOptions generate;
  int threads = 0;                 // --threads of every command but train
  std::vector<std::string> fonts;  // --font of train and attention
};

// A mistyped command ("transformer trian") reaches CLI11 as a stray word, and CLI11 then
// reports only "A subcommand is required"; say which word was not understood instead.
int report_parse_error(CLI::App& app, const CLI::ParseError& e) {
  const std::vector<std::string> stray = app.remaining();
  if (app.get_subcommands().empty() && !stray.empty() && !stray.front().starts_with('-')) {
    fmt::print(stderr,
               "transformer: error: unknown command \"{}\" (expected train, score, decode, "
               "attention, report, translate, eval, sample or generate; see transformer "
               "--help)\n",
               stray.front());
    return e.get_exit_code();
  }
  return app.exit(e);
}

// Runs the command given; an error it throws is printed and gives exit status 1.
int dispatch(CLI::App& app, Options& o) {
  try {
    if (o.threads != 0) gf::kernels::set_num_threads(o.threads);
    if (!o.fonts.empty()) gf::viz::use_font_files(o.fonts);
    if (app.got_subcommand("train")) return run_train(o.train);
    if (app.got_subcommand("score")) return run_score(o.score);
    if (app.got_subcommand("decode")) return run_decode(o.decode);
    if (app.got_subcommand("attention")) return run_attention(o.attention);
    if (app.got_subcommand("report")) return run_report(o.report);
    if (app.got_subcommand("generate")) return run_generate(o.generate);
    if (app.got_subcommand("translate")) return run_translate(o.translate);
    if (app.got_subcommand("eval")) return run_eval(o.eval);
    if (app.got_subcommand("sample")) return run_sample(o.sample);
  } catch (const std::exception& e) {
    fmt::print(stderr, "transformer: error: {}\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"transformer: the encoder-decoder of \"Attention Is All You Need\", for learning."};
  app.require_subcommand(1);
  Options o;
  add_train_command(app, o.train, kSeed, kThreadsHelp);
  add_score(app, o.score, o.threads);
  add_decode(app, o.decode, o.threads);
  add_attention(app, o.attention, o.threads);
  add_report(app, o.report, o.threads);
  add_fonts(*app.get_subcommand("train"), o.fonts);
  add_fonts(*app.get_subcommand("attention"), o.fonts);
  add_translate(app, o.translate, o.threads);
  add_eval(app, o.eval, o.threads);
  add_sample(app, o.sample, o.threads);
  add_generate(app, o.generate);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return report_parse_error(app, e);
  }
  return dispatch(app, o);
}
