"""The GPT of train_gpt.py trained data-parallel, one process per device.

The model, its Tegula ops (``--ops tegula``, the default) or torch's
(``--ops torch``), the optimizer and the synthetic corpus are train_gpt.py's;
the model is wrapped in ``torch.nn.parallel.DistributedDataParallel``. Every
process builds the same model from the same seed (DDP also broadcasts rank
0's weights) and draws the same global batch of ``--batch`` sequences each
step, exactly as train_gpt.py's ``batches()`` does; rank r trains on rows
[r*B/W, (r+1)*B/W) of it, W being the number of processes (the batch must
divide among them). DDP averages the gradients, so every rank takes the
step one process takes on the whole batch, up to rounding. The loss printed
and written per step is the mean over all ranks (an all_reduce of each
rank's mean loss), so the curves of runs on different numbers of devices
lie on each other.

Run it on two GPUs (NCCL, one process on each of cuda:0 and cuda:1):

    torchrun --standalone --nproc-per-node 2 examples/train_ddp.py --json ddp2.json

and the one-process reference on the same global batch, which also tells
how far the two runs' losses lie apart and their tokens/s:

    python examples/train_ddp.py --json ddp1.json
    torchrun --standalone --nproc-per-node 2 examples/train_ddp.py --compare ddp1.json

Without torchrun's RANK, WORLD_SIZE and LOCAL_RANK the script is one process
that trains the model without DDP. ``--device cpu`` (the default without a
GPU) runs every process on the CPU with the gloo backend and the CPU
configuration of train_gpt.py; ``--device cuda`` trains ``GPU_CONFIG`` on
``cuda:LOCAL_RANK``. ``--compare PATH`` reads the JSON of another run of the
same configuration (``--json``) and exits with status 1 when the final losses
(the mean of the last 10 steps) differ by more than 1%. Only rank 0 prints
and writes files; tokens/s counts the tokens of all ranks, measured on rank 0
after the first step.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import inspect
import json
import math
import os
import sys
import time

if __name__ == "__main__":
    # As in train_gpt.py: torch's OpenMP threads would spin between ops on the cores Tegula's
    # CPU thread pool needs. Read when torch loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import _cli  # noqa: E402  (the scripts' flag checks)
import train_gpt  # noqa: E402

# The most the final losses of two runs (the mean of the last 10 steps) may differ by under --compare.
LOSS_TOLERANCE = 0.01


# The rotary tables are buffers every rank computes alike: DDP need not broadcast them before each
# forward. Newer torch names the option forward_sync_buffers (and warns about broadcast_buffers).
_NO_BUFFER_SYNC = ({"forward_sync_buffers": False}
                   if "forward_sync_buffers" in inspect.signature(torch.nn.parallel.DistributedDataParallel).parameters
                   else {"broadcast_buffers": False})


@dataclasses.dataclass
class World:
    """This process's place among the processes of the run (torchrun's environment variables)."""
    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int = 1  # processes on this machine
    launched: bool = False  # started by torchrun: a process group and DDP even for one process


def world_from_env(env=os.environ) -> World:
    if "RANK" not in env or "WORLD_SIZE" not in env:
        return World()
    size = int(env["WORLD_SIZE"])
    return World(rank=int(env["RANK"]), size=size, local_rank=int(env.get("LOCAL_RANK", 0)),
                 local_size=int(env.get("LOCAL_WORLD_SIZE", size)), launched=True)


def problem(config: train_gpt.Config, world: World, device: str) -> str | None:
    """Why the run cannot start, or None. The same answer on every rank of one machine, so they
    all stop before any of them waits for the others."""
    if config.batch % world.size:
        return (f"--batch {config.batch} does not divide among {world.size} processes: the global batch "
                f"must be a multiple of the number of processes")
    if torch.device(device).type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count < world.local_size:
            return (f"--device cuda with {world.local_size} process(es) on this machine needs {world.local_size} "
                    f"GPU(s), one per process; torch sees {count}")
    return None


def shard(rows: torch.Tensor, world: World) -> torch.Tensor:
    """Rank r's rows of the global batch: [r*B/W, (r+1)*B/W)."""
    per_rank = rows.shape[0] // world.size
    return rows[world.rank * per_rank:(world.rank + 1) * per_rank]


def train(config: train_gpt.Config, ops_name: str, steps: int, world: World, device: str,
          log_every: int = 0, corpus: torch.Tensor = None) -> tuple[list, float | None]:
    """Trains a fresh model for `steps` steps on this rank's part of each global batch. Returns
    the global loss of each step (the same list on every rank) and tokens/s of all ranks after
    the first step (None with a single step)."""
    log = print if world.rank == 0 else (lambda *args, **kwargs: None)
    corpus = train_gpt.markov_corpus(config.vocab, config.corpus) if corpus is None else corpus
    model = train_gpt.make_model(config, ops_name).to(device)
    optimizer = train_gpt.make_optimizer(model, config)
    if world.launched:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[torch.device(device).index] if torch.device(device).type == "cuda" else None,
            **_NO_BUFFER_SYNC)
    autocast = train_gpt.forward_precision(config, device)
    tokens_per_step = config.batch * config.context  # of all ranks together
    losses, tokens_seen, since, after_first = [], 0, time.perf_counter(), None
    for step, (tokens, targets) in zip(range(steps), train_gpt.batches(corpus, config, config.seed)):
        tokens = shard(tokens, world).to(device, non_blocking=True)
        targets = shard(targets, world).to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = model(tokens, targets)
        loss.backward()  # DDP averages the gradients over the ranks as they come
        optimizer.step()
        reported = loss.detach().float()
        if world.launched:
            reported = reported.clone()
            dist.all_reduce(reported)  # every rank's mean over equal shards: their mean is the batch's
            reported /= world.size
        losses.append(reported.item())
        tokens_seen += tokens_per_step
        if after_first is None:
            after_first = [time.perf_counter(), 0]
        else:
            after_first[1] += tokens_per_step
        if log_every and (step % log_every == 0 or step == steps - 1):
            rate = tokens_seen / (time.perf_counter() - since)
            log(f"{ops_name:>6} x{world.size} step {step:4d}  loss {losses[-1]:.4f}  {rate:8.0f} tokens/s", flush=True)
            tokens_seen, since = 0, time.perf_counter()
    rate = after_first[1] / (time.perf_counter() - after_first[0]) if after_first and after_first[1] else None
    return losses, rate


def compare(run: dict, path: str) -> tuple[bool, str]:
    """(whether `run`'s final loss lies within LOSS_TOLERANCE of the run written to `path`, a line
    saying by how much and the two runs' tokens/s)."""
    with open(path) as f:
        other = json.load(f)
    differs = [key for key in ("config", "steps") if other.get(key) != run[key]]
    if differs:
        return False, f"{path} holds a run with another {' and '.join(differs)}: its losses do not compare"
    mine, theirs = run["final_mean_loss"], other["final_mean_loss"]
    gap = abs(mine / theirs - 1)
    line = (f"final loss (mean of the last 10 steps): {run['world_size']} process(es) {mine:.4f}, "
            f"{other['world_size']} process(es) ({path}) {theirs:.4f}, differ by {gap:.3%} "
            f"(at most {LOSS_TOLERANCE:.0%})")
    if run.get("tokens_per_s") and other.get("tokens_per_s"):
        line += (f"; tokens/s {run['tokens_per_s']:.0f} against {other['tokens_per_s']:.0f} "
                 f"({run['tokens_per_s'] / other['tokens_per_s']:.2f}x)")
    return gap <= LOSS_TOLERANCE, line


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", choices=["torch", "tegula"], default="tegula")
    parser.add_argument("--steps", type=_cli.integer(1), default=200)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu",
                        help="cuda: NCCL, a process on each cuda:LOCAL_RANK; cpu: gloo (default: cuda when "
                             "there is a GPU); the model's defaults depend on it (GPU_CONFIG on cuda)")
    parser.add_argument("--json", metavar="PATH", type=_cli.output_file(),
                        help="write the configuration, the losses and tokens/s")
    parser.add_argument("--compare", metavar="PATH", type=_cli.json_file,
                        help=f"the JSON of another run of the same configuration: fail when the final losses "
                             f"differ by more than {LOSS_TOLERANCE * 100:g}%%")
    parser.add_argument("--log-every", type=_cli.integer(0), default=10)
    train_gpt.add_config_options(parser)  # every field of train_gpt's Config, as train_gpt.py takes them
    if world_from_env().local_rank:  # one line from local rank 0, as for problem()'s errors
        parser.error = lambda message: sys.exit(2)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    given = {field.name: getattr(args, field.name) for field in dataclasses.fields(train_gpt.Config)
             if getattr(args, field.name) is not None}
    config = dataclasses.replace(train_gpt.default_config(args.device), **given)
    world = world_from_env()
    why = train_gpt.config_problem(config, [args.ops]) or problem(config, world, args.device)
    if why is not None:
        if world.local_rank == 0:
            print(f"train_ddp.py: error: {why}", file=sys.stderr, flush=True)
        return 2

    if args.device == "cuda":
        device, backend = f"cuda:{world.local_rank}", "nccl"
        torch.cuda.set_device(device)
    else:
        device, backend = "cpu", "gloo"
    if world.launched:
        # With its device named, NCCL sets up its communicator now rather than guessing the device later.
        bound = ({"device_id": torch.device(device)}
                 if backend == "nccl" and "device_id" in inspect.signature(dist.init_process_group).parameters else {})
        dist.init_process_group(backend, **bound)
    try:
        if world.rank == 0:
            where = f"{world.size} process(es), {backend}" if world.launched else "one process, no DDP"
            print(f"{config}, {args.steps} steps on {args.device} ({where}), {config.batch // world.size} "
                  f"sequences per process; loss starts near log(vocab) = {math.log(config.vocab):.2f}", flush=True)
        losses, rate = train(config, args.ops, args.steps, world, device, args.log_every)
        if world.launched:
            dist.barrier()  # every rank is done with every collective before any tears down
    finally:
        # DDP's reference cycles keep the process group alive until a collection; one left to the exit
        # lets gloo's worker threads drop Python references while the interpreter finalizes, which
        # aborts the process ("terminate called without an active exception"). Free it while Python runs.
        gc.collect()
        if dist.is_initialized():
            dist.destroy_process_group()
    if world.rank != 0:
        return 0

    final = sum(losses[-10:]) / len(losses[-10:]) if losses else float("nan")
    if rate:
        print(f"{args.ops:>6} x{world.size}: {rate:.0f} tokens/s after the first step")
    print(f"mean loss of the last 10 steps: {final:.4f}")
    run = {"config": dataclasses.asdict(config), "device": args.device, "backend": backend if world.launched else None,
           "world_size": world.size, "ops": args.ops, "steps": args.steps, "tokens_per_s": rate,
           "final_mean_loss": final, "losses": losses}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(run, f, indent=1)
        print(f"wrote {args.json}")
    if args.compare:
        agree, line = compare(run, args.compare)
        print(line, flush=True)
        if not agree:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
