// `transformer train`: teacher-forced training with label smoothing (§5.4), Adam and the
// warm-up schedule (§5.3), on a generated task or a file of id pairs; then a greedy-decoding
// check on fresh sequences, the checkpoint, and pictures of the loss and learning rate.
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "data/batch.h"
#include "data/pairs_file.h"
#include "data/tasks.h"
#include "models/decode.h"
#include "nn/optim.h"
#include "viz/line_plot.h"

namespace gf::cli {

namespace {

// The fraction of pairs whose greedy decoding reproduces the target exactly.
double exact_match(Transformer& model, const std::vector<data::Pair>& pairs) {
  int64_t exact = 0;
  for (const auto& chunk : data::batches_in_order(pairs, 64)) {
    std::vector<std::vector<int32_t>> sources;
    for (const data::Pair& p : chunk) sources.push_back(p.src);
    const std::vector<TokenIds> outputs =
        greedy_decode(model, data::pad_sequences(sources, model.config.pad_id));
    for (size_t i = 0; i < chunk.size(); ++i) {
      const std::vector<int32_t>& tgt = chunk[i].tgt;  // bos ... eos
      exact += outputs[i] == TokenIds(tgt.begin() + 1, tgt.end() - 1);
    }
  }
  return static_cast<double>(exact) / static_cast<double>(pairs.size());
}

// Either a stream of freshly generated pairs or the batches of a file, cycled in order.
class BatchSource {
 public:
  BatchSource(const TrainOptions& o, const TransformerConfig& config, uint64_t seed)
      : rng_(seed), eval_rng_(rng_.next_u64()), batch_(o.batch) {
    if (!o.pairs.empty()) {
      file_ = data::read_pairs(o.pairs);
      data::check_ids(*file_, static_cast<int32_t>(config.vocab_size));
      slices_ = data::batches_in_order(file_->pairs, o.batch);
    } else {
      task_ = data::parse_task(o.task);
      task_config_ = {.vocab_size = static_cast<int32_t>(config.vocab_size),
                      .min_len = o.min_length > 0 ? o.min_length : o.length,
                      .max_len = o.length};
      data::validate(task_config_);
    }
  }
  data::Batch next() {
    if (file_) return data::make_batch(slices_[next_slice_++ % slices_.size()]);
    const std::vector<data::Pair> pairs = data::generate(task_, batch_, task_config_, rng_);
    return data::make_batch(pairs);
  }
  bool generated() const { return !file_.has_value(); }
  std::vector<data::Pair> fresh(int64_t count) {
    return data::generate(task_, count, task_config_, eval_rng_);
  }
  const std::vector<data::Pair>& file_pairs() const { return file_->pairs; }
  int64_t longest() const {
    if (!file_) return task_config_.max_len + 2;
    size_t longest = 0;
    for (const data::Pair& p : file_->pairs)
      longest = std::max({longest, p.src.size(), p.tgt.size()});
    return static_cast<int64_t>(longest);
  }

 private:
  Rng rng_;       // training batches
  Rng eval_rng_;  // evaluation sequences: drawing them must not change the training data
  int64_t batch_;
  data::Task task_ = data::Task::Copy;
  data::TaskConfig task_config_;
  std::optional<data::PairsFile> file_;
  std::vector<std::span<const data::Pair>> slices_;
  size_t next_slice_ = 0;
};

void validate(const TrainOptions& o) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw std::invalid_argument(message);
  };
  require(o.steps > 0, fmt::format("--steps must be positive, got {}", o.steps));
  require(o.batch > 0, fmt::format("--batch must be positive, got {}", o.batch));
  require(o.lr >= 0.0f,
          fmt::format("--lr must not be negative, got {} (0: the schedule's default)", o.lr));
  require(o.warmup > 0, fmt::format("--warmup must be positive, got {}", o.warmup));
  require(o.clip >= 0.0f, fmt::format("--clip must not be negative, got {}", o.clip));
  require(o.label_smoothing >= 0.0f && o.label_smoothing < 1.0f,
          fmt::format("--label-smoothing {} is outside [0, 1)", o.label_smoothing));
  require(o.optimizer == "adam" || o.optimizer == "sgd",
          fmt::format("--optimizer must be adam or sgd, got \"{}\"", o.optimizer));
  require(o.schedule == "noam" || o.schedule == "constant",
          fmt::format("--schedule must be noam or constant, got \"{}\"", o.schedule));
  require(o.threads >= 0, fmt::format("--threads must not be negative, got {}", o.threads));
  require(o.eval_count > 0, fmt::format("--eval-count must be positive, got {}", o.eval_count));
}

}  // namespace

int run_train(const TrainOptions& o) {
  validate(o);
  if (o.threads > 0) omp_set_num_threads(o.threads);
  Rng rng(o.seed);
  std::unique_ptr<Transformer> model;
  if (o.init.empty()) {
    model = std::make_unique<Transformer>(o.model, rng);
  } else {
    // The file fixes the architecture, but dropout is a training choice it does not store:
    // --dropout still applies, with masks drawn from --seed.
    model = load_model(o.init, o.model.dropout, rng.next_u64());
    fmt::print(stderr,
               "starting from {} (its configuration replaces the model flags except "
               "--dropout)\n",
               o.init);
  }
  const TransformerConfig& config = model->config;
  BatchSource source(o, config, rng.next_u64());
  if (source.longest() > config.max_len)
    throw std::invalid_argument(fmt::format("sequences of up to {} tokens do not fit --max-len {}",
                                            source.longest(), config.max_len));
  // The checkpoint's folder is made now, once the options have passed, so that a --save path
  // that cannot be written fails before the training run rather than after it.
  const std::filesystem::path save_dir = std::filesystem::path(o.save).parent_path();
  if (!save_dir.empty()) std::filesystem::create_directories(save_dir);
  model->train();
  fmt::print(
      stderr, "model: {} parameters (d_model {}, d_ff {}, heads {}, layers {}+{}, vocab {}{})\n",
      model->parameter_count(), config.d_model, config.d_ff, config.heads, config.encoder_layers,
      config.decoder_layers, config.vocab_size, config.tied ? ", tied" : "");

  const std::vector<Tensor> parameters = model->parameters();
  // --lr 0 (the default) picks the schedule's own: a factor of 0.5 for noam (1.0 missed a few
  // sequences on some seeds), 1e-3 for a constant rate.
  const float base_lr = o.lr > 0.0f ? o.lr : (o.schedule == "noam" ? 0.5f : 1e-3f);
  std::optional<nn::Adam> adam;
  std::optional<nn::Sgd> sgd;
  if (o.optimizer == "adam")
    adam.emplace(parameters, nn::AdamConfig{.lr = base_lr});
  else
    sgd.emplace(parameters, nn::SgdConfig{.lr = base_lr});
  auto learning_rate = [&](int64_t step) {
    return o.schedule == "noam" ? nn::noam_lr(step, config.d_model, o.warmup, base_lr) : base_lr;
  };

  std::vector<float> losses, rates;
  Progress progress(o.steps);
  int64_t tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 1; step <= o.steps; ++step) {
    const data::Batch batch = source.next();
    const Tensor logits = model->forward(batch.src, batch.tgt_in);
    const Tensor loss =
        cross_entropy(logits, batch.tgt_out,
                      {.ignore_index = config.pad_id, .label_smoothing = o.label_smoothing});
    model->zero_grad();
    loss.backward();
    if (o.clip > 0.0f) nn::clip_grad_norm(parameters, o.clip);
    const float lr = learning_rate(step);
    if (o.optimizer == "adam") {
      adam->set_lr(lr);
      adam->step();
    } else {
      sgd->set_lr(lr);
      sgd->step();
    }
    losses.push_back(loss.item());
    rates.push_back(lr);
    tokens += batch.target_tokens;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress.update(step, fmt::format("loss {:.4f} lr {:.2e} {:.0f} tok/s", losses.back(), lr,
                                      static_cast<double>(tokens) / seconds));
    if (o.eval_every > 0 && step % o.eval_every == 0 && step < o.steps && source.generated()) {
      const double accuracy = exact_match(*model, source.fresh(o.eval_count));
      model->train();
      progress.note(fmt::format("step {}: {:.0f}% of {} fresh sequences decoded exactly", step,
                                100 * accuracy, o.eval_count));
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  progress.finish(fmt::format("final loss {:.4f}, {:.0f} target tokens/s", losses.back(),
                              static_cast<double>(tokens) / seconds));

  // Greedy decoding, never teacher forcing: the model must produce each token from its own.
  const double accuracy = source.generated() ? exact_match(*model, source.fresh(o.eval_count))
                                             : exact_match(*model, source.file_pairs());
  fmt::print("exact: {:.1f}% of {} {} decoded exactly (greedy)\n", 100 * accuracy,
             source.generated() ? o.eval_count : static_cast<int64_t>(source.file_pairs().size()),
             source.generated() ? "fresh sequences" : "training pairs");

  save_model(o.save, *model);
  const std::string loss_png = beside(o.save, ".loss.png"), lr_png = beside(o.save, ".lr.png");
  viz::write_png(
      viz::line_plot(
          {{.name = "training loss", .ys = losses}},
          {.title = "loss (label-smoothed cross-entropy)", .y_label = "loss", .log_y = true}),
      loss_png);
  viz::write_png(viz::line_plot({{.name = "learning rate", .ys = rates}},
                                {.title = fmt::format("learning rate ({} schedule)", o.schedule),
                                 .y_label = "learning rate"}),
                 lr_png);
  fmt::print("saved: {} (checkpoint), {} and {} (curves)\n", o.save, loss_png, lr_png);
  return 0;
}

}  // namespace gf::cli
