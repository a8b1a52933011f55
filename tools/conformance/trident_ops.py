"""kakaobrain/trident's Triton kernels on Tegula, through the conformance shim's `triton` package, forward and
backward, against torch float64 references written here from the math (or, where a case says so, from the kernel's
statements as written).

Result on the CPU backend (2026-12-07): 202 of 217 lines match (a case's forward and backward are a line each),
in about a minute on two cores from an empty Tegula cache. The other 15 fail by trident itself, on any machine
(FAIL (library), listed below): 11 by its bugs, each beside a case that matches the kernel's statements as
written, and 4 (two instance_norm cases without running statistics) because the kernel needs Triton 2's
specialization of an annotated int 1 as a constant; none fails by Tegula.

  - dropout with a seed of 2**31 or more: dropout's kernel declares `seed: tl.int32`. Triton 3 types a parameter
    by such an annotation (JITFunction's annotation_type), so its launcher keeps the seed's low 32 bits (and
    refuses one of 2**63 or more); so does Tegula, with a RuntimeWarning that the value changed. The mask then
    matches tl.rand's Philox stream for the low 32 bits, bit for bit.
  - instance_norm without running statistics: InstanceNorm.forward branches on `use_input_stats: tl.int32`
    equal to 1. Triton 2 specialized that 1 as a constant, so the other branch, which makes a block pointer of
    running_mean_ptr (None here), was never compiled. Triton 3 types the parameter by its annotation and keys its
    cache on the 1 without making it a constant, so the branch is a runtime one and both sides compile; the
    block pointer of None is refused, under Triton 3 as under Tegula (E0404). The cases with running
    statistics match.

The first runs found four more causes, since fixed: parameters' annotations ignored (the dropout seed above);
@jit static methods of classes called through a module (`language.Sum.forward(...)`, E0205); `tl.math.max(a, b)` (Triton 2's elementwise maximum, in softmax's and
cosine_similarity's forward) read as the reduction tl.max (E0601); and g++ 12.2 at -O3 -march=native (AVX-512)
miscompiling masked_softmax's float16 backward loop under `#pragma GCC ivdep` (garbage varying from run to run;
the CPU backend now leaves the hint out of units with 16-bit floats).

Under TEGULA_DEBUG=1 two more of trident's out-of-bounds loads show, whose values land only in lanes the kernels
then discard, so the results above match without it: PReLU.backward loads the weight unchecked past its end in a
partial block (kernel/prelu.py), and GEGLU.forward the bias when N is partial (its inverted heuristics, below).

Cases (trident.function's ops and their autograd backward, float32 unless named; inputs seeded per case, the seed
being the case name's CRC, so -k reproduces a case's data; sizes that are not powers of two, so the kernels' block
pointers cut a partial last block, where the library allows):

  - elementwise: relu, leaky_relu (two slopes), gelu and shift_gelu (trident's tanh approximation), silu, prelu (a
    weight per channel of 2-D and 3-D inputs), geglu (x @ W.T + b split in state and gate, state * gelu(gate)), and
    dropout (below); float16 and bfloat16 for gelu, silu and leaky_relu;
  - reductions along dim 0 and 1 of 2-D inputs: sum, mean, max (values and indices), argmax, var (corrections 0
    and 1) and var_mean;
  - softmax and cosine_similarity along several dims, and their backward kernels launched through the library's own
    host functions Softmax.__backward and CosineSimilarity.__backward on a forward computed here; masked_softmax (a 0 / 1 mask, ones set to -inf) along dim 0 and 1;
  - norms: layer_norm (with and without weight / bias, float16 and bfloat16), rms_norm (trident's definition:
    rms = sqrt(sum of the first p * x_size squares / (p * x_size)), y = x / (rms + eps) * w + b; p 1, 0.5 and a
    negative p meaning all of x), group_norm (3-D and 4-D), instance_norm (running statistics updated when given,
    and used with use_input_stats=False), batch_norm (training statistics, the running mean and variance updated
    with momentum);
  - linear (x @ W.T + b, with and without bias, 2-D and 3-D x, a permuted x and W), float16 and bfloat16;
  - scaled_dot_product_attention: plain, causal and with an additive float mask (whose gradient trident returns
    too), head sizes 32 and 64, sequence lengths 64 and 128 (trident refuses sizes that are not powers of two);
    dropout_p 0 (trident's attention dropout scales the output, not the weights: not covered).

Tolerances, relative to the reference's largest magnitude: float32 1e-5, float16 2e-3, bfloat16 2e-2 (index outputs
exactly). trident's kernels take float32, float16 and bfloat16 only (util.dtype refuses float64). Some kernels
accumulate in the input's dtype (sum's and linear's accumulators): their float16 / bfloat16 cases are sized so that
the sums stay within the tolerance (float16 sum and linear 5e-3). linear's bfloat16 blocks go through
tl.dot(..., out_dtype=tl.float16), which Triton 3, and Tegula, ignore for bfloat16 operands (a float32 product).

trident's own bugs, each shown by a case that fails (FAIL (library)) and one that matches a reference of the
kernel's statements as written:

  - kernel/geglu.py's heuristics are inverted (`require_m_boundary_check = m_size % m_block_size == 0`, K's and
    N's too, where every other kernel has `% block` alone), so with K partial and M or N partial the input and
    weight loads through language/linear.py go unchecked past the arrays: NaN or inf. A case in debug mode shows
    the out-of-bounds weight load; with K a multiple of the block, geglu matches;
  - VarMean.backward drops the gradient of its mean output (`(grad_output, _) = grad_outputs`): var_mean matches
    when only var has a gradient;
  - LayerNorm.backward, where the row is not a power of two, leaves centered_mean = -mean in the padded lanes
    (loaded as 0, not masked as the forward masks them), and they enter grad_mean: dx is off by 2 * P * mean *
    grad_var / N for P padded lanes; a reference with that term matches to 5e-7, and power-of-two rows match;
  - CosineSimilarity.backward takes |x1| and |x2| over the current 256-element block only: vectors longer than a
    block get the wrong norms (a reference with block norms matches to 3e-9);
  - InstanceNorm.backward with use_input_stats=False differentiates through the running mean and variance as if
    they were x's statistics (a reference doing the same matches);
  - Dropout.backward multiplies the gradient by (1 - p + eps) where the forward divided by it, and takes the kept
    elements to be those whose output is > 0, so kept negative inputs get no gradient (p 0 and 1, trident's own
    tests, are right); a reference of the kernel's statements matches.

Not covered: the nn.Module wrappers of trident/module.py (they call the same operations), use_accelerator (TF32
dots, nothing on a CPU), the autotuners' other configs (config.use_autotune is off, below), attention's dropout,
and float64 (refused by the library).

trident is not part of Tegula; point this at a checkout (a `git archive HEAD | tar -x -C <tree>` of the repository
will do; written against commit 6c429c6b1a2d33711d964a9d643c2b4b1610afdf of 2023-10-11, the last):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/trident_ops.py <trident tree> [-k SUBSTRING] \\
        [--json out.json]

Loading: `import trident` imports every module of the package, whose kernels are decorated at import through
trident.util.autotune, so the `trident` package itself is imported bare (standins.bare_packages: its __init__ does
not run) and trident.config is set before the kernel modules load: config.use_autotune = False, trident's own switch,
which gives each kernel its first config only (tuning every kernel on a CPU would take most of the run). Its
subpackages (trident.language, .kernel, .operation, .function, .util) import as usual. Stand-ins, none of them a
Triton kernel or reached from one:

  - nvtx (NVIDIA's Python NVTX package, which trident/util/util.py imports; its ranges are pushed only with
    config.use_trace, off), when it is not installed: an empty module;
  - trident.util.util's `triton`: the shim's triton, but for `autotune`, which takes Triton 2.1's positional
    parameters (configs, key, prune_configs_by, reset_to_zero, warmup, rep) and passes them on by name.
    trident.util.autotune calls `triton.autotune(configs, key, prune_configs_by, reset_to_zero, warmup, rep)`
    positionally; Triton 2.2 put restore_value (and later pre_hook) after reset_to_zero, so under Triton 3, as
    under Tegula, warmup=25 lands in restore_value and the import fails ("'int' object is not iterable");
  - torch.random.seed, which dropout calls for each launch's seed (and which reseeds torch's generator with a
    nondeterministic value): it returns the seed the case chose, or one drawn from the case's generator below 2**31,
    without reseeding anything, so the references know the seed and the cases stay reproducible.

Prints one line per case and stage (ok / FAIL / FAIL (library), the largest absolute difference from the reference,
each output's difference or the first line of the error) and the totals.
"""

import argparse
import importlib
import importlib.abc
import importlib.machinery
import json
import os
import pathlib
import re
import sys
import types
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("source", type=pathlib.Path, help="a trident checkout (a directory holding trident/)")
_parser.add_argument("-k", dest="only", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()
SRC = ARGS.source.resolve()
for _file in ("trident/util/util.py", "trident/config.py", "trident/function/function.py", "trident/kernel/softmax.py",
              "trident/language/combine.py"):
    if not (SRC / _file).is_file():
        sys.exit(f"{SRC} holds no {_file}")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

import standins  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check, exact  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins -----------------------------------------------------------------------------------------------------

try:
    import nvtx  # noqa: F401
except ImportError:
    sys.modules["nvtx"] = types.ModuleType("nvtx")


class _Triton21Autotune:
    """The shim's `triton` as trident/util/util.py sees it: everything as it is but autotune, which takes Triton
    2.1's positional parameters."""

    def __getattr__(self, name):
        return getattr(triton, name)

    @staticmethod
    def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, warmup=25, rep=100):
        return triton.autotune(configs, key, prune_configs_by=prune_configs_by, reset_to_zero=reset_to_zero,
                               warmup=warmup, rep=rep)


class _UtilLoader(importlib.abc.MetaPathFinder):
    """Loads trident/util/util.py from its file, then gives it _Triton21Autotune as `triton` (before any kernel
    module, which imports it, is decorated)."""

    def find_spec(self, name, path, target=None):
        if name != "trident.util.util":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.triton = _Triton21Autotune()
        spec.loader.exec_module = exec_module
        return spec


standins.bare_packages(SRC, "trident", as_is={"trident.language", "trident.language.math", "trident.util",
                                               "trident.kernel", "trident.operation", "trident.function"})
sys.meta_path.insert(0, _UtilLoader())
config = importlib.import_module("trident.config")
config.use_autotune = False
fn = importlib.import_module("trident.function")
operation = importlib.import_module("trident.operation")

_CHOSEN_SEED = [None]
SEEDS = []


def _seed_stand_in():
    seed = _CHOSEN_SEED[0] if _CHOSEN_SEED[0] is not None else int(torch.randint(0, 2 ** 31, (), device="cpu"))
    SEEDS.append(seed)
    return seed


torch.random.seed = _seed_stand_in

# --- cases ---------------------------------------------------------------------------------------------------------

F16, BF16, F32, I64 = torch.float16, torch.bfloat16, torch.float32, torch.int64
TOL = {F32: 1e-5, F16: 2e-3, BF16: 2e-2}
SHORT = {F32: "fp32", F16: "fp16", BF16: "bf16"}
results = []
LIBRARY = {}  # case name -> why it fails: the library's own bug, on any machine
GEGLU_HEURISTICS = ("trident's bug: kernel/geglu.py's heuristics are inverted (require_*_boundary_check = size % "
                    "block == 0), so with K and M or N partial the loads go unchecked, past the arrays")
VAR_MEAN_GRADIENT = "trident's bug: VarMean.backward drops the gradient of the mean output"
COSINE_BLOCK_NORMS = ("trident's bug: CosineSimilarity.backward takes |x1| and |x2| of the current 256-element "
                      "block only")
LAYER_NORM_PADDING = ("trident's bug: LayerNorm.backward leaves centered_mean = -mean in the padded lanes, "
                      "which enter grad_mean")
INSTANCE_NORM_RUNNING = ("trident's bug: InstanceNorm.backward with use_input_stats=False differentiates "
                         "through the running mean and variance as if they were x's")
INSTANCE_NORM_TRITON2_ONE = ("trident needs Triton 2: InstanceNorm.forward branches on `use_input_stats: tl.int32`, "
                             "which Triton 2 specialized as the constant 1; Triton 3 types an annotated parameter "
                             "by its annotation and specializes its 1 only in the cache key, so the branch is a "
                             "runtime one and its other side, a block pointer made of running_mean_ptr=None, is "
                             "refused at compile time (the same error under Triton 3)")
DROPOUT_BACKWARD = ("trident's bug: Dropout.backward multiplies by (1 - p) where the forward divided, and drops "
                    "the kept negative elements (output > 0)")


def case(name, run, stages=("forward", "backward"), library=None, library_stages=None):
    """library: the reason the case fails on any machine (trident's bug), printed as FAIL (library); in the stages
    `library_stages` names (all when None)."""
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))  # each case's inputs do not depend on the cases run before it
    _CHOSEN_SEED[0] = None
    if library is not None:
        for stage in stages if len(stages) > 1 else ("",):
            if library_stages is None or stage in library_stages:
                LIBRARY[f"{name} {stage}" if stage else name] = library
    check(results, name, run, stages)


def leaf(x, dtype=F32, grad=True):
    return x.to(dtype).requires_grad_(grad)


def ref_of(x):
    """x's float64 copy for the reference, a leaf wanting a gradient where x does."""
    return x.detach().double().requires_grad_(x.requires_grad) if x.is_floating_point() else x


def autograd_case(make, lib, ref, dtype=F32, tol=None, backward=True, upstream=None, ref_backward=None):
    """make() gives the inputs (in their dtypes; those that want a gradient are leaves that do); lib(*inputs) the
    library's outputs, ref(*float64 copies) the reference's. Forward: every output; backward: the gradients of
    the inputs for random upstream gradients of the float outputs (of those whose indices `upstream` lists, zeros
    for the others; all when it is None). ref_backward(inputs, upstream gradients) -> the expected gradients, where
    the reference's own autograd is not the one to compare with (a kernel's statements as written)."""
    tol = tol if tol is not None else TOL[dtype]

    def run():
        inputs = make()
        refs = [ref_of(x) for x in inputs]
        out, want = lib(*inputs), ref(*refs)
        out = out if isinstance(out, tuple) else (out,)
        want = want if isinstance(want, tuple) else (want,)
        compared = {}
        for i, (o, w) in enumerate(zip(out, want)):
            label = f"out{i}" if len(out) > 1 else "out"
            compared[label] = (o, w, tol) if o.is_floating_point() else exact(o, w)
        yield compared
        if not backward:
            return
        floats = [(i, o, w) for i, (o, w) in enumerate(zip(out, want)) if o.is_floating_point() and o.requires_grad]
        ups = [torch.randn(o.shape).to(o.dtype) if upstream is None or i in upstream else torch.zeros_like(o)
               for i, o, _ in floats]
        wants_grad = [i for i, x in enumerate(inputs) if x.is_floating_point() and x.requires_grad]
        got = torch.autograd.grad([o for _, o, _ in floats], [inputs[i] for i in wants_grad], ups, allow_unused=True)
        if ref_backward is not None:
            expected = ref_backward(inputs, ups)
        else:
            expected = torch.autograd.grad([w for _, _, w in floats], [refs[i] for i in wants_grad],
                                           [u.double() for u in ups], allow_unused=True)
        yield {f"d input{i}": (g if g is not None else torch.zeros_like(inputs[i]),
                               e if e is not None else torch.zeros_like(refs[i]), tol)
               for i, g, e in zip(wants_grad, got, expected)}
    return run


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


# --- elementwise -----------------------------------------------------------------------------------------------

for _dtype in (F32, F16, BF16):
    _d = SHORT[_dtype]
    case(f"gelu {_d} 37 x 300", autograd_case(lambda d=_dtype: [leaf(torch.randn(37, 300) * 2, d)], fn.gelu,
                                                gelu_tanh, _dtype))
    case(f"silu {_d} 37 x 300", autograd_case(lambda d=_dtype: [leaf(torch.randn(37, 300) * 3, d)], fn.silu,
                                                lambda x: x * torch.sigmoid(x), _dtype))
    case(f"leaky_relu {_d} 37 x 300, slope 0.01",
         autograd_case(lambda d=_dtype: [leaf(torch.randn(37, 300), d)], fn.leaky_relu,
                       lambda x: torch.where(x > 0, x, 0.01 * x), _dtype))
case("relu 200 x 300", autograd_case(lambda: [leaf(torch.randn(200, 300))], fn.relu, torch.relu))
case("relu 1 x 100", autograd_case(lambda: [leaf(torch.randn(1, 100))], fn.relu, torch.relu))
case("leaky_relu 100 x 7, slope 0.2", autograd_case(lambda: [leaf(torch.randn(100, 7))],
                                                    lambda x: fn.leaky_relu(x, 0.2),
                                                    lambda x: torch.where(x > 0, x, 0.2 * x)))
case("prelu 200 x 300 (a weight per column)",
     autograd_case(lambda: [leaf(torch.randn(200, 300)), leaf(torch.randn(300))], fn.prelu,
                   lambda x, w: torch.where(x > 0, x, w * x)))
case("prelu 3 x 40 x 77 (a weight per channel)",
     autograd_case(lambda: [leaf(torch.randn(3, 40, 77)), leaf(torch.randn(40))], fn.prelu,
                   lambda x, w: torch.where(x > 0, x, w[:, None] * x)))
case("shift_gelu 37 x 300", autograd_case(lambda: [leaf(torch.randn(37, 300)), leaf(torch.randn(300))],
                                          fn.shift_gelu, lambda x, b: gelu_tanh(x + b)))
case("shift_gelu 2 x 9 x 1000", autograd_case(lambda: [leaf(torch.randn(2, 9, 1000)), leaf(torch.randn(1000))],
                                              fn.shift_gelu, lambda x, b: gelu_tanh(x + b)))


def geglu_ref(x, w, b=None):
    y = x @ w.T + (b if b is not None else 0)
    state, gate = y.chunk(2, -1)
    return state * gelu_tanh(gate)


case("geglu 2 x 37 x 128 @ (90 x 128).T + b (partial M and N blocks)",
     autograd_case(lambda: [leaf(torch.randn(2, 37, 128)), leaf(torch.randn(90, 128) / 8), leaf(torch.randn(90))],
                   fn.geglu, geglu_ref))
case("geglu 37 x 64 @ (128 x 64).T, no bias",
     autograd_case(lambda: [leaf(torch.randn(37, 64)), leaf(torch.randn(128, 64) / 8)], fn.geglu, geglu_ref))
case("geglu 2 x 37 x 100 @ (90 x 100).T + b (partial K block too)",
     autograd_case(lambda: [leaf(torch.randn(2, 37, 100)), leaf(torch.randn(90, 100) / 8), leaf(torch.randn(90))],
                   fn.geglu, geglu_ref), library=GEGLU_HEURISTICS)


def geglu_debug_mode():
    """The same launch in Tegula's debug mode (triton.knobs.runtime.debug, which checks every access against its
    array): the load that GEGLU's inverted heuristics leave unchecked reads past the end of the weight."""
    def run():
        x, w, b = torch.randn(2, 37, 100), torch.randn(90, 100) / 8, torch.randn(90)
        triton.knobs.runtime.debug = True
        try:
            fn.geglu(x, w, b)
            text = "no error"
        except Exception as e:  # tegula.DeviceError
            text = f"{type(e).__name__}: {e}"
        finally:
            triton.knobs.runtime.debug = False
        found = re.search(r"DeviceError: kernel `forward` at \S*language/linear\.py:\d+:\d+: load out of bounds", text)
        if not found:
            raise AssertionError(f"expected an out-of-bounds load in language/linear.py, got {text[:200]}")
        yield {"out-of-bounds load in language/linear.py reported": exact(torch.tensor(1), torch.tensor(1))}
    return run


case("geglu 2 x 37 x 100 @ (90 x 100).T + b in debug mode: the unchecked weight load is out of bounds",
     geglu_debug_mode(), stages=("run",))

# --- reductions ------------------------------------------------------------------------------------------------

for _shape, _dim in (((37, 1000), 1), ((1000, 37), 0), ((300, 77), 1), ((77, 300), 0)):
    _s = f"{_shape[0]} x {_shape[1]}, dim {_dim}"
    case(f"sum {_s}", autograd_case(lambda s=_shape: [leaf(torch.randn(*s))], lambda x, d=_dim: fn.sum(x, d),
                                    lambda x, d=_dim: x.sum(d)))
    case(f"mean {_s}", autograd_case(lambda s=_shape: [leaf(torch.randn(*s))], lambda x, d=_dim: fn.mean(x, d),
                                     lambda x, d=_dim: x.mean(d)))
    case(f"max {_s}", autograd_case(lambda s=_shape: [leaf(torch.randn(*s))], lambda x, d=_dim: fn.max(x, d),
                                    lambda x, d=_dim: tuple(torch.max(x, d))))
    case(f"argmax {_s}", autograd_case(lambda s=_shape: [leaf(torch.randn(*s), grad=False)],
                                       lambda x, d=_dim: fn.argmax(x, d), lambda x, d=_dim: torch.argmax(x, d),
                                       backward=False), stages=("forward",))
    for _correction in (1, 0):
        case(f"var {_s}, correction {_correction}",
             autograd_case(lambda s=_shape: [leaf(torch.randn(*s) * 2 + 1)],
                           lambda x, d=_dim, c=_correction: fn.var(x, d, c),
                           lambda x, d=_dim, c=_correction: torch.var(x, d, correction=c)))
    case(f"var_mean {_s}, correction 1, a gradient of var only",
         autograd_case(lambda s=_shape: [leaf(torch.randn(*s) * 2 + 1)], lambda x, d=_dim: fn.var_mean(x, d),
                       lambda x, d=_dim: tuple(torch.var_mean(x, d, correction=1)), upstream=(0,)))
case("var_mean 300 x 77, dim 1, correction 0, gradients of var and mean",
     autograd_case(lambda: [leaf(torch.randn(300, 77) * 2 + 1)], lambda x: fn.var_mean(x, 1, 0),
                   lambda x: tuple(torch.var_mean(x, 1, correction=0))), library=VAR_MEAN_GRADIENT)
case("sum fp16 37 x 300, dim 1", autograd_case(lambda: [leaf(torch.rand(37, 300), F16)], lambda x: fn.sum(x, 1),
                                               lambda x: x.sum(1), F16, tol=5e-3))

# --- softmax ---------------------------------------------------------------------------------------------------

for _shape, _dim in (((7, 1000), 1), ((1000, 7), 0)):
    _s = f"{_shape[0]} x {_shape[1]}, dim {_dim}"
    case(f"softmax {_s}", autograd_case(lambda s=_shape: [leaf(torch.randn(*s) * 3)],
                                        lambda x, d=_dim: fn.softmax(x, d), lambda x, d=_dim: torch.softmax(x, d)))


def softmax_backward(shape, dim, dtype=F32):
    """operation.Softmax's backward (kernel.Softmax.backward_delta and .backward) through its own host function
    Softmax.__backward, on the softmax of x computed here: dx = y * (dy - sum(dy * y))."""
    def run():
        x = (torch.randn(*shape) * 3).double()
        y = torch.softmax(x, dim)
        dy = torch.randn(*shape).double()
        got = operation.Softmax._Softmax__backward(dy.to(dtype), y.to(dtype), dim)
        yy, ddy = y.to(dtype).double(), dy.to(dtype).double()
        yield {"dx": (got, yy * (ddy - (ddy * yy).sum(dim, keepdim=True)), TOL[dtype])}
    return run


for _shape, _dim in (((7, 1000), 1), ((1000, 7), 0), ((37, 300), 1)):
    case(f"softmax backward kernels {_shape[0]} x {_shape[1]}, dim {_dim}", softmax_backward(_shape, _dim),
         stages=("run",))
case("softmax backward kernels fp16 37 x 300, dim 1", softmax_backward((37, 300), 1, F16), stages=("run",))


def masked_softmax_ref(x, mask, dim):
    return torch.softmax(torch.where(mask.bool(), float("-inf"), x), dim)


def masked_inputs(shape, dtype=F32):
    def make():
        mask = torch.randint(0, 2, shape)
        mask[0, :] = mask[:, 0] = 0  # no row or column all masked (the library's test does the same)
        return [leaf(torch.randn(*shape) * 3, dtype), mask]
    return make


for _shape, _dim in (((3, 1000), 1), ((1000, 3), 0), ((37, 300), 1), ((300, 37), 0)):
    case(f"masked_softmax {_shape[0]} x {_shape[1]}, dim {_dim}",
         autograd_case(masked_inputs(_shape), lambda x, m, d=_dim: fn.masked_softmax(x, m, d),
                       lambda x, m, d=_dim: masked_softmax_ref(x, m, d)))
case("masked_softmax fp16 37 x 300, dim 1",
     autograd_case(masked_inputs((37, 300), F16), lambda x, m: fn.masked_softmax(x, m, 1),
                   lambda x, m: masked_softmax_ref(x, m, 1), F16))

for _shape, _dim in (((37, 200), 1), ((5, 300, 7), 1)):
    # Past 256 elements along dim the backward meets trident's block norms (the kernel cases below show it).
    case(f"cosine_similarity {' x '.join(map(str, _shape))}, dim {_dim}",
         autograd_case(lambda s=_shape: [leaf(torch.randn(*s)), leaf(torch.randn(*s))],
                       lambda a, b, d=_dim: fn.cosine_similarity(a, b, d),
                       lambda a, b, d=_dim: torch.nn.functional.cosine_similarity(a, b, d)),
         library=COSINE_BLOCK_NORMS if _shape[_dim] > 256 else None, library_stages=("backward",))


def cosine_backward_reference(x1, x2, g, dim, block=None):
    """d(x1 . x2 / (|x1| |x2|)) for the upstream gradient g, in float64; with `block`, as the kernel writes it:
    |x1| and |x2| are the norms of the block of `block` elements along dim that an element is in."""
    x1, x2, g = x1.double(), x2.double(), g.double().unsqueeze(dim)
    n1, n2 = (x1 * x1).sum(dim, keepdim=True).sqrt(), (x2 * x2).sum(dim, keepdim=True).sqrt()
    b1, b2 = n1, n2
    if block is not None:
        shape = [1] * x1.dim()
        shape[dim] = -1
        which = (torch.arange(x1.shape[dim]) // block).reshape(shape)
        b1, b2 = torch.zeros_like(x1), torch.zeros_like(x2)
        for k in range(int(which.max()) + 1):
            inside = (which == k).double()
            b1 = b1 + inside * (x1 * x1 * inside).sum(dim, keepdim=True).sqrt()
            b2 = b2 + inside * (x2 * x2 * inside).sum(dim, keepdim=True).sqrt()
    den, num = n1 * n2, (x1 * x2).sum(dim, keepdim=True)
    grad_den = g * num * (-1 / (den * den))
    return grad_den * b2 / b1 * x1 + g / den * x2, grad_den * b1 / b2 * x2 + g / den * x1


def cosine_backward(shape, dim, as_written=False):
    """kernel.CosineSimilarity.backward through the library's own host function CosineSimilarity.__backward (the
    forward kernel does not compile, above), on x1, x2 and the forward's numerator and denominator computed here;
    as_written: against the kernel's block-local norms (its first config's block of 256 elements)."""
    def run():
        x1, x2 = torch.randn(*shape), torch.randn(*shape)
        num = (x1.double() * x2.double()).sum(dim)
        den = x1.double().norm(dim=dim) * x2.double().norm(dim=dim)
        g = torch.randn(num.shape)
        cs = operation.CosineSimilarity
        as3 = cs._CosineSimilarity__input_shape(x1)
        d3 = cs._CosineSimilarity__dim(x1, dim)
        out2 = (lambda t: t.float().reshape(1, -1)) if len(shape) < 3 else (lambda t: t.float())
        got1, got2 = cs._CosineSimilarity__backward(out2(g), x1.view(as3), x2.view(as3), out2(den), out2(num), d3)
        want1, want2 = cosine_backward_reference(x1, x2, g, dim, 256 if as_written else None)
        yield {"d x1": (got1.view(shape), want1, TOL[F32]), "d x2": (got2.view(shape), want2, TOL[F32])}
    return run


for _shape, _dim in (((37, 200), 1), ((200, 37), 0), ((5, 7, 256), 2)):
    case(f"cosine_similarity backward kernel {' x '.join(map(str, _shape))}, dim {_dim} (one block)",
         cosine_backward(_shape, _dim), stages=("run",))
for _shape, _dim in (((37, 300), 1), ((300,), 0)):
    _s = f"{' x '.join(map(str, _shape))}, dim {_dim}"
    case(f"cosine_similarity backward kernel {_s} (two blocks), the kernel's block norms",
         cosine_backward(_shape, _dim, as_written=True), stages=("run",))
    case(f"cosine_similarity backward kernel {_s} (two blocks)", cosine_backward(_shape, _dim), stages=("run",),
         library=COSINE_BLOCK_NORMS)

# --- norms -----------------------------------------------------------------------------------------------------


def layer_norm_case(shape, dtype=F32, weight=True, bias=True, ref_backward=None, dx_only=False):
    def make():
        out = [leaf(torch.randn(*shape) * 2 + 0.5, dtype)]
        out.append(leaf(torch.randn(shape[-1]), dtype) if weight else None)
        out.append(leaf(torch.randn(shape[-1]), dtype) if bias else None)
        return [x for x in out if x is not None]

    def call(f):
        def go(x, *rest):
            rest = list(rest)
            w = rest.pop(0) if weight else None
            b = rest.pop(0) if bias else None
            return f(x, (shape[-1],), w, b)
        return go
    run = autograd_case(make, call(fn.layer_norm), call(torch.nn.functional.layer_norm), dtype,
                        ref_backward=ref_backward)
    if not dx_only:
        return run

    def only_dx():
        for stage in run():
            yield {k: v for k, v in stage.items() if k != "d input1"}
    return only_dx


def layer_norm_backward_as_written(weight):
    """dx as kernel.LayerNorm.backward computes it: its padded lanes (next_power_of_2(N) - N of them, loaded as 0)
    hold centered_mean = -mean, which is not masked, so grad_distance = 2 * (-mean) * grad_var there enters
    grad_mean: dx = (the math's dx) + 2 * P * mean * grad_var / N, P the padded lanes, grad_var = sum(w * dy *
    (x - mean)) * -(rstd^3 / 2) / N."""
    def backward(inputs, ups):
        x = inputs[0].detach().double().requires_grad_()
        w = inputs[1].detach().double() if weight else None
        dy = ups[0].double()
        n = x.shape[-1]
        (dx,) = torch.autograd.grad(torch.nn.functional.layer_norm(x, (n,), w, None, 1e-5), x, dy)
        x = x.detach()
        mean = x.mean(-1, keepdim=True)
        rstd = (x.var(-1, unbiased=False, keepdim=True) + 1e-5).rsqrt()
        grad_var = ((dy * w if weight else dy) * (x - mean)).sum(-1, keepdim=True) * -(0.5 * rstd ** 3) / n
        dx = dx + 2 * (triton.next_power_of_2(n) - n) * mean * grad_var / n
        rest = [torch.zeros_like(t) for t in inputs[1:]]  # not compared: dx only
        return [dx] + rest
    return backward


for _shape in ((37, 1024), (300, 64), (2, 9, 256)):
    case(f"layer_norm {' x '.join(map(str, _shape))}, weight and bias", layer_norm_case(_shape))
case("layer_norm 300 x 64, no weight or bias", layer_norm_case((300, 64), weight=False, bias=False))
case("layer_norm 300 x 64, weight only", layer_norm_case((300, 64), bias=False))
case("layer_norm 300 x 64, bias only", layer_norm_case((300, 64), weight=False))
for _dtype in (F16, BF16):
    case(f"layer_norm {SHORT[_dtype]} 37 x 256, weight and bias", layer_norm_case((37, 256), _dtype))
for _shape in ((37, 1000), (1000, 37), (300, 77)):
    _s = " x ".join(map(str, _shape))
    case(f"layer_norm {_s}, weight (x's padded lanes, as the kernel writes them)",
         layer_norm_case(_shape, bias=False, ref_backward=layer_norm_backward_as_written(True), dx_only=True))
    case(f"layer_norm {_s}, weight and bias", layer_norm_case(_shape), library=LAYER_NORM_PADDING)
case("layer_norm 300 x 77, no weight or bias (x's padded lanes, as the kernel writes them)",
     layer_norm_case((300, 77), weight=False, bias=False, ref_backward=layer_norm_backward_as_written(False)))


def rms_norm_ref(p, eps):
    def ref(x, w, b=None):
        n = x.shape[-1]
        k = n if p < 0 or p > 1 else int(n * p)
        rms = (x[..., :k] ** 2).sum(-1, keepdim=True).div(n if p < 0 or p > 1 else n * p).sqrt()
        return x / (rms + eps) * w + (b if b is not None else 0)
    return ref


def rms_norm_case(shape, p, bias=False, dtype=F32, eps=1e-8):
    def make():
        out = [leaf(torch.randn(*shape) * 2, dtype), leaf(torch.randn(shape[-1]), dtype)]
        if bias:
            out.append(leaf(torch.randn(shape[-1]), dtype))
        return out
    return autograd_case(make, lambda x, w, b=None: fn.rms_norm(x, p, w, b, eps), rms_norm_ref(p, eps), dtype)


case("rms_norm 37 x 1000, p -1 (all of x)", rms_norm_case((37, 1000), -1.0))
case("rms_norm 2 x 9 x 300, p 1, bias", rms_norm_case((2, 9, 300), 1.0, bias=True))
case("rms_norm 37 x 1000, p 0.5 (the first 500 columns)", rms_norm_case((37, 1000), 0.5))
case("rms_norm 37 x 300, p 0.25, bias", rms_norm_case((37, 300), 0.25, bias=True))
for _dtype in (F16, BF16):
    case(f"rms_norm {SHORT[_dtype]} 37 x 300, p -1", rms_norm_case((37, 300), -1.0, dtype=_dtype, eps=1e-5))


def group_norm_case(shape, groups, weight=True, bias=True):
    def make():
        out = [leaf(torch.randn(*shape) * 2 + 1)]
        if weight:
            out.append(leaf(torch.randn(shape[1])))
        if bias:
            out.append(leaf(torch.randn(shape[1])))
        return out

    def call(f):
        def go(x, *rest):
            rest = list(rest)
            w = rest.pop(0) if weight else None
            b = rest.pop(0) if bias else None
            return f(x, groups, w, b)
        return go
    return autograd_case(make, call(fn.group_norm), call(torch.nn.functional.group_norm))


case("group_norm 2 x 16 x 10, 4 groups", group_norm_case((2, 16, 10), 4))
case("group_norm 3 x 12 x 77, 3 groups, no weight or bias", group_norm_case((3, 12, 77), 3, False, False))
case("group_norm 5 x 40 x 37, 40 groups", group_norm_case((5, 40, 37), 40))
case("group_norm 2 x 6 x 5 x 7, 2 groups (4-D)", group_norm_case((2, 6, 5, 7), 2))


def instance_norm_running_as_written(stats):
    """The gradients kernel.InstanceNorm.backward gives with use_input_stats=False: dx as the batch statistics' dx
    (grad_var and grad_mean terms) with the running mean and variance in their place, though the output does not
    depend on them through x; the weight's and bias's as the math (norm = (x - running_mean) * rstd)."""
    def backward(inputs, ups):
        x = inputs[0].detach().double().requires_grad_()
        w, b = (t.detach().double().requires_grad_() for t in inputs[1:])
        dy = ups[0].double()
        y = torch.nn.functional.instance_norm(x, stats[0], stats[1], w, b, use_input_stats=False, eps=1e-5)
        _, dw, db = torch.autograd.grad(y, (x, w, b), dy)
        x, n = x.detach(), x.shape[-1]
        centered = x - stats[0][:, None]
        rstd = (stats[1][:, None] + 1e-5).rsqrt()
        grad_norm = dy * w.detach()[:, None]
        grad_var = (grad_norm * centered).sum(-1, keepdim=True) * -(0.5 * rstd ** 3) / n
        grad_centered = grad_norm * rstd + 2 * centered * grad_var
        return [grad_centered - grad_centered.sum(-1, keepdim=True) / n, dw, db]
    return backward


def instance_norm_case(shape, affine, running, use_input_stats=True, momentum=0.1, as_written=False):
    def make():
        out = [leaf(torch.randn(*shape) * 2 + 1)]
        if affine:
            out += [leaf(torch.randn(shape[1])), leaf(torch.randn(shape[1]))]
        return out

    def run_with(f, stats):
        def go(x, *wb):
            w, b = (wb if affine else (None, None))
            rm, rv = (stats if running else (None, None))
            return f(x, rm, rv, w, b, use_input_stats=use_input_stats, momentum=momentum, eps=1e-5)
        return go

    def run():
        got_stats = [torch.rand(shape[1]), torch.rand(shape[1]) + 0.5]
        want_stats = [s.clone().double() for s in got_stats]
        gen = autograd_case(make, run_with(fn.instance_norm, got_stats),
                            run_with(torch.nn.functional.instance_norm, want_stats),
                            ref_backward=instance_norm_running_as_written(want_stats) if as_written else None)()
        first = next(gen)
        if running:
            first["running_mean"] = (got_stats[0], want_stats[0], 1e-5)
            first["running_var"] = (got_stats[1], want_stats[1], 1e-5)
        yield first
        yield from gen
    return run


case("instance_norm 2 x 8 x 300", instance_norm_case((2, 8, 300), False, False), library=INSTANCE_NORM_TRITON2_ONE)
case("instance_norm 3 x 5 x 77, weight and bias", instance_norm_case((3, 5, 77), True, False),
     library=INSTANCE_NORM_TRITON2_ONE)
case("instance_norm 3 x 5 x 77, running statistics, momentum 0.3", instance_norm_case((3, 5, 77), True, True,
                                                                                      momentum=0.3))
case("instance_norm 3 x 5 x 77, use_input_stats False (the running statistics), as the kernel writes it",
     instance_norm_case((3, 5, 77), True, True, use_input_stats=False, as_written=True))
case("instance_norm 3 x 5 x 77, use_input_stats False (the running statistics)",
     instance_norm_case((3, 5, 77), True, True, use_input_stats=False), library=INSTANCE_NORM_RUNNING)


def batch_norm_case(shape, affine, running, momentum=0.1):
    def make():
        out = [leaf(torch.randn(*shape) * 2 + 1)]
        if affine:
            out += [leaf(torch.randn(shape[1])), leaf(torch.randn(shape[1]))]
        return out

    def run_with(f, stats):
        def go(x, *wb):
            w, b = (wb if affine else (None, None))
            rm, rv = (stats if running else (None, None))
            return f(x, rm, rv, w, b, training=True, momentum=momentum, eps=1e-5)
        return go

    def run():
        got_stats = [torch.rand(shape[1]), torch.rand(shape[1]) + 0.5]
        want_stats = [s.clone().double() for s in got_stats]
        gen = autograd_case(make, run_with(fn.batch_norm, got_stats),
                            run_with(torch.nn.functional.batch_norm, want_stats))()
        first = next(gen)
        if running:
            first["running_mean"] = (got_stats[0], want_stats[0], 1e-5)
            first["running_var"] = (got_stats[1], want_stats[1], 1e-5)
        yield first
        yield from gen
    return run


case("batch_norm 3 x 16 x 40, training statistics", batch_norm_case((3, 16, 40), False, False))
case("batch_norm 11 x 40 x 1, weight and bias", batch_norm_case((11, 40, 1), True, False))
case("batch_norm 5 x 7 x 37, weight, bias and running statistics", batch_norm_case((5, 7, 37), True, True))

# --- linear ----------------------------------------------------------------------------------------------------


def linear_case(x_shape, n, bias=True, dtype=F32, permuted=False, tol=None):
    def make():
        k = x_shape[-1]
        if permuted:  # x and W as transposed views: strides the kernels take as they come
            x = torch.randn(*x_shape[:-2], k, x_shape[-2]).transpose(-1, -2)
            w = (torch.randn(k, n) / k ** 0.5).T
        else:
            x, w = torch.randn(*x_shape), torch.randn(n, k) / k ** 0.5
        out = [leaf(x, dtype), leaf(w, dtype)]
        if bias:
            out.append(leaf(torch.randn(n), dtype))
        return out
    return autograd_case(make, fn.linear, lambda x, w, b=None: x @ w.T + (b if b is not None else 0), dtype, tol)


case("linear 2 x 37 x 100 @ (90 x 100).T + b", linear_case((2, 37, 100), 90))
case("linear 77 x 300 @ (200 x 300).T, no bias", linear_case((77, 300), 200, bias=False))
case("linear 2 x 37 x 100 @ (90 x 100).T + b, transposed x and W", linear_case((2, 37, 100), 90, permuted=True))
case("linear fp16 2 x 37 x 100 @ (90 x 100).T + b", linear_case((2, 37, 100), 90, dtype=F16, tol=5e-3))
case("linear bf16 2 x 37 x 100 @ (90 x 100).T + b", linear_case((2, 37, 100), 90, dtype=BF16))

# --- attention -------------------------------------------------------------------------------------------------


def attention_ref(q, k, v, mask=None, causal=False):
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if mask is not None:
        s = s + mask
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


def attention_case(shape, causal=False, mask=False):
    def make():
        q, k, v = (torch.randn(*shape) for _ in range(3))
        out = [leaf(q), leaf(k), leaf(v)]
        if mask:
            out.append(leaf(torch.randn(*shape[:2], shape[2], shape[2])))
        return out
    return autograd_case(make, lambda q, k, v, m=None: fn.scaled_dot_product_attention(q, k, v, m, is_causal=causal),
                         lambda q, k, v, m=None: attention_ref(q, k, v, m, causal))


case("attention 2 x 3 x 64 x 32", attention_case((2, 3, 64, 32)))
case("attention 2 x 3 x 64 x 32, causal", attention_case((2, 3, 64, 32), causal=True))
case("attention 1 x 2 x 128 x 64, causal", attention_case((1, 2, 128, 64), causal=True))
case("attention 2 x 2 x 64 x 64, additive float mask", attention_case((2, 2, 64, 64), mask=True))

# --- dropout ---------------------------------------------------------------------------------------------------

MASK32 = (1 << 32) - 1


def philox_first_word(key, offsets, rounds=10):
    """The first 32-bit word of Philox-4x32 (rounds rounds) for the counters (offset, 0, 0, 0) and the 64-bit key,
    as tl.rand draws it."""
    out = []
    k0_init, k1_init = key & MASK32, (key >> 32) & MASK32
    for off in offsets:
        c0, c1, c2, c3 = off & MASK32, (off >> 32) & MASK32, 0, 0
        k0, k1 = k0_init, k1_init
        for _ in range(rounds):
            p0, p2 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
            c0, c1, c2, c3 = (p2 >> 32) ^ c1 ^ k0, p2 & MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & MASK32
            k0, k1 = (k0 + 0x9E3779B9) & MASK32, (k1 + 0xBB67AE85) & MASK32
        out.append(c0)
    return out


def rand_reference(key, n):
    """tl.rand(seed, offsets 0 .. n - 1) for a seed whose uint64 value is `key`: uint_to_uniform_float of the
    first Philox word (a signed int32's magnitude, -x - 1 for negatives, times 4.6566127342e-10 in float32)."""
    words = torch.tensor(philox_first_word(key, range(n)), dtype=I64, device="cpu")
    signed = torch.where(words >= 1 << 31, words - (1 << 32), words)
    magnitude = torch.where(signed < 0, -signed - 1, signed)
    return (magnitude.float() * torch.tensor(4.6566127342e-10, dtype=F32, device="cpu")).to(DEVICE)


def triton_i32_key(seed):
    """The key Triton 3 draws with for a Python int passed to a parameter annotated tl.int32 (trident's `seed:
    tl.int32`): the launcher keeps its low 32 bits as a signed int32, and tl.rand sign-extends it to uint64."""
    low = seed & MASK32
    return low | (MASK32 << 32) if low & (1 << 31) else low


def dropout_forward(shape, p, seed):
    """Forward against tl.rand's Philox mask for the seed as Triton passes it (int32): kept where rand > p, scaled by
    1 / (1 - p + eps), eps 2.2e-16 (which float32 loses)."""
    def run():
        _CHOSEN_SEED[0] = seed
        x = torch.randn(*shape)
        y = fn.dropout(x, p)
        keep = rand_reference(triton_i32_key(SEEDS[-1]), x.numel()).reshape(shape) > p
        want = torch.where(keep, x.double() / (1 - p), 0.0)
        yield {"y": (y, want, TOL[F32]), "seed": exact(torch.tensor(SEEDS[-1]), torch.tensor(seed))}
    return run


def dropout_backward(shape, p, as_written):
    """Backward for the forward's own mask: the math is dy * keep / (1 - p); trident's kernel writes
    where(p == 0 or y > 0, dy * (1 - p + eps), 0)."""
    def run():
        x = leaf(torch.randn(*shape))
        y = fn.dropout(x, p)
        keep = rand_reference(triton_i32_key(SEEDS[-1]), x.numel()).reshape(shape) > p
        yield {"y": (y, torch.where(keep, x.detach().double() / (1 - p), 0.0), TOL[F32])}
        dy = torch.randn(*shape)
        (dx,) = torch.autograd.grad(y, x, dy)
        if as_written:
            want = torch.where(y.detach() > 0, dy.double() * (1 - p), 0.0)
        else:
            want = torch.where(keep, dy.double() / (1 - p), 0.0)
        yield {"dx": (dx, want, TOL[F32])}
    return run


case("dropout p 0.3, 37 x 300, seed 1234567 (below 2**31)", dropout_forward((37, 300), 0.3, 1234567),
     stages=("run",))
case("dropout p 0.5, 1000, seed 987654 (below 2**31)", dropout_forward((1000,), 0.5, 987654), stages=("run",))
case("dropout p 0.3, 37 x 300, seed 0x1234567890ab (Triton's i32 parameter keeps its low 32 bits)",
     dropout_forward((37, 300), 0.3, 0x1234567890AB), stages=("run",))
case("dropout p 0.3, 37 x 300, backward as the kernel writes it", dropout_backward((37, 300), 0.3, True))
case("dropout p 0.3, 37 x 300, backward (the math)", dropout_backward((37, 300), 0.3, False),
     library=DROPOUT_BACKWARD)
case("dropout p 0 and p 1, 37 x 300", autograd_case(lambda: [leaf(torch.randn(37, 300))],
                                                     lambda x: (fn.dropout(x, 0.0), fn.dropout(x, 1.0)),
                                                     lambda x: (x * 1.0, x * 0.0)))

# --- report ----------------------------------------------------------------------------------------------------

for i, (name, status, worst, why) in enumerate(results):
    if status == "FAIL" and name in LIBRARY:
        results[i] = (name, "FAIL (library)", worst, f"{LIBRARY[name]}: {why}")
width = max((len(r[0]) for r in results), default=10)
for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:{width}s}  {status:14s}  {err:16s}  {why}")
passed = sum(r[1] == "ok" for r in results)
library = sum(r[1] == "FAIL (library)" for r in results)
print(f"{passed} of {len(results)} lines match; {library} fail by trident's own bugs; "
      f"{len(results) - passed - library} fail otherwise")
if ARGS.json:
    ARGS.json.write_text(json.dumps([{"case": n, "status": s, "worst": None if w != w else w, "text": t}
                                     for n, s, w, t in results], indent=1))
sys.exit(0 if passed + library == len(results) else 1)
