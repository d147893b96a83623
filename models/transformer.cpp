#include "models/transformer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "autograd/errors.h"
#include "autograd/ops.h"
#include "nn/checkpoint.h"

namespace gf {

// ---- Configuration --------------------------------------------------------------------

void TransformerConfig::validate() const {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw std::invalid_argument("transformer config: " + message);
  };
  require(vocab_size > std::max({pad_id, bos_id, eos_id}),
          fmt::format("vocab_size {} must exceed the special ids (pad {}, bos {}, eos {})",
                      vocab_size, pad_id, bos_id, eos_id));
  require(d_model > 0, fmt::format("d_model must be positive, got {}", d_model));
  require(d_ff > 0, fmt::format("d_ff must be positive, got {}", d_ff));
  require(heads > 0 && d_model % heads == 0,
          fmt::format("heads ({}) must be positive and divide d_model ({})", heads, d_model));
  require(encoder_layers >= 0,
          fmt::format("encoder_layers must be 0 (decoder-only) or more, got {}", encoder_layers));
  require(decoder_layers > 0,
          fmt::format("decoder_layers must be positive, got {}", decoder_layers));
  // The positional table holds max_len x d_model floats, built whole.
  require(max_len > 0 && max_len <= kMaxPositions,
          fmt::format("max_len must be in [1, {}], got {}", kMaxPositions, max_len));
  require(dropout >= 0.0f && dropout < 1.0f, fmt::format("dropout {} is outside [0, 1)", dropout));
  require(norm_eps > 0.0f && std::isfinite(norm_eps),
          fmt::format("norm_eps must be positive and finite, got {}", norm_eps));
  require(pad_id >= 0 && bos_id >= 0 && eos_id >= 0, "special ids must not be negative");
  require(
      pad_id != bos_id && pad_id != eos_id && bos_id != eos_id,
      fmt::format("pad ({}), bos ({}) and eos ({}) must be different ids", pad_id, bos_id, eos_id));
}

std::map<std::string, std::string> TransformerConfig::to_metadata() const {
  std::map<std::string, std::string> m = {
      {"vocab_size", std::to_string(vocab_size)},
      {"d_model", std::to_string(d_model)},
      {"d_ff", std::to_string(d_ff)},
      {"heads", std::to_string(heads)},
      {"encoder_layers", std::to_string(encoder_layers)},
      {"decoder_layers", std::to_string(decoder_layers)},
      {"max_len", std::to_string(max_len)},
      {"norm_eps", fmt::format("{}", norm_eps)},  // shortest text that reads back exactly
      {"norm_first", norm_first ? "true" : "false"},
      {"tied", tied ? "true" : "false"},
      {"pad_id", std::to_string(pad_id)},
      {"bos_id", std::to_string(bos_id)},
      {"eos_id", std::to_string(eos_id)}};
  // Written only when learned, so that a sinusoidal model's file is what it always was; the
  // same for the kind.
  if (learned_positions) m["positions"] = "learned";
  if (decoder_only()) m["kind"] = "decoder-only";
  return m;
}

// "positions": absent (every file before the option) or "sinusoidal", or "learned".
static bool learned_positions_of(const std::map<std::string, std::string>& m,
                                 const std::string& source) {
  const auto it = m.find("positions");
  if (it == m.end() || it->second == "sinusoidal") return false;
  if (it->second == "learned") return true;
  throw FormatError(
      fmt::format("checkpoint: {}: metadata \"positions\" is \"{}\", not sinusoidal or learned",
                  source, it->second));
}

// "kind": absent (every file before decoder-only models) or "encoder-decoder", or
// "decoder-only", which must agree with encoder_layers.
static void check_kind(const std::map<std::string, std::string>& m, int64_t encoder_layers,
                       const std::string& source) {
  const auto it = m.find("kind");
  const std::string kind = it == m.end() ? "encoder-decoder" : it->second;
  if (kind != "encoder-decoder" && kind != "decoder-only")
    throw FormatError(fmt::format(
        "checkpoint: {}: metadata \"kind\" is \"{}\", not encoder-decoder or decoder-only", source,
        kind));
  if ((kind == "decoder-only") != (encoder_layers == 0))
    throw FormatError(
        fmt::format("checkpoint: {}: metadata \"kind\" is \"{}\", but \"encoder_layers\" is {}",
                    source, kind, encoder_layers));
}

TransformerConfig TransformerConfig::from_metadata(const std::map<std::string, std::string>& m,
                                                   const std::string& source) {
  auto id = [&](const std::string& key) {
    const int64_t value = nn::metadata_int(m, key, source);
    if (value < 0 || value > INT32_MAX)
      throw FormatError(
          fmt::format("checkpoint: {}: metadata \"{}\" is {}, not a token id", source, key, value));
    return static_cast<int32_t>(value);
  };
  TransformerConfig c;
  c.vocab_size = nn::metadata_int(m, "vocab_size", source);
  c.d_model = nn::metadata_int(m, "d_model", source);
  c.d_ff = nn::metadata_int(m, "d_ff", source);
  c.heads = nn::metadata_int(m, "heads", source);
  c.encoder_layers = nn::metadata_int(m, "encoder_layers", source);
  c.decoder_layers = nn::metadata_int(m, "decoder_layers", source);
  c.max_len = nn::metadata_int(m, "max_len", source);
  c.norm_eps = nn::metadata_float(m, "norm_eps", source);
  c.norm_first = nn::metadata_bool(m, "norm_first", source);
  c.tied = nn::metadata_bool(m, "tied", source);
  c.learned_positions = learned_positions_of(m, source);
  check_kind(m, c.encoder_layers, source);
  c.pad_id = id("pad_id");
  c.bos_id = id("bos_id");
  c.eos_id = id("eos_id");
  c.dropout = 0.0f;  // not part of the file: a loaded model is for inference unless told otherwise
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw FormatError(fmt::format("checkpoint: {}: {}", source, e.what()));
  }
  return c;
}

// How many tensors a model of c's layout holds, counted on a model of the same layout at
// width 1 with one layer per stack, so that the layers' own constructors are the only
// statement of the checkpoint layout. Cheap whatever sizes c claims.
static int64_t tensor_count(const TransformerConfig& c) {
  TransformerConfig narrow = c;
  narrow.vocab_size = std::max({c.pad_id, c.bos_id, c.eos_id}) + 1;
  narrow.d_model = narrow.d_ff = narrow.heads = narrow.max_len = 1;
  narrow.encoder_layers = std::min<int64_t>(c.encoder_layers, 1);
  narrow.decoder_layers = 1;
  Rng rng(1);
  const Transformer model(narrow, rng);
  const auto count = [](const nn::Module& m) {
    return static_cast<int64_t>(m.named_parameters().size());
  };
  const int64_t encoder_layer = c.encoder_layers > 0 ? count(*model.encoder.layers[0]) : 0;
  return count(model) + (c.encoder_layers - narrow.encoder_layers) * encoder_layer +
         (c.decoder_layers - 1) * count(*model.decoder.layers[0]);
}

// The position table and the metadata's "positions" must agree, said plainly: a count that is
// off by one would not tell the reader why.
static void check_positions(const nn::SafetensorsFile& file, const TransformerConfig& c,
                            const std::string& source) {
  const auto it = std::find_if(file.tensors.begin(), file.tensors.end(),
                               [](const auto& named) { return named.first == "pos_embed.weight"; });
  const bool has_table = it != file.tensors.end();
  if (c.learned_positions && !has_table)
    throw FormatError(fmt::format(
        "checkpoint: {}: metadata \"positions\" is \"learned\", but the file holds no tensor "
        "\"pos_embed.weight\"",
        source));
  if (!c.learned_positions && has_table)
    throw FormatError(fmt::format(
        "checkpoint: {}: holds the learned position table \"pos_embed.weight\", but its "
        "metadata lacks \"positions\": \"learned\"",
        source));
  if (has_table && !(it->second.shape() == Shape{c.max_len, c.d_model}))
    throw FormatError(fmt::format(
        "checkpoint: {}: tensor \"pos_embed.weight\" has shape {}, but the metadata says max_len "
        "{} and d_model {}",
        source, it->second.shape(), c.max_len, c.d_model));
}

TransformerConfig TransformerConfig::from_checkpoint(const nn::SafetensorsFile& file,
                                                     const std::string& source) {
  const TransformerConfig c = from_metadata(file.metadata, source);
  check_positions(file, c, source);
  // The metadata decides how big a model gets built, so it is checked against the tensors
  // first: a corrupt header must not make us allocate a model the file cannot fill.
  // Every layer holds tensors of its own, so more layers than the file has tensors cannot
  // match (and must not overflow the count).
  const auto tensors = static_cast<int64_t>(file.tensors.size());
  const bool too_many_layers = c.encoder_layers > tensors || c.decoder_layers > tensors;
  if (too_many_layers || tensors != tensor_count(c))
    throw FormatError(fmt::format(
        "checkpoint: {}: holds {} tensors, but its metadata describes a model of {} ({} + {} "
        "layers{}{}{}{})",
        source, tensors,
        too_many_layers ? fmt::format("more than {}", tensors) : std::to_string(tensor_count(c)),
        c.encoder_layers, c.decoder_layers, c.decoder_only() ? ", decoder-only" : "",
        c.tied ? ", tied" : "", c.norm_first ? ", pre-norm" : "",
        c.learned_positions ? ", learned positions" : ""));
  const std::string embedding =
      c.tied ? "embed.weight" : (c.decoder_only() ? "tgt_embed.weight" : "src_embed.weight");
  for (const auto& [name, tensor] : file.tensors)
    if (name == embedding && !(tensor.shape() == Shape{c.vocab_size, c.d_model}))
      throw FormatError(fmt::format(
          "checkpoint: {}: tensor \"{}\" has shape {}, but the metadata says vocab_size {} and "
          "d_model {}",
          source, name, tensor.shape(), c.vocab_size, c.d_model));
  return c;
}

// ---- Layers ---------------------------------------------------------------------------

static nn::AttentionConfig attention_config(const TransformerConfig& c) {
  return {.d_model = c.d_model, .heads = c.heads};
}

EncoderLayer::EncoderLayer(const TransformerConfig& c, Rng& rng)
    : self_attn(attention_config(c), rng),
      ffn(c.d_model, c.d_ff, rng),
      norm1(c.d_model, c.norm_eps),
      norm2(c.d_model, c.norm_eps),
      dropout(c.dropout, rng),
      norm_first(c.norm_first) {
  register_module("self_attn", self_attn);
  register_module("norm1", norm1);
  register_module("ffn", ffn);
  register_module("norm2", norm2);
  register_module("dropout", dropout);
}

// Post-norm, as in the paper: LayerNorm(x + Dropout(Sublayer(x))) (§3.1, §5.4).
// Pre-norm: x + Dropout(Sublayer(LayerNorm(x))).
Tensor EncoderLayer::forward(const Tensor& x, const Tensor& src_mask) {
  if (norm_first) {
    const Tensor h = norm1.forward(x);
    const Tensor y = x + dropout.forward(self_attn.forward(h, h, src_mask));
    return y + dropout.forward(ffn.forward(norm2.forward(y)));
  }
  const Tensor y = norm1.forward(x + dropout.forward(self_attn.forward(x, x, src_mask)));
  return norm2.forward(y + dropout.forward(ffn.forward(y)));
}

// The weights are drawn in the order of the sub-layers, cross-attention's between the two
// others, so that an encoder-decoder's initial weights are what they were before decoder-only
// models.
DecoderLayer::DecoderLayer(const TransformerConfig& c, Rng& rng)
    : self_attn(attention_config(c), rng),
      cross_attn(c.decoder_only()
                     ? nullptr
                     : std::make_unique<nn::MultiHeadAttention>(attention_config(c), rng)),
      ffn(c.d_model, c.d_ff, rng),
      norm1(c.d_model, c.norm_eps),
      norm2(c.decoder_only() ? nullptr : std::make_unique<nn::LayerNorm>(c.d_model, c.norm_eps)),
      norm3(c.d_model, c.norm_eps),
      dropout(c.dropout, rng),
      norm_first(c.norm_first) {
  register_module("self_attn", self_attn);
  register_module("norm1", norm1);
  if (cross_attn) {
    register_module("cross_attn", *cross_attn);
    register_module("norm2", *norm2);
  }
  register_module("ffn", ffn);
  register_module("norm3", norm3);
  register_module("dropout", dropout);
}

Tensor DecoderLayer::forward(const Tensor& y, const Tensor& memory, const Tensor& src_mask,
                             const Tensor& tgt_mask, DecoderLayerCache* cache) {
  // The three sub-layers; with a cache, attention reads earlier positions' keys and values.
  auto self = [&](const Tensor& h) {
    return cache ? self_attn.self_attend_cached(h, tgt_mask, cache->self_attn)
                 : self_attn.forward(h, h, tgt_mask);
  };
  auto cross = [&](const Tensor& h) {
    return cache ? cross_attn->cross_attend_cached(h, memory, src_mask, cache->cross_attn)
                 : cross_attn->forward(h, memory, src_mask);
  };
  if (norm_first) {
    Tensor x = y + dropout.forward(self(norm1.forward(y)));
    if (cross_attn) x = x + dropout.forward(cross(norm2->forward(x)));
    return x + dropout.forward(ffn.forward(norm3.forward(x)));
  }
  Tensor x = norm1.forward(y + dropout.forward(self(y)));
  if (cross_attn) x = norm2->forward(x + dropout.forward(cross(x)));
  return norm3.forward(x + dropout.forward(ffn.forward(x)));
}

// ---- Stacks ---------------------------------------------------------------------------

Encoder::Encoder(const TransformerConfig& c, Rng& rng) {
  for (int64_t i = 0; i < c.encoder_layers; ++i) {
    layers.push_back(std::make_unique<EncoderLayer>(c, rng));
    register_module(fmt::format("layers.{}", i), *layers.back());
  }
  if (c.norm_first && !layers.empty()) {
    norm = std::make_unique<nn::LayerNorm>(c.d_model, c.norm_eps);
    register_module("norm", *norm);
  }
}

Tensor Encoder::forward(Tensor x, const Tensor& src_mask) {
  for (auto& layer : layers) x = layer->forward(x, src_mask);
  return norm ? norm->forward(x) : x;
}

Decoder::Decoder(const TransformerConfig& c, Rng& rng) {
  for (int64_t i = 0; i < c.decoder_layers; ++i) {
    layers.push_back(std::make_unique<DecoderLayer>(c, rng));
    register_module(fmt::format("layers.{}", i), *layers.back());
  }
  if (c.norm_first) {
    norm = std::make_unique<nn::LayerNorm>(c.d_model, c.norm_eps);
    register_module("norm", *norm);
  }
}

Tensor Decoder::forward(Tensor y, const Tensor& memory, const Tensor& src_mask,
                        const Tensor& tgt_mask, std::vector<DecoderLayerCache>* cache) {
  if (cache && cache->size() != layers.size()) cache->resize(layers.size());
  for (size_t i = 0; i < layers.size(); ++i)
    y = layers[i]->forward(y, memory, src_mask, tgt_mask, cache ? &(*cache)[i] : nullptr);
  return norm ? norm->forward(y) : y;
}

// ---- The model ------------------------------------------------------------------------

static const TransformerConfig& validated(const TransformerConfig& c) {
  c.validate();
  return c;
}

Transformer::Transformer(const TransformerConfig& c, Rng& rng)
    : config(validated(c)),
      embed(c.tied ? std::make_unique<nn::Embedding>(c.vocab_size, c.d_model, rng) : nullptr),
      src_embed(c.tied || c.decoder_only()
                    ? nullptr
                    : std::make_unique<nn::Embedding>(c.vocab_size, c.d_model, rng)),
      tgt_embed(c.tied ? nullptr : std::make_unique<nn::Embedding>(c.vocab_size, c.d_model, rng)),
      encoder(c, rng),
      decoder(c, rng),
      generator(c.tied ? nullptr
                       : std::make_unique<nn::Linear>(c.d_model, c.vocab_size, rng, false)),
      pos_embed(c.learned_positions ? std::make_unique<nn::Embedding>(c.max_len, c.d_model, rng)
                                    : nullptr),
      positions_(c.max_len, c.d_model),
      dropout_(c.dropout, rng) {
  if (c.tied) {
    register_module("embed", *embed);
  } else {
    if (src_embed) register_module("src_embed", *src_embed);
    register_module("tgt_embed", *tgt_embed);
  }
  if (!c.decoder_only()) register_module("encoder", encoder);
  register_module("decoder", decoder);
  if (!c.tied) register_module("generator", *generator);
  if (pos_embed) register_module("pos_embed", *pos_embed);
  register_module("dropout", dropout_);
}

// Embedding * sqrt(d_model) + PE, then dropout (§3.4, §3.5, §5.4); PE is the sinusoid table's
// rows, or with learned_positions pos_embed's (Table 3, row (E)). The paper gives no reason
// for the scale. Xavier-initialised embeddings have entries of about sqrt(2 / (V + D)),
// far below the positional codes' sines and cosines of size ~1, so unscaled, the positions
// would drown the tokens; with tied weights the same matrix is the output projection, where
// small entries keep the first logits small. Lesson 06 measures the norms, and trains with
// and without the scale (scale_embeddings).
Tensor Transformer::embed_tokens(const nn::Embedding& table, const IndexTensor& ids,
                                 int64_t offset) {
  if (ids.shape().rank() != 2)
    throw ShapeError(fmt::format("transformer: token ids must be [B, L], got {}", ids.shape()));
  const Tensor tokens = table.forward(ids);
  const Tensor scaled =
      config.scale_embeddings ? tokens * std::sqrt(static_cast<float>(config.d_model)) : tokens;
  const int64_t length = ids.shape()[1];
  return dropout_.forward(
      scaled + (pos_embed ? learned_rows(offset, length) : positions_.rows(offset, length)));
}

// Rows offset .. offset + length - 1 of pos_embed: a slice, so the gradient reaches exactly
// the rows used.
Tensor Transformer::learned_rows(int64_t offset, int64_t length) const {
  const int64_t max_len = pos_embed->weight.dim(0);
  if (offset < 0 || length < 0 || offset + length > max_len)
    throw IndexError(
        fmt::format("learned positions: positions {} to {} exceed max_len {} (raise max_len)",
                    offset, offset + length - 1, max_len));
  return slice(pos_embed->weight, 0, offset, offset + length);
}

Tensor Transformer::encode(const IndexTensor& src, const Tensor& src_mask) {
  if (config.decoder_only())
    throw std::logic_error("transformer: a decoder-only model has no encoder to encode with");
  return encoder.forward(embed_tokens(config.tied ? *embed : *src_embed, src, 0), src_mask);
}

Tensor Transformer::decode(const IndexTensor& tgt_in, const Tensor& memory, const Tensor& src_mask,
                           const Tensor& tgt_mask, std::vector<DecoderLayerCache>* cache,
                           int64_t offset) {
  const Tensor y = embed_tokens(config.tied ? *embed : *tgt_embed, tgt_in, offset);
  return decoder.forward(y, memory, src_mask, tgt_mask, cache);
}

Tensor Transformer::generate(const Tensor& y) const {
  return linear(y, config.tied ? embed->weight : generator->weight);
}

Tensor Transformer::forward(const IndexTensor& src, const IndexTensor& tgt_in) {
  if (config.decoder_only()) {
    if (src.numel() > 0)
      throw ShapeError(fmt::format(
          "transformer: a decoder-only model reads no source, got source ids {}", src.shape()));
    return forward(tgt_in);
  }
  const Tensor src_mask = nn::padding_mask(src, config.pad_id);
  const Tensor memory = encode(src, src_mask);
  return generate(decode(tgt_in, memory, src_mask, nn::target_mask(tgt_in, config.pad_id)));
}

// The decoder's layers without memory: each position attends to itself and the positions
// before it (the look-ahead mask, §3.2.3), and to no padding.
Tensor Transformer::forward(const IndexTensor& tokens) {
  if (!config.decoder_only())
    throw std::logic_error(
        "transformer: forward(tokens) is the decoder-only model's; an encoder-decoder reads a "
        "source too");
  return generate(decode(tokens, {}, {}, nn::target_mask(tokens, config.pad_id)));
}

std::vector<nn::MultiHeadAttention*> Transformer::attention_modules() {
  std::vector<nn::MultiHeadAttention*> modules;
  for (auto& layer : encoder.layers) modules.push_back(&layer->self_attn);
  for (auto& layer : decoder.layers) {
    modules.push_back(&layer->self_attn);
    if (layer->cross_attn) modules.push_back(layer->cross_attn.get());
  }
  return modules;
}

void Transformer::record_attention(bool on) {
  for (nn::MultiHeadAttention* attention : attention_modules()) attention->record_attention = on;
}

std::vector<Tensor> Transformer::attention(AttentionKind kind) const {
  std::vector<Tensor> maps;
  if (kind == AttentionKind::EncoderSelf)
    for (const auto& layer : encoder.layers) maps.push_back(layer->self_attn.last_attention);
  for (const auto& layer : decoder.layers) {
    if (kind == AttentionKind::DecoderSelf) maps.push_back(layer->self_attn.last_attention);
    if (kind == AttentionKind::Cross && layer->cross_attn)
      maps.push_back(layer->cross_attn->last_attention);
  }
  return maps;
}

}  // namespace gf
