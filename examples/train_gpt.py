"""A small GPT trained on Tegula kernels, or on torch's own ops to compare.

The model is a Llama-style decoder: token embedding; per block RMSNorm,
causal self-attention with rotary position embedding, RMSNorm and a SwiGLU
MLP, each around a residual; a final norm (RMSNorm, or LayerNorm with
``--norm layer``), the output projection and softmax cross-entropy.
``--ops tegula`` runs the norms, rotary embedding, causal attention, SwiGLU
gate, and the output projection fused with cross-entropy as tegula.torch.ops
(Tegula kernels forward and backward, custom ops with autograd); ``--ops
torch`` runs the same formulas as eager torch, attention as
``scaled_dot_product_attention``. The other linear layers (matrix products)
and the embedding are torch in both. Both variants
start from the same weights and see the same batches, so their loss curves
should lie on each other. The head dim (dim / heads) must be a power of two
>= 16 for Tegula's attention.

The corpus is synthetic: a random sparse second-order Markov chain over the
vocabulary (each pair of tokens is followed by one of a few tokens), so the
loss falls from log(vocab) towards the chain's entropy within a few hundred
steps.

Run it: `python examples/train_gpt.py [--ops torch tegula] [--steps 200]
[--compile] [--plot losses.png] [--layers 2 --dim 128 --heads 4 ...]`.
Prints step, loss and tokens/s; the defaults train in well under a minute
on the CPU backend (200 steps of 1024 tokens). ``--device cuda`` (the
default where there is a GPU) trains ``GPU_CONFIG``, a 6-layer model of
width 512 on 16K tokens per step in bf16 mixed precision (the forward under
``torch.autocast``), unless options say otherwise. ``--compile`` compiles the model with
``torch.compile(fullgraph=True)`` (its backward with it): the tegula ops stay
in the graph. ``--compile-mode reduce-overhead`` compiles with that mode, which
replays the compiled graphs as CUDA graphs on a GPU (the tegula ops are
capturable).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import math
import os
import time

if __name__ == "__main__":
    # torch's OpenMP threads spin between ops by default and take the cores Tegula's
    # CPU thread pool needs (and the other way round); sleeping at once made both
    # variants 2-5x faster on a shared 2-core machine. Read when torch loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import _cli  # noqa: E402  (the scripts' flag checks)


@dataclasses.dataclass
class Config:
    vocab: int = 32
    context: int = 64
    dim: int = 64
    heads: int = 4
    layers: int = 2
    hidden: int = 172  # the SwiGLU width: about 8/3 of dim, not a power of two
    norm: str = "rms"  # the final norm: "rms" or "layer"
    batch: int = 16
    lr: float = 1e-2
    seed: int = 0
    corpus: int = 20000  # tokens of the synthetic corpus
    # "bfloat16": the forward under torch.autocast(dtype=torch.bfloat16), mixed
    # precision as Transformers are trained on GPUs (weights, optimizer state and
    # the residual stream stay float32; matrix products and attention run in bf16)
    precision: str = "float32"


# On a GPU (the default there): 6 layers of width 512 (head dim 64), 16K
# tokens per step, a vocabulary of 128 whose 16K token pairs the 400K-token
# corpus visits some 25 times each; bf16 mixed precision, as GPU training
# runs (`--precision float32` for the CPU configuration's precision).
GPU_CONFIG = Config(vocab=128, context=512, dim=512, heads=8, layers=6, hidden=1376, batch=32, lr=2e-3,
                    corpus=400_000, precision="bfloat16")


def default_config(device: str) -> Config:
    """The configuration a run on `device` ("cpu", "cuda") starts from."""
    return GPU_CONFIG if torch.device(device).type == "cuda" else Config()


# What one field's flag takes; fields not named are sizes, at least 1. The corpus starts with
# tokens 0 and 1, hence a vocabulary of at least 2.
_FIELD_TYPES = {"vocab": _cli.integer(2), "lr": _cli.number(0), "seed": int}
_FIELD_CHOICES = {"norm": ["rms", "layer"], "precision": ["float32", "bfloat16"]}


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """A flag for every field of Config (train_ddp.py takes them too), None unless given."""
    for field in dataclasses.fields(Config):
        default = getattr(Config(), field.name)
        choices = _FIELD_CHOICES.get(field.name)
        parser.add_argument(f"--{field.name}", type=str if choices else _FIELD_TYPES.get(field.name, _cli.integer(1)),
                            default=None, choices=choices,
                            help=f"default {default} on the CPU, {getattr(GPU_CONFIG, field.name)} on a GPU")


def config_problem(config: Config, ops_names) -> str | None:
    """Why `config` cannot train with the ops named, or None: the rules that tie fields together
    (each field alone is checked by its flag; the values may be defaults)."""
    if config.dim % config.heads:
        return f"--dim {config.dim} must be a multiple of --heads {config.heads}"
    head_dim = config.dim // config.heads
    if "tegula" in ops_names and (head_dim < 16 or head_dim & (head_dim - 1)):
        return (f"--dim {config.dim} / --heads {config.heads} is a head dim of {head_dim}; --ops tegula's attention "
                "needs a power of two >= 16")
    if head_dim % 2:
        return (f"--dim {config.dim} / --heads {config.heads} is a head dim of {head_dim}; the rotary embedding "
                "needs an even one")
    if config.corpus < config.context + 2:
        return (f"--corpus {config.corpus} must be at least --context {config.context} + 2: a batch draws windows "
                "of context + 1 tokens")
    return None


def _device(text: str) -> str:
    """--device: cpu, or cuda / cuda:N naming a GPU torch sees."""
    try:
        device = torch.device(text)
    except RuntimeError:
        device = None
    if device is None or device.type not in ("cpu", "cuda"):
        raise argparse.ArgumentTypeError(f"expected cpu, cuda or cuda:N, got {text!r}")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise argparse.ArgumentTypeError(f"expected cpu or one of the {torch.cuda.device_count()} CUDA GPU(s) "
                                         f"torch sees, got {text!r}")
    return text


# --- the ops, two ways ------------------------------------------------------------------------------


class TorchOps:
    """The formulas as eager torch operations."""

    @staticmethod
    def rms_norm(x, weight, eps=1e-6):
        return x * torch.rsqrt(x.square().mean(-1, keepdim=True) + eps) * weight

    @staticmethod
    def layer_norm(x, weight, bias, eps=1e-5):
        return F.layer_norm(x, x.shape[-1:], weight, bias, eps)

    @staticmethod
    def add_rms_norm(x, residual, weight, eps=1e-6):
        h = x + residual
        return h, TorchOps.rms_norm(h, weight, eps)

    @staticmethod
    def swiglu(a, b):
        return F.silu(a) * b

    @staticmethod
    def silu_and_mul(x):
        return TorchOps.swiglu(*x.chunk(2, dim=-1))

    @staticmethod
    def rotary_embedding(x, cos, sin):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        c, s = cos[:, None, :], sin[:, None, :]
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)

    @staticmethod
    def rotary_qkv(qkv, cos, sin):
        q, k, v = qkv.unbind(-3)
        return TorchOps.rotary_embedding(q, cos, sin), TorchOps.rotary_embedding(k, cos, sin), v

    @staticmethod
    def linear_cross_entropy(x, weight, targets):
        return F.cross_entropy(F.linear(x, weight), targets)

    @staticmethod
    def attention(q, k, v, causal):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    @staticmethod
    def rotary_attention(qkv, cos, sin, causal):
        q, k, v = TorchOps.rotary_qkv(qkv, cos, sin)
        return TorchOps.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal).transpose(1, 2)


def ops_named(name: str):
    if name == "torch":
        return TorchOps
    from tegula.torch import ops  # imported on demand: `--ops torch` runs without Tegula
    return ops


# --- the model ----------------------------------------------------------------------------------------


class Block(torch.nn.Module):
    def __init__(self, config: Config, ops):
        super().__init__()
        self.ops, self.heads = ops, config.heads
        self.attn_norm = torch.nn.Parameter(torch.ones(config.dim))
        self.qkv = torch.nn.Linear(config.dim, 3 * config.dim, bias=False)
        self.proj = torch.nn.Linear(config.dim, config.dim, bias=False)
        self.mlp_norm = torch.nn.Parameter(torch.ones(config.dim))
        self.gate_up = torch.nn.Linear(config.dim, 2 * config.hidden, bias=False)
        self.down = torch.nn.Linear(config.hidden, config.dim, bias=False)

    def forward(self, x, pending, cos, sin):
        """(the residual stream, this block's output not yet added to it). Each residual addition is
        done by the norm that reads its result (add_rms_norm), one pass over memory instead of two."""
        B, T, C = x.shape
        if pending is None:
            normed = self.ops.rms_norm(x, self.attn_norm)
        else:
            x, normed = self.ops.add_rms_norm(x, pending, self.attn_norm)
        qkv = self.qkv(normed).view(B, T, 3, self.heads, C // self.heads)
        y = self.ops.rotary_attention(qkv, cos, sin, causal=True)  # [B, T, heads, head dim]
        x, normed = self.ops.add_rms_norm(x, self.proj(y.reshape(B, T, C)), self.mlp_norm)
        return x, self.down(self.ops.silu_and_mul(self.gate_up(normed)))


class GPT(torch.nn.Module):
    def __init__(self, config: Config, ops):
        super().__init__()
        self.config, self.ops = config, ops
        self.embed = torch.nn.Embedding(config.vocab, config.dim)
        self.blocks = torch.nn.ModuleList(Block(config, ops) for _ in range(config.layers))
        self.norm_weight = torch.nn.Parameter(torch.ones(config.dim))
        self.norm_bias = torch.nn.Parameter(torch.zeros(config.dim)) if config.norm == "layer" else None
        self.head = torch.nn.Linear(config.dim, config.vocab, bias=False)
        half = config.dim // config.heads // 2
        angles = torch.outer(torch.arange(config.context, dtype=torch.float64),
                             10000.0 ** (-torch.arange(half, dtype=torch.float64) / half))
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def forward(self, tokens, targets):
        x, pending = self.embed(tokens), None
        cos, sin = self.cos[:tokens.shape[1]], self.sin[:tokens.shape[1]]
        for block in self.blocks:
            x, pending = block(x, pending, cos, sin)
        if self.norm_bias is None:
            _, x = self.ops.add_rms_norm(x, pending, self.norm_weight)
        else:
            x = self.ops.layer_norm(x + pending, self.norm_weight, self.norm_bias)
        # The output projection and the loss in one op: Tegula's never holds all the logits.
        return self.ops.linear_cross_entropy(x.reshape(-1, x.shape[-1]), self.head.weight, targets.reshape(-1))


# --- the corpus and the loop ---------------------------------------------------------------------------


def markov_corpus(vocab: int, length: int, seed: int = 1234, choices: int = 3) -> torch.Tensor:
    """`length` tokens of a random second-order Markov chain: each pair of
    tokens is followed by one of `choices` tokens with random weights."""
    gen = torch.Generator().manual_seed(seed)
    successors = torch.randint(0, vocab, (vocab, vocab, choices), generator=gen).tolist()
    weights = torch.rand(vocab, vocab, choices, generator=gen) + 0.1
    cumulative = (weights / weights.sum(-1, keepdim=True)).cumsum(-1).tolist()
    draws = torch.rand(length, generator=gen).tolist()
    # Python lists: the walk is sequential, and indexing tensors one element at a time is slow.
    tokens = [0, 1]
    for i in range(length - 2):
        a, b = tokens[-2], tokens[-1]
        bounds, pick = cumulative[a][b], 0
        while pick < choices - 1 and draws[i] >= bounds[pick]:
            pick += 1
        tokens.append(successors[a][b][pick])
    return torch.tensor(tokens)


def batches(corpus: torch.Tensor, config: Config, seed: int):
    """Endless (tokens, targets) batches of random windows of the corpus."""
    gen = torch.Generator().manual_seed(seed)
    while True:
        starts = torch.randint(0, len(corpus) - config.context - 1, (config.batch,), generator=gen)
        window = torch.stack([corpus[s:s + config.context + 1] for s in starts.tolist()])
        yield window[:, :-1], window[:, 1:]


def forward_precision(config: Config, device: str):
    """The context the forward runs in: bf16 autocast for ``precision="bfloat16"``, else none."""
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=config.precision == "bfloat16")


def make_model(config: Config, ops_name: str) -> GPT:
    torch.manual_seed(config.seed)  # the same initial weights for every variant
    return GPT(config, ops_named(ops_name))


def make_optimizer(model: torch.nn.Module, config: Config) -> torch.optim.Optimizer:
    """AdamW; on a GPU its fused form, one kernel for all parameters (the foreach form launches a
    dozen kernels per step and took more host time than some layers)."""
    fused = next(model.parameters()).is_cuda
    return torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0, fused=fused)


def train(config: Config, ops_name: str, steps: int, compile: bool = False, log_every: int = 0,
          corpus: torch.Tensor = None, device: str = "cpu", timing: dict = None, compile_mode: str = None) -> list:
    """Trains a fresh model for `steps` steps on `device` and returns the loss of each.
    `timing`, when given, receives ``tokens_per_s``: the rate after the first step
    (which includes compiling). `compile_mode` is torch.compile's ``mode`` (e.g.
    "reduce-overhead": the compiled graphs replayed as CUDA graphs)."""
    corpus = markov_corpus(config.vocab, config.corpus) if corpus is None else corpus
    model = make_model(config, ops_name).to(device)
    optimizer = make_optimizer(model, config)

    # AOTAutograd compiles the backward along with the forward; backward() itself stays outside.
    forward = torch.compile(model, fullgraph=True, mode=compile_mode) if compile else model
    autocast = forward_precision(config, device)
    # tokens/s is measured since the previous line printed (step 0's includes compiling).
    losses, tokens_seen, since = [], 0, time.perf_counter()
    after_first = None  # (time, tokens) when the first step ended
    for step, (tokens, targets) in zip(range(steps), batches(corpus, config, config.seed)):
        tokens, targets = tokens.to(device, non_blocking=True), targets.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = forward(tokens, targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        tokens_seen += tokens.numel()
        if after_first is None:
            after_first = (time.perf_counter(), 0)
        else:
            after_first = (after_first[0], after_first[1] + tokens.numel())
        if log_every and (step % log_every == 0 or step == steps - 1):
            rate = tokens_seen / (time.perf_counter() - since)
            print(f"{ops_name:>6} step {step:4d}  loss {losses[-1]:.4f}  {rate:8.0f} tokens/s", flush=True)
            tokens_seen, since = 0, time.perf_counter()
    if timing is not None and after_first is not None and after_first[1]:
        timing["tokens_per_s"] = after_first[1] / (time.perf_counter() - after_first[0])
    return losses


def graph_breaks(config: Config, ops_name: str, device: str = "cpu") -> int:
    """How many graph breaks torch._dynamo.explain finds in the model's forward."""
    import torch._dynamo
    model = make_model(config, ops_name).to(device)
    tokens, targets = next(batches(markov_corpus(config.vocab, 1000), config, 0))
    return torch._dynamo.explain(model)(tokens.to(device), targets.to(device)).graph_break_count


def plot(curves: dict, path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, losses in curves.items():
        ax.plot(range(len(losses)), losses, label=f"--ops {name}", linewidth=1.2)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", nargs="+", choices=["torch", "tegula"], default=["torch", "tegula"])
    parser.add_argument("--steps", type=_cli.integer(1), default=200)
    parser.add_argument("--compile", action="store_true", help="torch.compile(fullgraph=True) the model")
    parser.add_argument("--compile-mode", choices=["default", "reduce-overhead", "max-autotune",
                                                   "max-autotune-no-cudagraphs"],
                        help="torch.compile's mode (implies --compile); reduce-overhead replays CUDA graphs")
    parser.add_argument("--device", type=_device, default="cuda" if torch.cuda.is_available() else "cpu",
                        help="where to train (default: cuda when there is a GPU); the model's defaults "
                             "depend on it (GPU_CONFIG on cuda)")
    parser.add_argument("--plot", metavar="PNG", type=_cli.output_file(),
                        help="write the loss curves of the variants run")
    parser.add_argument("--json", metavar="PATH", type=_cli.output_file(),
                        help="write the configuration, the curves and tokens/s")
    parser.add_argument("--log-every", type=_cli.integer(0), default=10)
    add_config_options(parser)
    args = parser.parse_args()
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        parser.error("--plot needs matplotlib, which is not installed")
    args.compile = args.compile or args.compile_mode is not None
    given = {field.name: getattr(args, field.name) for field in dataclasses.fields(Config)
             if getattr(args, field.name) is not None}
    config = dataclasses.replace(default_config(args.device), **given)
    why = config_problem(config, args.ops)
    if why:
        parser.error(why)
    compiled = f", compiled ({args.compile_mode or 'default'})" if args.compile else ""
    print(f"{config}, {args.steps} steps on {args.device}{compiled}; "
          f"loss starts near log(vocab) = {math.log(config.vocab):.2f}")
    corpus = markov_corpus(config.vocab, config.corpus)
    curves, rates = {}, {}
    for name in args.ops:
        timing = {}
        curves[name] = train(config, name, args.steps, args.compile, args.log_every, corpus, args.device, timing,
                             args.compile_mode)
        rates[name] = timing.get("tokens_per_s")
        if rates[name]:
            print(f"{name:>6}: {rates[name]:.0f} tokens/s after the first step")
    final = {name: sum(losses[-10:]) / len(losses[-10:]) for name, losses in curves.items()}
    if len(curves) > 1:
        print("mean loss of the last 10 steps: " + ", ".join(f"{n} {v:.4f}" for n, v in final.items()))
        if "torch" in final and "tegula" in final:
            print(f"tegula's final loss differs from torch's by {abs(final['tegula'] / final['torch'] - 1):.2%}")
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump({"config": dataclasses.asdict(config), "device": args.device, "steps": args.steps,
                       "compile": args.compile, "compile_mode": args.compile_mode, "tokens_per_s": rates,
                       "final_mean_loss": final, "losses": curves}, f, indent=1)
        print(f"wrote {args.json}")
    if args.plot:
        plot(curves, args.plot, f"{config.layers}-layer GPT, dim {config.dim}, synthetic Markov corpus"
                                f"{' (compiled)' if args.compile else ''}")
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
