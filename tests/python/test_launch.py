"""Launch-time argument handling: grid forms, array kinds, and every error a
wrong launch gets (type and exact text)."""

import enum
import re
import sys

import numpy as np
import pytest

import tegula
import tegula.language as tl
from vector_add import add_kernel


@tegula.jit(do_not_specialize=["n"])
def fill_kernel(out_ptr, value, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32) + value, mask=offs < n)


def _arrays(n=100, dtype=np.float32):
    x = np.arange(n, dtype=dtype)
    return x, x[::-1].copy(), np.zeros(n, dtype=dtype)


# --- grid forms ------------------------------------------------------------------


@pytest.mark.parametrize("grid", [(1,), [1], (1, 1), [1, 1, 1], 1])
def test_grid_literals(grid):
    x, y, out = _arrays()
    add_kernel[grid](x, y, out, 100, BLOCK=128)
    np.testing.assert_array_equal(out, x + y)


def test_grid_callable_sees_bound_arguments():
    x, y, out = _arrays(1000)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (tegula.cdiv(meta["n"], meta["BLOCK"]),)

    add_kernel[grid](x, y, out, 1000, BLOCK=256)
    np.testing.assert_array_equal(out, x + y)
    assert seen["BLOCK"] == 256 and seen["n"] == 1000 and seen["x_ptr"] is x


def test_launch_options_are_accepted_and_shown_to_the_grid():
    x, y, out = _arrays()
    add_kernel[lambda meta: (1,) if meta["num_warps"] == 8 else (0,)](
        x, y, out, 100, BLOCK=128, num_warps=8, num_stages=2)
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes (add_note) are Python 3.11's")
@pytest.mark.parametrize("key, hint", [("BLOCK_SIZE", "; did you mean 'BLOCK'?"), ("BLOK", "; did you mean 'BLOCK'?"),
                                       ("unrelated", "")])
def test_a_grid_function_asking_a_name_meta_lacks_gets_a_note(key, hint):
    """The KeyError stays the grid function's own (type, text, a caller may catch it); a note names the kernel,
    what META holds and the nearest name."""
    x, y, out = _arrays()
    with pytest.raises(KeyError) as caught:
        add_kernel[lambda meta: (tegula.cdiv(meta["n"], meta[key]),)](x, y, out, 100, BLOCK=128, num_warps=4)
    assert caught.value.args == (key,)
    assert caught.value.__notes__ == [
        f"the grid function of kernel 'add_kernel' looked up '{key}' in its META, which holds the launch's arguments "
        f"and options by name (x_ptr, y_ptr, out_ptr, n, BLOCK, num_warps){hint}"]
    own = {}
    with pytest.raises(KeyError) as caught:  # a KeyError of the function's own dict, for a name META holds
        add_kernel[lambda meta: (own["n"],)](x, y, out, 100, BLOCK=128)
    assert not getattr(caught.value, "__notes__", None)


@pytest.mark.parametrize("grid, message", [
    ((-1,), "the grid of kernel 'add_kernel' must hold ints >= 0, got (-1,)"),
    ((1, 1, 1, 1), "the grid of kernel 'add_kernel' must be a tuple of 1 to 3 ints (or a "
                   "callable returning one), got (1, 1, 1, 1)"),
    ((), "the grid of kernel 'add_kernel' must be a tuple of 1 to 3 ints"),
    ((1.5,), "the grid of kernel 'add_kernel' must hold ints, got float in (1.5,)"),
    (lambda meta: None, "the grid of kernel 'add_kernel' must be a tuple of 1 to 3 ints"),
])
def test_bad_grids(grid, message):
    x, y, out = _arrays()
    with pytest.raises(ValueError, match=re.escape(message)):
        add_kernel[grid](x, y, out, 100, BLOCK=128)


# --- argument kinds -----------------------------------------------------------------


class DLPackOnly:
    """Exposes an array through the DLPack protocol only."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_dlpack_producers():
    x, y, out = _arrays(300)
    add_kernel[(3,)](DLPackOnly(x), DLPackOnly(y), DLPackOnly(out), 300, BLOCK=128)
    np.testing.assert_array_equal(out, x + y)


def test_keyword_arguments_and_numpy_scalars():
    x, y, out = _arrays()
    add_kernel[(1,)](y_ptr=y, x_ptr=x, out_ptr=out, n=np.int64(100), BLOCK=np.int32(128))
    np.testing.assert_array_equal(out, x + y)


def test_float_scalar_argument_and_do_not_specialize():
    out = np.zeros(100, dtype=np.float32)
    for n in (1, 16, 50):
        fill_kernel[(1,)](out, 2.5, n, BLOCK=128)
    assert len(fill_kernel._launcher) == 1  # `n` never specializes
    np.testing.assert_array_equal(out[:50], 2.5)
    np.testing.assert_array_equal(out[50:], 0.0)


def test_bfloat16_arrays():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.linspace(-4, 4, 200).astype(ml_dtypes.bfloat16)
    out = np.zeros_like(x)
    add_kernel[(2,)](x, x, out, 200, BLOCK=128)
    tegula.testing.assert_close(out, (x.astype(np.float32) * 2).astype(ml_dtypes.bfloat16))


def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    x = torch.arange(300, dtype=torch.float32)
    y = torch.ones(300, dtype=torch.float32)
    out = torch.empty(300, dtype=torch.float32)
    add_kernel[(3,)](x, y, out, 300, BLOCK=128)
    tegula.testing.assert_close(out, x + y)


# --- launch errors --------------------------------------------------------------------


class FakeDevice:
    type = "cuda"

    def __str__(self):
        return "cuda:0"


class FakeCudaTensor:
    """Looks like a torch.Tensor on a GPU."""

    dtype = "torch.float32"
    device = FakeDevice()

    def data_ptr(self):
        return 1 << 20


def test_too_many_arguments():
    x, y, out = _arrays()
    with pytest.raises(TypeError, match=re.escape(
            "kernel 'add_kernel' takes 5 arguments (x_ptr, y_ptr, out_ptr, n, BLOCK) but 6 were given")):
        add_kernel[(1,)](x, y, out, 100, 128, 7)


def test_missing_argument():
    x, y, out = _arrays()
    with pytest.raises(TypeError, match=re.escape(
            "kernel 'add_kernel' is missing 1 required argument: 'BLOCK'")):
        add_kernel[(1,)](x, y, out, 100)


def test_unknown_keyword():
    x, y, out = _arrays()
    with pytest.raises(TypeError, match=re.escape(
            "kernel 'add_kernel' got an unexpected keyword argument 'BLOK'; did you mean 'BLOCK'?")):
        add_kernel[(1,)](x, y, out, 100, BLOK=128)
    # Launch options are candidates too; a word near nothing gets no guess.
    with pytest.raises(TypeError, match=re.escape("argument 'num_warp'; did you mean 'num_warps'?")):
        add_kernel[(1,)](x, y, out, 100, BLOCK=128, num_warp=4)
    with pytest.raises(TypeError) as info:
        add_kernel[(1,)](x, y, out, 100, BLOCK=128, verbosity=2)
    assert str(info.value).endswith("got an unexpected keyword argument 'verbosity'")


def test_duplicate_argument():
    x, y, out = _arrays()
    with pytest.raises(TypeError, match=re.escape(
            "kernel 'add_kernel' got multiple values for argument 'x_ptr'")):
        add_kernel[(1,)](x, y, out, 100, x_ptr=x, BLOCK=128)


def test_list_where_pointer_expected():
    _, y, out = _arrays()
    with pytest.raises(TypeError, match=re.escape(
            "argument 'x_ptr' of kernel 'add_kernel' must be an array or a scalar, got list")):
        add_kernel[(1,)]([1.0, 2.0], y, out, 2, BLOCK=128)


def test_unsupported_dtype():
    _, _, out = _arrays()
    z = np.zeros(100, dtype=np.complex64)
    with pytest.raises(TypeError, match=re.escape(
            "argument 'y_ptr' of kernel 'add_kernel' has unsupported dtype complex64; supported: bool,")):
        add_kernel[(1,)](out, z, out, 100, BLOCK=128)


def test_a_look_alike_whose_dtype_is_a_bare_name_is_told_so():
    class NamedDtype(FakeCudaTensor):
        dtype = "float32"  # the message must not list it as supported and refuse it in one breath

    _, y, out = _arrays()
    with pytest.raises(TypeError, match=re.escape(
            "argument 'x_ptr' of kernel 'add_kernel' has dtype 'float32' given as a str, not as a torch dtype")):
        add_kernel[(1,)](NamedDtype(), y, out, 100, BLOCK=128)


def test_tensors_without_one_buffer_are_refused_by_name():
    torch = pytest.importorskip("torch")
    x, y, _ = _arrays()
    jagged = torch.nested.nested_tensor([torch.zeros(1), torch.zeros(2)], layout=torch.jagged)
    with pytest.raises(TypeError, match=re.escape(
            "argument 'out_ptr' of kernel 'add_kernel' is a nested tensor (torch.nested), whose rows are no "
            "single array")):
        add_kernel[(1,)](x, y, jagged, 3, BLOCK=128)
    sparse = torch.zeros(100).to_sparse()
    with pytest.raises(TypeError, match=re.escape(
            "argument 'out_ptr' of kernel 'add_kernel' has no data pointer (RuntimeError: ")):
        add_kernel[(1,)](x, y, sparse, 100, BLOCK=128)
    with pytest.raises(TypeError, match=re.escape(
            "argument 'out_ptr' of kernel 'add_kernel' has 100 elements but data_ptr() is 0 (no memory)")):
        add_kernel[(1,)](x, y, torch.zeros(100, device="meta"), 100, BLOCK=128)


def test_negated_views_are_refused_and_their_resolved_copies_run():
    # x.conj().imag and torch._neg_view(x) share x's memory and flip the sign
    # as torch reads them; data_ptr() and DLPack hand that memory out as it
    # is, so a kernel would read (and write) the values with the wrong sign.
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    base = torch.from_numpy(rng.standard_normal(100).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal(100).astype(np.float32))
    out = torch.empty(100)
    add_kernel[(1,)](base, y, out, 100, BLOCK=128)  # a plain tensor first: the launcher's fast path is warm
    imag = torch.complex(y, base).conj().imag  # -base, through the negative bit
    negated = {"_neg_view": torch._neg_view(base), "conj().imag": imag, "detach": torch._neg_view(base).detach(),
               "Parameter": torch.nn.Parameter(torch._neg_view(base), requires_grad=False)}
    for name, view in negated.items():
        assert view.is_neg(), name
        with pytest.raises(TypeError, match=re.escape(
                "argument 'x_ptr' of kernel 'add_kernel' is a negated view (its is_neg() is true")):
            add_kernel[(1,)](view, y, out, 100, BLOCK=128)
        with pytest.raises(TypeError, match=re.escape("argument 'out_ptr' of kernel 'add_kernel' is a negated view")):
            add_kernel[(1,)](y, y, view, 100, BLOCK=128)
        add_kernel[(1,)](view.resolve_neg(), y, out, 100, BLOCK=128)
        np.testing.assert_allclose(out.numpy(), y.numpy() - base.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(torch._neg_view(base).resolve_neg().numpy(), -base.numpy())


class AddressLike:
    """Looks like a CPU tensor, with whatever data_ptr() answers."""

    dtype = "torch.float32"
    device = "cpu"

    def __init__(self, answer):
        self.answer = answer

    def data_ptr(self):
        return self.answer


@pytest.mark.parametrize("answer, shown", [(-5, "-5 (int)"), ("abc", "abc (str)"), (2**70, f"{2**70} (int)")])
def test_a_data_ptr_that_is_no_address_is_refused(answer, shown):
    x, y, _ = _arrays()
    with pytest.raises(TypeError, match=re.escape(
            f"argument 'out_ptr' of kernel 'add_kernel': data_ptr() returned {shown}, not an address")):
        add_kernel[(1,)](x, y, AddressLike(answer), 100, BLOCK=128)


def test_int_too_large():
    x, y, out = _arrays()
    with pytest.raises(ValueError, match=re.escape(
            "argument 'n' of kernel 'add_kernel' is 18446744073709551616, which does not fit in 64 bits")):
        add_kernel[(1,)](x, y, out, 2**64, BLOCK=128)


def test_arguments_on_different_devices():
    x, _, out = _arrays()
    with pytest.raises(ValueError, match=re.escape(
            "kernel 'add_kernel' got arguments on different devices ('x_ptr', 'out_ptr' on the CPU; "
            "'y_ptr' on cuda:0): move them to one device")):
        add_kernel[(1,)](x, FakeCudaTensor(), out, 100, BLOCK=128)


def test_bad_constexpr_value():
    x, y, out = _arrays()
    with pytest.raises(TypeError, match=re.escape(
            "constexpr argument 'BLOCK' of kernel 'add_kernel' must be an int, float, bool, str, "
            "None, tl.dtype, a function of the tile language, a @jit function, a tuple of them or another "
            "hashable value the kernel does not use, got list")):
        add_kernel[(1,)](x, y, out, 100, BLOCK=[128])


@tegula.jit
def _print_named(x_ptr, NAME: tl.constexpr):
    tl.device_print(NAME, tl.load(x_ptr))


def test_a_str_constexpr_that_is_not_unicode_text_is_refused():
    x, _, _ = _arrays()
    with pytest.raises(ValueError, match=re.escape(
            "constexpr argument 'NAME' of kernel '_print_named' is a str that is not valid Unicode text")) as info:
        _print_named[(1,)](x, "a\udc80b")  # os.fsdecode(b"a\x80b")
    assert info.value.code == "E0702"


class _Mode(enum.IntEnum):
    PLAIN = 0
    SCALED = 1


class _Name(str, enum.Enum):
    TWICE = "twice"


class _Factor(float, enum.Enum):
    HALF = 0.5


@tegula.jit
def _mode_kernel(x_ptr, out_ptr, n, MODE: tl.constexpr, NAME: tl.constexpr, FACTOR: tl.constexpr,
                 BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if MODE == 1:
        x = x * FACTOR
    if NAME == "twice":
        x = x * 2
    tl.store(out_ptr + offs, x, mask=offs < n)


def test_int_float_and_str_subclasses_are_their_values():
    """An IntEnum member (vLLM passes its attention kernels' KV-cache mode so), a str or float enum member: a
    constexpr of the member's plain value, which the kernel compares as such and which shares its
    specialization; an IntEnum runtime argument is its int."""
    x = np.random.default_rng(3).standard_normal(37).astype(np.float32)
    out = np.zeros_like(x)
    compiled = _mode_kernel[(1,)](x, out, _Mode.SCALED + 36, MODE=_Mode.SCALED, NAME=_Name.TWICE,
                                  FACTOR=_Factor.HALF, BLOCK=64)
    np.testing.assert_array_equal(out, x * np.float32(0.5) * 2)
    out[:] = 0
    assert _mode_kernel[(1,)](x, out, 37, MODE=1, NAME="twice", FACTOR=0.5, BLOCK=64) is compiled
    np.testing.assert_array_equal(out, x * np.float32(0.5) * 2)
    _mode_kernel[(1,)](x, out, 37, MODE=_Mode.PLAIN, NAME="once", FACTOR=_Factor.HALF, BLOCK=64)
    np.testing.assert_array_equal(out, x)


def test_bad_launch_option():
    x, y, out = _arrays()
    with pytest.raises(ValueError, match=re.escape(
            "num_warps of kernel 'add_kernel' must be a positive int, got 0")):
        add_kernel[(1,)](x, y, out, 100, BLOCK=128, num_warps=0)


def test_calling_a_kernel_directly():
    with pytest.raises(TypeError, match=re.escape(
            "kernel 'add_kernel' cannot be called like a Python function; launch it with a grid: "
            "add_kernel[grid](...)")):
        add_kernel(1, 2, 3)


def test_unknown_do_not_specialize_name():
    @tegula.jit(do_not_specialize=["m"])
    def k(x_ptr, n):
        tl.store(x_ptr, n)

    with pytest.raises(ValueError, match=re.escape(
            "do_not_specialize of kernel 'k' names 'm', which is not one of its parameters (x_ptr, n)")):
        k[(1,)](np.zeros(1, dtype=np.int32), 3)


@pytest.mark.parametrize("option", ["do_not_specialize", "do_not_specialize_on_alignment"])
def test_constexpr_listed_as_not_specialized(option):
    # A tl.constexpr is compiled into the kernel: listing it is a mistake, named at the launch (by name or index).
    @tegula.jit(**{option: ["N"]})
    def k(x_ptr, N: tl.constexpr):
        tl.store(x_ptr, N)

    @tegula.jit(**{option: [1]})
    def k_by_index(x_ptr, N: tl.constexpr):
        tl.store(x_ptr, N)

    # A CompilationError, as Triton's, from a launch and from tegula.compile alike; its cause is the ValueError.
    for kernel in (k, k_by_index):
        message = re.escape(f"N marked as constexpr and listed in {option} of kernel '{kernel.__name__}'")
        with pytest.raises(tegula.CompilationError, match=message) as e:
            kernel[(1,)](np.zeros(1, dtype=np.int32), 5)
        assert e.value.code == "E0708" and "drop it from" in str(e.value)
        assert isinstance(e.value.__cause__, ValueError)
        source = tegula.compiler.ASTSource(fn=kernel, signature={"x_ptr": "*i32"}, constexprs={"N": 5})
        with pytest.raises(tegula.CompilationError, match=message):
            tegula.compiler.compile(source)
