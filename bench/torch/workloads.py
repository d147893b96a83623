#!/usr/bin/python3
"""The benchmark workloads of bench/README.md written in PyTorch, the reference our programs in
bench/ are measured against. Each workload prints the same JSON lines as its C++ twin:

  copy-tiny, copy-base   bench/copy.cpp          base-step      bench/base_step.cpp
  decode                 bench/decode.cpp        attn-scaling   bench/attn_scaling.cpp

The model is the paper's encoder-decoder built from torch.nn.TransformerEncoderLayer and
TransformerDecoderLayer (post-norm: norm_first=False, ReLU, batch_first), with embeddings
scaled by sqrt(d_model), sinusoidal positions and dropout on their sum, a generator without
bias, and the same initialisation as ours (Xavier uniform per [out, in] block, zero biases),
so that both sides count the same parameters and train from the same kind of start.

Run with Debian's interpreter, the only one that imports Debian's python3-torch:
  /usr/bin/python3 bench/torch/workloads.py copy-tiny [--smoke | --probe] [--threads 2]
                                            [--interop-threads N]

The threading setup comes from the flags (torch's intra-op and inter-op threads) and from the
environment, which the libraries read when they load: OPENBLAS_NUM_THREADS (OpenBLAS, Debian's
BLAS for torch, keeps its own pthreads pool), OMP_WAIT_POLICY (torch's OpenMP threads: PASSIVE
sleeps at once, ACTIVE spins, unset spins a little then sleeps), OPENBLAS_CORETYPE (which
kernels OpenBLAS runs). Nothing here sets them: bench/compare.py probes the candidates and runs
each workload in the fastest. Every JSON line reports the setup that was in force.
"""

import argparse
import ctypes
import json
import math
import os
import resource
import sys
import time

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError:
    sys.exit("workloads.py: cannot import torch; install Debian's python3-torch and run this "
             "with /usr/bin/python3")

PAD, BOS = 0, 1


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def median(values):
    return sorted(values)[len(values) // 2]


def openblas():
    """The OpenBLAS that torch loaded (Debian's libblas.so.3 is OpenBLAS), or None."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib
    except (OSError, AttributeError):
        return None


def setup():
    """The threading and BLAS setup in force, as reported by the libraries themselves."""
    blas = openblas()
    return dict(torch_threads=torch.get_num_threads(),
                interop_threads=torch.get_num_interop_threads(),
                blas_threads=blas.openblas_get_num_threads() if blas else None,
                blas_core=blas.openblas_get_corename().decode() if blas else None,
                omp_wait_policy=os.environ.get("OMP_WAIT_POLICY", "unset"))


CONFIG = {}  # filled by main() before any workload runs, added to every JSON line


def emit(**fields):
    print(json.dumps(dict(fields, **CONFIG), separators=(",", ":")), flush=True)


def check_blas():
    """Stops unless float32 products agree with a float64 sum that does not use BLAS. OpenBLAS
    chooses its kernels from the CPU (or OPENBLAS_CORETYPE), and some releases have computed
    wrong products with some kernels on some CPUs: a fast wrong setup must not win a probe.
    The shapes cover the products a Linear layer and attention make: A B, A B^T, A^T B, and a
    batched one, with sizes that are not multiples of any kernel's tile."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(5, 37, 129, generator=gen)
    b = torch.randn(5, 129, 65, generator=gen)
    exact = (a.double()[..., :, :, None] * b.double()[..., None, :, :]).sum(-2)
    products = {
        "A B": (a[0] @ b[0], exact[0]),
        "A B^T": (F.linear(a[0], b[0].T.contiguous()), exact[0]),
        "A^T B": (a[0].T.contiguous().T @ b[0], exact[0]),
        "batched": (torch.bmm(a, b), exact),
    }
    for name, (got, want) in products.items():
        error = ((got.double() - want).abs().max() / want.abs().max()).item()
        if not error < 1e-5:
            sys.exit(f"workloads.py: BLAS product {name} is wrong (relative error {error:.1e}) "
                     f"with {setup()}; this OpenBLAS setup cannot be benchmarked")


def noam_lr(step, d_model, warmup, factor=1.0):
    """The rate of §5.3, eq. 3; step counts from 1."""
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def init_like_ours(module):
    """Xavier uniform on every [out, in] matrix (each of q, k, v on its own block, as ours
    holds them as three Linears), zeros on biases, LayerNorm at (1, 0)."""
    for name, p in module.named_parameters():
        if "norm" in name:
            continue
        if p.dim() == 1:
            nn.init.zeros_(p)
        elif name.endswith("in_proj_weight"):
            for block in p.data.chunk(3, dim=0):
                nn.init.xavier_uniform_(block)
        elif p.dim() == 3:  # Conv1d [O, C, k]; ours is [O, k*C], so the fans are O and k*C
            nn.init.xavier_uniform_(p.data.view(p.shape[0], -1))
        elif name.startswith("weight_") and p.shape[0] % 3 == 0 and isinstance(module, nn.GRU):
            for block in p.data.chunk(3, dim=0):
                nn.init.xavier_uniform_(block)
        else:
            nn.init.xavier_uniform_(p)


class Transformer(nn.Module):
    def __init__(self, vocab, d_model, d_ff, heads, layers, dropout, tied, max_len=64):
        super().__init__()
        self.d_model, self.vocab = d_model, vocab
        kw = dict(d_model=d_model, nhead=heads, dim_feedforward=d_ff, dropout=dropout,
                  activation="relu", batch_first=True, norm_first=False)
        # Post-norm stacks have no final LayerNorm (ours adds one only with norm_first).
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(**kw), layers,
                                             enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(**kw), layers)
        if tied:
            self.embed = nn.Embedding(vocab, d_model)
            self.src_embed = self.tgt_embed = self.embed
            self.generator = None
        else:
            self.src_embed = nn.Embedding(vocab, d_model)
            self.tgt_embed = nn.Embedding(vocab, d_model)
            self.generator = nn.Linear(d_model, vocab, bias=False)
        self.dropout = nn.Dropout(dropout)
        position = torch.arange(max_len, dtype=torch.float32)[:, None]
        rate = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32)
                         * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * rate)
        pe[:, 1::2] = torch.cos(position * rate)
        self.register_buffer("pe", pe)
        init_like_ours(self)

    def embed_tokens(self, table, ids, offset=0):
        x = table(ids) * math.sqrt(self.d_model) + self.pe[offset:offset + ids.shape[1]]
        return self.dropout(x)

    def encode(self, src):
        src_pad = src == PAD
        return self.encoder(self.embed_tokens(self.src_embed, src),
                            src_key_padding_mask=src_pad), src_pad

    def decode(self, tgt_in, memory, src_pad):
        t = tgt_in.shape[1]
        look_ahead = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        return self.decoder(self.embed_tokens(self.tgt_embed, tgt_in), memory,
                            tgt_mask=look_ahead, tgt_key_padding_mask=tgt_in == PAD,
                            memory_key_padding_mask=src_pad)

    def generate(self, y):
        if self.generator is None:
            return F.linear(y, self.embed.weight)
        return self.generator(y)

    def forward(self, src, tgt_in):
        memory, src_pad = self.encode(src)
        return self.generate(self.decode(tgt_in, memory, src_pad))


def param_count(module):
    return sum(p.numel() for p in module.parameters())  # shared (tied) tensors count once


def train_step(model, opt, src, tgt_in, tgt_out, step, warmup):
    """forward + backward + Adam; returns (seconds, loss)."""
    start = time.perf_counter()
    for group in opt.param_groups:
        group["lr"] = noam_lr(step, model.d_model, warmup)
    opt.zero_grad(set_to_none=True)  # first, as on our side: no old gradients beside activations
    logits = model(src, tgt_in)
    loss = F.cross_entropy(logits.reshape(-1, model.vocab), tgt_out.reshape(-1),
                           ignore_index=PAD)
    loss.backward()
    opt.step()
    seconds = time.perf_counter() - start
    value = loss.item()
    if not math.isfinite(value):
        sys.exit(f"workloads.py: loss is {value} at step {step}")
    return seconds, value


def adam(model):
    return torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)


# ---- copy-tiny, copy-base --------------------------------------------------------------

COPY_VOCAB, COPY_LEN = 11, 10


def copy_batch(batch, gen):
    """The Annotated Transformer's copy data: ids from [1, 11), position 0 = 1, src = tgt."""
    data = torch.randint(1, COPY_VOCAB, (batch, COPY_LEN), generator=gen)
    data[:, 0] = BOS
    return data, data[:, :-1], data[:, 1:]


@torch.no_grad()
def exact_copies(model, data):
    """Greedy decoding from the start id, L - 1 steps, recomputing the prefix each step."""
    model.eval()
    memory, src_pad = model.encode(data)
    ys = torch.full((data.shape[0], 1), BOS, dtype=torch.long)
    for _ in range(COPY_LEN - 1):
        logits = model.generate(model.decode(ys, memory, src_pad)[:, -1])
        ys = torch.cat([ys, logits.argmax(dim=-1, keepdim=True)], dim=1)
    model.train()
    return int((ys[:, 1:] == data[:, 1:]).all(dim=1).sum())


def run_copy(name, args):
    tiny = name == "copy-tiny"
    if tiny:
        model = Transformer(COPY_VOCAB, 64, 256, 4, 2, 0.0, tied=False)
        batch, warmup_steps, timed_steps = 64, 5, None
    else:
        model = Transformer(COPY_VOCAB, 512, 2048, 8, 2, 0.1, tied=False)
        batch, warmup_steps, timed_steps = 80, 3, 10
    schedule_warmup = 400
    max_steps = args.max_steps
    if args.smoke:
        max_steps = 25
        warmup_steps, timed_steps = (5, None) if tiny else (0, 1)
        batch = batch if tiny else 8
    elif args.probe:  # the full run's batch and model, fewer steps and no copy checks
        max_steps = 35
        warmup_steps, timed_steps = (5, None) if tiny else (1, 3)
    last_step = max_steps if tiny else warmup_steps + timed_steps
    opt = adam(model)
    data_gen = torch.Generator().manual_seed(args.seed + 1)
    check_gen = torch.Generator().manual_seed(args.seed + 2)

    step_seconds, trained, steps_to_100, seconds_to_100 = [], 0.0, None, None
    tokens = batch * (COPY_LEN - 1)
    for step in range(1, last_step + 1):
        src, tgt_in, tgt_out = copy_batch(batch, data_gen)
        seconds, _ = train_step(model, opt, src, tgt_in, tgt_out, step, schedule_warmup)
        trained += seconds
        if step > warmup_steps:
            step_seconds.append(seconds)
        if tiny and step % 20 == 0 and not args.probe:  # outside the timed step, as in copy.cpp
            fresh, _, _ = copy_batch(100, check_gen)
            if exact_copies(model, fresh) == 100:
                steps_to_100, seconds_to_100 = step, round(trained, 2)
                break
    ms = 1e3 * median(step_seconds)
    fields = dict(workload=name, ms_per_step=round(ms, 2), tokens_per_s=round(tokens / ms * 1e3))
    if tiny:
        fields.update(steps_to_100=steps_to_100, seconds_to_100=seconds_to_100)
    fields.update(peak_rss_mb=round(peak_rss_mb(), 1), params=param_count(model),
                  threads=args.threads)
    emit(**fields)


# ---- base-step, decode -------------------------------------------------------------------

BASE_VOCAB = 8000


def base_model():
    return Transformer(BASE_VOCAB, 512, 2048, 8, 6, 0.1, tied=True)


def random_ids(rows, cols, gen):
    return torch.randint(4, BASE_VOCAB, (rows, cols), generator=gen)  # no special ids


def run_base_step(args):
    batch, length, warmup_steps, timed_steps = 16, 32, 2, args.steps
    if args.smoke:
        batch, length, warmup_steps, timed_steps = 2, 8, 0, 1
    elif args.probe:
        warmup_steps, timed_steps = 1, 2
    model = base_model()
    opt = adam(model)
    gen = torch.Generator().manual_seed(args.seed + 1)
    step_seconds = []
    for step in range(1, warmup_steps + timed_steps + 1):
        src, tgt_in, tgt_out = (random_ids(batch, length, gen) for _ in range(3))
        seconds, _ = train_step(model, opt, src, tgt_in, tgt_out, step, 4000)
        if step > warmup_steps:
            step_seconds.append(seconds)
    ms = 1e3 * median(step_seconds)
    emit(workload="base-step", ms_per_step=round(ms, 1),
         tokens_per_s=round(batch * length / ms * 1e3), peak_rss_mb=round(peak_rss_mb(), 1),
         params=param_count(model), threads=args.threads)


@torch.inference_mode()  # no_grad, and no version counters or view tracking either: faster
def greedy_recompute(model, src, length):
    """Greedy decoding that feeds the whole prefix to the decoder at every step."""
    memory, src_pad = model.encode(src)
    ys = torch.full((src.shape[0], 1), BOS, dtype=torch.long)
    for _ in range(length):
        logits = model.generate(model.decode(ys, memory, src_pad)[:, -1])
        ys = torch.cat([ys, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ys[:, 1:]


def split_heads(x, heads):
    """[B, T, D] -> [B, heads, T, D / heads]"""
    return x.view(x.shape[0], x.shape[1], heads, -1).transpose(1, 2)


def attend(q, k, v, out_proj, key_pad=None):
    """Scaled dot-product attention of q [B, h, Tq, dh] over k, v [B, h, Tk, dh], heads joined
    and projected by out_proj; key_pad [B, Tk] is True where a key is padding."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if key_pad is not None:
        scores = scores.masked_fill(key_pad[:, None, None, :], float("-inf"))
    out = scores.softmax(dim=-1) @ v
    return out_proj(out.transpose(1, 2).reshape(q.shape[0], q.shape[2], -1))


@torch.inference_mode()
def greedy_cached(model, src, length):
    """Greedy decoding with a key/value cache, as fairseq's incremental decoding does it: each
    step feeds only the newest token through the decoder; every self-attention keeps the keys
    and values of the tokens before it, and every cross-attention projects the source's once.
    torch.nn.TransformerDecoderLayer has no cache, so this runs its submodules, with its
    weights, in its order (post-norm)."""
    memory, src_pad = model.encode(src)
    d, layers = model.d_model, model.decoder.layers
    heads = layers[0].self_attn.num_heads
    cross = []  # per layer: the source's keys and values
    for layer in layers:
        w, b = layer.multihead_attn.in_proj_weight, layer.multihead_attn.in_proj_bias
        cross.append((split_heads(F.linear(memory, w[d:2 * d], b[d:2 * d]), heads),
                      split_heads(F.linear(memory, w[2 * d:], b[2 * d:]), heads)))
    cache = [None] * len(layers)  # per layer: the keys and values of the tokens so far
    ys = torch.full((src.shape[0], 1), BOS, dtype=torch.long)
    for t in range(length):
        x = model.embed_tokens(model.tgt_embed, ys[:, -1:], offset=t)
        for i, layer in enumerate(layers):
            a = layer.self_attn
            q, k, v = (split_heads(part, heads)
                       for part in F.linear(x, a.in_proj_weight, a.in_proj_bias).chunk(3, -1))
            if cache[i] is not None:
                k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
            cache[i] = (k, v)
            x = layer.norm1(x + layer.dropout1(attend(q, k, v, a.out_proj)))
            c = layer.multihead_attn
            q = split_heads(F.linear(x, c.in_proj_weight[:d], c.in_proj_bias[:d]), heads)
            x = layer.norm2(x + layer.dropout2(attend(q, *cross[i], c.out_proj, src_pad)))
            x = layer.norm3(x + layer._ff_block(x))
        logits = model.generate(x[:, -1])
        ys = torch.cat([ys, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ys[:, 1:]


def run_decode(args):
    batch, length, warmup_runs, timed_runs = 16, 32, 1, 3
    if args.smoke:
        batch, length, warmup_runs, timed_runs = 2, 4, 0, 1
    elif args.probe:  # one shorter decoding: recomputing, the cost grows with length squared
        length, warmup_runs, timed_runs = 16, 0, 1
    model = base_model().eval()
    src = random_ids(batch, length, torch.Generator().manual_seed(args.seed + 1))
    cached, recomputed = greedy_cached(model, src, length), greedy_recompute(model, src, length)
    if not torch.equal(cached, recomputed):
        sys.exit("workloads.py: decoding with the cache gives other tokens than without it")
    # The cache first: the row bench/compare.py ranks a probe by and compares with ours.
    for cache, decode in ((True, greedy_cached), (False, greedy_recompute)):
        seconds = []
        for run in range(warmup_runs + timed_runs):
            start = time.perf_counter()
            out = decode(model, src, length)
            if run >= warmup_runs:
                seconds.append(time.perf_counter() - start)
        assert out.shape == (batch, length)
        s = median(seconds)
        emit(workload="decode", cache=cache, ms_per_step=round(1e3 * s, 1),
             tokens_per_s=round(batch * length / s), runs=timed_runs,
             peak_rss_mb=round(peak_rss_mb(), 1), params=param_count(model),
             threads=args.threads)


# ---- attn-scaling ------------------------------------------------------------------------

def run_attn_scaling(args):
    d = 512
    attention = nn.MultiheadAttention(d, 8, batch_first=True)
    gru = nn.GRU(d, d, batch_first=True)
    conv = nn.Conv1d(d, d, kernel_size=3, padding=1)
    for module in (attention, gru, conv):
        init_like_ours(module)
    # Each layer gets its input in its own preferred layout: Conv1d wants [B, D, N].
    layers = [
        ("self-attention", attention, lambda x: attention(x, x, x, need_weights=False)[0], False),
        ("recurrent", gru, lambda x: gru(x)[0], False),
        ("convolution", conv, conv, True),
    ]
    max_n = 128 if args.smoke else 512 if args.probe else args.max_n
    n = 64
    while n <= max_n:
        x = torch.randn(1, n, d)
        for name, module, forward, channels_first in layers:
            inp = x.transpose(1, 2).contiguous() if channels_first else x

            def once():
                module.zero_grad(set_to_none=True)
                start = time.perf_counter()
                forward(inp).sum().backward()
                return time.perf_counter() - start

            first = once()
            runs = 1 if args.smoke else 3 if args.probe else min(max(int(0.3 / first), 3), 50)
            ms = 1e3 * median([once() for _ in range(runs)])
            emit(workload="attn-scaling", layer=name, n=n, ms_per_step=round(ms, 3),
                 threads=args.threads, params=param_count(module))
        n *= 2


WORKLOADS = {
    "copy-tiny": lambda a: run_copy("copy-tiny", a),
    "copy-base": lambda a: run_copy("copy-base", a),
    "base-step": run_base_step,
    "decode": run_decode,
    "attn-scaling": run_attn_scaling,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--smoke", action="store_true", help="a few tiny steps, to check it runs")
    parser.add_argument("--probe", action="store_true",
                        help="the full run's sizes with fewer steps: compare.py times each "
                             "candidate setup this way to choose the fastest")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    parser.add_argument("--interop-threads", type=int, default=0,
                        help="torch.set_num_interop_threads (default: torch's own choice; "
                             "eager training and decoding do no inter-op work)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=3000, help="copy-tiny gives up after")
    parser.add_argument("--steps", type=int, default=5, help="base-step: timed steps")
    parser.add_argument("--max-n", type=int, default=2048, help="attn-scaling: longest n")
    args = parser.parse_args()
    if args.interop_threads > 0:  # only possible before any inter-op work has started
        torch.set_num_interop_threads(args.interop_threads)
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # subnormals make GEMM ~100x slower (autograd/kernels/cpu.h)
    check_blas()
    CONFIG.update(setup())
    torch.manual_seed(args.seed)
    WORKLOADS[args.workload](args)


if __name__ == "__main__":
    main()
