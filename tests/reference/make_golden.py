#!/usr/bin/python3
"""Writes the golden files that tests/models/test_golden.cpp compares against.

A tiny Transformer written here in plain PyTorch, layer for layer as models/transformer.cpp
builds it (the paper's post-norm by default, pre-norm as an option; q, k, v, o projections
with bias; sinusoidal or learned positions; embeddings scaled by sqrt(d_model); a bias-free
generator, tied or not; with encoder_layers=0 the decoder alone, GPT's arrangement). It runs
one teacher-forced forward pass and a cross-entropy loss, backpropagates, and saves in our
safetensors format:

  the parameters under their checkpoint names, the inputs as float ids ("input.src",
  "input.tgt_in", "input.tgt_out"; for a decoder-only model "input.tokens" and
  "input.targets", the same sequences shifted by one), "output.log_probs" [B, T, V],
  "output.loss" [] and "grad.<name>" for every parameter; the configuration in __metadata__,
  with the keys and values our checkpoints have.

The encoder-decoder files use label smoothing 0.1 (§5.4); the decoder-only ones none, as a
language model is trained (training/recipe.cpp), so between them both paths of the loss are
covered.

Only the inputs and the weights are exact: a different PyTorch build may round outputs and
gradients differently in their last bit, well inside the tests' tolerances, so a regenerated
file can differ from the committed one without anything being wrong.

Needs Debian's python3-torch, which only /usr/bin/python3 can import. CI never runs this;
run it only to regenerate the committed files:

  /usr/bin/python3 tests/reference/make_golden.py tests/golden
"""
import json
import math
import struct
import sys
from pathlib import Path

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
PAD, BOS, EOS = 0, 1, 2


def sinusoids(max_len, d_model):
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos * torch.pow(10000.0, -i / d_model)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()


class Attention(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d) for _ in range(4))

    def forward(self, x, memory, mask):
        b, t, d = x.shape
        s = memory.shape[1]
        h, k = self.heads, d // self.heads
        q = self.q(x).view(b, t, h, k).transpose(1, 2)
        key = self.k(memory).view(b, s, h, k).transpose(1, 2)
        v = self.v(memory).view(b, s, h, k).transpose(1, 2)
        scores = q @ key.transpose(-1, -2) / math.sqrt(k)
        scores = scores.masked_fill(mask, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.o(out.transpose(1, 2).reshape(b, t, d))


class FeedForward(torch.nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.linear1, self.linear2 = torch.nn.Linear(d, f), torch.nn.Linear(f, d)

    def forward(self, x):
        return self.linear2(torch.relu(self.linear1(x)))


class EncoderLayer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm_first = c["norm_first"]
        self.self_attn = Attention(c["d_model"], c["heads"])
        self.ffn = FeedForward(c["d_model"], c["d_ff"])
        self.norm1 = torch.nn.LayerNorm(c["d_model"], eps=c["norm_eps"])
        self.norm2 = torch.nn.LayerNorm(c["d_model"], eps=c["norm_eps"])

    def forward(self, x, mask):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, mask)
            return x + self.ffn(self.norm2(x))
        x = self.norm1(x + self.self_attn(x, x, mask))
        return self.norm2(x + self.ffn(x))


class DecoderLayer(torch.nn.Module):
    """Without an encoder (decoder-only) there is no cross-attention and no norm2."""

    def __init__(self, c):
        super().__init__()
        self.norm_first = c["norm_first"]
        self.cross = c["encoder_layers"] > 0
        # Modules are created in the same order either way: the random draws, and so the
        # encoder-decoder files, stay what they were before decoder-only models.
        self.self_attn = Attention(c["d_model"], c["heads"])
        if self.cross:
            self.cross_attn = Attention(c["d_model"], c["heads"])
        self.ffn = FeedForward(c["d_model"], c["d_ff"])
        self.norm1 = torch.nn.LayerNorm(c["d_model"], eps=c["norm_eps"])
        if self.cross:
            self.norm2 = torch.nn.LayerNorm(c["d_model"], eps=c["norm_eps"])
        self.norm3 = torch.nn.LayerNorm(c["d_model"], eps=c["norm_eps"])

    def forward(self, y, memory, src_mask, tgt_mask):
        if self.norm_first:
            h = self.norm1(y)
            y = y + self.self_attn(h, h, tgt_mask)
            if self.cross:
                y = y + self.cross_attn(self.norm2(y), memory, src_mask)
            return y + self.ffn(self.norm3(y))
        y = self.norm1(y + self.self_attn(y, y, tgt_mask))
        if self.cross:
            y = self.norm2(y + self.cross_attn(y, memory, src_mask))
        return self.norm3(y + self.ffn(y))


class Stack(torch.nn.Module):
    def __init__(self, layer, n, c):
        super().__init__()
        self.layers = torch.nn.ModuleList(layer(c) for _ in range(n))
        if c["norm_first"]:
            self.norm = torch.nn.LayerNorm(c["d_model"], eps=c["norm_eps"])


class Transformer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        v, d = c["vocab_size"], c["d_model"]
        self.decoder_only = c["encoder_layers"] == 0
        if c["tied"]:
            self.embed = torch.nn.Embedding(v, d)
        else:
            if not self.decoder_only:
                self.src_embed = torch.nn.Embedding(v, d)
            self.tgt_embed = torch.nn.Embedding(v, d)
            self.generator = torch.nn.Linear(d, v, bias=False)
        if not self.decoder_only:  # an empty encoder would still have a norm with norm_first
            self.encoder = Stack(EncoderLayer, c["encoder_layers"], c)
        self.decoder = Stack(DecoderLayer, c["decoder_layers"], c)
        if c["learned_positions"]:
            self.pos_embed = torch.nn.Embedding(c["max_len"], d)
        self.register_buffer("pe", sinusoids(c["max_len"], d))
        for p in self.parameters():  # spread the values so every path matters
            torch.nn.init.uniform_(p, -0.5, 0.5)

    def embed_tokens(self, table, ids):
        t = ids.shape[1]
        positions = self.pos_embed.weight[:t] if self.c["learned_positions"] else self.pe[:t]
        return table(ids) * math.sqrt(self.c["d_model"]) + positions

    def forward(self, src, tgt_in):
        """Logits [B, T, V]. A decoder-only model takes src None and reads tgt_in alone."""
        t = tgt_in.shape[1]
        future = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        tgt_mask = future[None, None] | (tgt_in == PAD)[:, None, None, :]
        tied = self.c["tied"]
        x = src_mask = None
        if not self.decoder_only:
            src_mask = (src == PAD)[:, None, None, :]
            x = self.embed_tokens(self.embed if tied else self.src_embed, src)
            for layer in self.encoder.layers:
                x = layer(x, src_mask)
            if self.c["norm_first"]:
                x = self.encoder.norm(x)
        y = self.embed_tokens(self.embed if tied else self.tgt_embed, tgt_in)
        for layer in self.decoder.layers:
            y = layer(y, x, src_mask, tgt_mask)
        if self.c["norm_first"]:
            y = self.decoder.norm(y)
        weight = self.embed.weight if tied else self.generator.weight
        return y @ weight.t()


def save_safetensors(path, tensors, metadata):
    """docs/checkpoint-format.md: u64 header length, JSON header, little-endian F32 data."""
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        data = t.detach().contiguous().float().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def metadata_of(c):
    """TransformerConfig::to_metadata: every value a string; "positions" and "kind" only when
    they differ from what files had before them."""
    keys = ("vocab_size", "d_model", "d_ff", "heads", "encoder_layers", "decoder_layers",
            "max_len", "norm_eps", "norm_first", "tied")
    m = {k: (str(c[k]).lower() if isinstance(c[k], bool) else str(c[k])) for k in keys}
    m.update(pad_id=str(PAD), bos_id=str(BOS), eos_id=str(EOS))
    if c["learned_positions"]:
        m["positions"] = "learned"
    if c["encoder_layers"] == 0:
        m["kind"] = "decoder-only"
    return m


def make(path, label_smoothing=0.1, **overrides):
    c = dict(vocab_size=11, d_model=16, d_ff=32, heads=2, encoder_layers=2, decoder_layers=2,
             max_len=16, norm_eps=1e-5, norm_first=False, tied=True, learned_positions=False)
    c.update(overrides)
    model = Transformer(c)
    if model.decoder_only:
        # One sequence per row, padded on the right; position t predicts token t + 1.
        seq = torch.tensor([[BOS, 5, 6, 7, 8, 9, 3, EOS], [BOS, 10, 4, 3, EOS, PAD, PAD, PAD]])
        src, tgt_in, tgt_out = None, seq[:, :-1], seq[:, 1:]
        inputs = {"input.tokens": tgt_in, "input.targets": tgt_out}
    else:
        src = torch.tensor([[5, 6, 7, 8, 9, EOS], [10, 4, 3, EOS, PAD, PAD]])
        tgt = torch.tensor([[BOS, 5, 6, 7, 8, 9, EOS], [BOS, 10, 4, 3, EOS, PAD, PAD]])
        tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
        inputs = {"input.src": src, "input.tgt_in": tgt_in, "input.tgt_out": tgt_out}
    logits = model(src, tgt_in)
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, c["vocab_size"]), tgt_out.reshape(-1), ignore_index=PAD,
        label_smoothing=label_smoothing)
    loss.backward()
    tensors = {name: p for name, p in model.named_parameters()}
    tensors.update((name, ids.float()) for name, ids in inputs.items())
    tensors["output.log_probs"] = torch.log_softmax(logits, dim=-1)
    tensors["output.loss"] = loss.reshape(())
    for name, p in model.named_parameters():
        tensors["grad." + name] = p.grad
    save_safetensors(path, tensors, metadata_of(c))
    print(f"{path}: loss {loss.item():.6f}, {len(tensors)} tensors")


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/golden")
    out.mkdir(parents=True, exist_ok=True)
    make(out / "transformer_post_norm_tied.safetensors")
    make(out / "transformer_pre_norm_untied.safetensors", norm_first=True, tied=False)
    # The files above draw their weights one after the other from seed 0; each of these starts
    # from a seed of its own, so that adding a file never changes another.
    for seed, name, options in (
            (1, "decoder_only_pre_norm_tied", dict(norm_first=True)),
            (2, "decoder_only_post_norm_untied_learned",
             dict(tied=False, learned_positions=True))):
        torch.manual_seed(seed)
        make(out / f"{name}.safetensors", label_smoothing=0.0, encoder_layers=0, **options)
