// The Transformer of "Attention Is All You Need" (Vaswani et al. 2017): an encoder and a
// decoder of N identical layers each (§3.1, Figure 1).
//
//   encoder layer:  x -> LayerNorm(x + Dropout(SelfAttention(x)))
//                     -> LayerNorm(x + Dropout(FFN(x)))
//   decoder layer:  y -> LayerNorm(y + Dropout(MaskedSelfAttention(y)))
//                     -> LayerNorm(y + Dropout(CrossAttention(y, encoder output)))
//                     -> LayerNorm(y + Dropout(FFN(y)))
//
// Inputs are embedded, multiplied by sqrt(d_model) (§3.4), added to sinusoidal positions
// (§3.5) and passed through dropout (§5.4). The generator projects the decoder output onto
// the vocabulary with no bias; with `tied`, one matrix serves as source embedding, target
// embedding and generator (§3.4).
//
// learned_positions = true replaces the sinusoids by a trained table, the parameter
// pos_embed.weight [max_len, D] (xavier-initialised like the other embeddings), shared by
// encoder and decoder as the sinusoid table is: the alternative the paper compares in
// Table 3, row (E), after Gehring et al. 2017. A checkpoint of such a model has the metadata
// "positions": "learned" and the extra tensor (docs/checkpoint-format.md).
//
// encoder_layers = 0 leaves the decoder alone: a decoder-only model, the architecture of GPT
// (Radford et al. 2018, "Improving Language Understanding by Generative Pre-Training"). With no
// encoder there is nothing to cross-attend to, so each decoder layer keeps two of its three
// sub-layers, masked self-attention and the feed-forward network (cross_attn and norm2 are
// absent, and the checkpoint's names are otherwise the encoder-decoder's). It reads one sequence
// and predicts each next token of it: forward(tokens). Its checkpoint says "kind":
// "decoder-only" (docs/checkpoint-format.md). Lesson 13 trains one.
//
// norm_first = true moves each LayerNorm in front of its sub-layer (pre-norm, not in the
// paper: it trains deep stacks more easily) and adds a final LayerNorm to each stack.
//
// Shape legend: B batch, S source length, T target length, D d_model, V vocabulary.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autograd/random.h"
#include "autograd/tensor.h"
#include "nn/attention.h"
#include "nn/feed_forward.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "nn/safetensors.h"

namespace gf {

// The paper's base model by default (Table 3); the CLI's defaults are smaller.
struct TransformerConfig {
  int64_t vocab_size = 37000;
  int64_t d_model = 512;
  int64_t d_ff = 2048;
  int64_t heads = 8;
  int64_t encoder_layers = 6;  // 0: the decoder alone (above)
  int64_t decoder_layers = 6;
  int64_t max_len = 512;  // longest sequence the positional table covers
  float dropout = 0.1f;
  float norm_eps = 1e-5f;
  bool norm_first = false;
  bool tied = true;
  // A learned table of max_len x d_model position embeddings (the parameter pos_embed.weight)
  // in place of the sinusoids, one shared by encoder and decoder as the sinusoid table is:
  // Table 3, row (E), after Gehring et al. 2017. The paper found "nearly identical results".
  bool learned_positions = false;
  // Multiply the embeddings by sqrt(d_model) before the positions are added (§3.4). Off only
  // to measure what the scale does (lesson 06). Not saved in a checkpoint: a loaded model
  // always scales, so a checkpoint assumes this default.
  bool scale_embeddings = true;
  int32_t pad_id = 0, bos_id = 1, eos_id = 2;

  bool decoder_only() const { return encoder_layers == 0; }
  // Throws std::invalid_argument naming the first field that is out of range.
  void validate() const;
  // The checkpoint's __metadata__ (docs/checkpoint-format.md, "Metadata") and back.
  std::map<std::string, std::string> to_metadata() const;
  static TransformerConfig from_metadata(const std::map<std::string, std::string>& metadata,
                                         const std::string& source);
  // from_metadata, then checked against the file's tensors (their number and the embedding's
  // shape) before anything is allocated. Throws FormatError naming source.
  static TransformerConfig from_checkpoint(const nn::SafetensorsFile& file,
                                           const std::string& source);
  static constexpr int64_t kMaxPositions = 1 << 16;  // the largest max_len accepted
};

class EncoderLayer : public nn::Module {
 public:
  EncoderLayer(const TransformerConfig& config, Rng& rng);
  Tensor forward(const Tensor& x, const Tensor& src_mask);  // [B, S, D] -> [B, S, D]

  nn::MultiHeadAttention self_attn;
  nn::PositionwiseFeedForward ffn;
  nn::LayerNorm norm1, norm2;
  nn::Dropout dropout;
  bool norm_first;
};

// Keys and values cached across decoding steps, per layer.
struct DecoderLayerCache {
  nn::KVCache self_attn, cross_attn;
};

class DecoderLayer : public nn::Module {
 public:
  DecoderLayer(const TransformerConfig& config, Rng& rng);
  // y [B, T, D] attends to itself under tgt_mask and to memory [B, S, D] under src_mask (a
  // decoder-only model's layer has no cross-attention and takes no memory or src_mask).
  // With a cache, y holds only the new positions and earlier ones come from the cache.
  Tensor forward(const Tensor& y, const Tensor& memory, const Tensor& src_mask,
                 const Tensor& tgt_mask, DecoderLayerCache* cache = nullptr);

  nn::MultiHeadAttention self_attn;
  std::unique_ptr<nn::MultiHeadAttention> cross_attn;  // absent in a decoder-only model
  nn::PositionwiseFeedForward ffn;
  nn::LayerNorm norm1;
  std::unique_ptr<nn::LayerNorm> norm2;  // the cross-attention's; absent with it
  nn::LayerNorm norm3;
  nn::Dropout dropout;
  bool norm_first;
};

class Encoder : public nn::Module {
 public:
  Encoder(const TransformerConfig& config, Rng& rng);
  Tensor forward(Tensor x, const Tensor& src_mask);

  std::vector<std::unique_ptr<EncoderLayer>> layers;
  std::unique_ptr<nn::LayerNorm> norm;  // only with norm_first
};

class Decoder : public nn::Module {
 public:
  Decoder(const TransformerConfig& config, Rng& rng);
  Tensor forward(Tensor y, const Tensor& memory, const Tensor& src_mask, const Tensor& tgt_mask,
                 std::vector<DecoderLayerCache>* cache = nullptr);

  std::vector<std::unique_ptr<DecoderLayer>> layers;
  std::unique_ptr<nn::LayerNorm> norm;  // only with norm_first
};

// Which attention probabilities a forward pass keeps for drawing.
enum class AttentionKind { EncoderSelf, DecoderSelf, Cross };

class Transformer : public nn::Module {
 public:
  Transformer(const TransformerConfig& config, Rng& rng);

  // src [B, S] -> memory [B, S, D]. src_mask [B, 1, 1, S] blocks padding (1 = blocked).
  Tensor encode(const IndexTensor& src, const Tensor& src_mask);
  // tgt_in [B, T] (starting at position `offset`) -> decoder output [B, T, D].
  Tensor decode(const IndexTensor& tgt_in, const Tensor& memory, const Tensor& src_mask,
                const Tensor& tgt_mask, std::vector<DecoderLayerCache>* cache = nullptr,
                int64_t offset = 0);
  // Decoder output [..., D] -> logits [..., V].
  Tensor generate(const Tensor& y) const;
  // Teacher forcing: logits [B, T, V] for every target position at once. The masks follow
  // from the ids: padding in src and tgt_in, and the look-ahead mask in the decoder. A
  // decoder-only model takes an empty src (no elements) and reads tgt_in alone.
  Tensor forward(const IndexTensor& src, const IndexTensor& tgt_in);
  // A decoder-only model: tokens [B, T] -> logits [B, T, V], position t predicting token t + 1
  // from tokens 0 .. t (the look-ahead mask is the only mask left, with padding's). Throws
  // std::logic_error for a model with an encoder.
  Tensor forward(const IndexTensor& tokens);

  // Every attention module: each encoder layer's self-attention, then each decoder layer's
  // self- and cross-attention (self-attention alone in a decoder-only model).
  std::vector<nn::MultiHeadAttention*> attention_modules();
  // Keep (or stop keeping) every attention module's last probabilities; for a scope that
  // restores them, nn::RecordingAttention recording(model.attention_modules()).
  void record_attention(bool on);
  // The probabilities of the last forward: one [B, H, T, S] tensor per layer (none of the
  // encoder's kinds in a decoder-only model).
  std::vector<Tensor> attention(AttentionKind kind) const;

  const TransformerConfig config;

  // Parameters: embed (tied) or src_embed, tgt_embed and generator (untied; a decoder-only
  // model has no src_embed); pos_embed with learned_positions.
  std::unique_ptr<nn::Embedding> embed, src_embed, tgt_embed;
  Encoder encoder;
  Decoder decoder;
  std::unique_ptr<nn::Linear> generator;     // [V, D], no bias; absent when tied
  std::unique_ptr<nn::Embedding> pos_embed;  // [max_len, D]; only with learned_positions

 private:
  Tensor embed_tokens(const nn::Embedding& table, const IndexTensor& ids, int64_t offset);
  Tensor learned_rows(int64_t offset, int64_t length) const;
  nn::PositionalEncoding positions_;
  nn::Dropout dropout_;
};

}  // namespace gf
