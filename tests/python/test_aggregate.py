"""@tegula.aggregate classes: built in kernels (by their fields or their own
__init__), passed to and returned from @jit functions, carried by loops and
`if`s, read by field, called by method; and the host side of the class."""

import typing
from typing import NamedTuple

import numpy as np
import pytest

import tegula
import tegula.language as tl


@tegula.aggregate
class Rows:
    """A strided view of rows, with the masked load kernels repeat."""

    ptr: tl.tensor
    n: tl.tensor
    BLOCK: tl.constexpr
    scale: tl.constexpr = 2.0

    @tegula.jit
    def load(self, start):
        offs = start + tl.arange(0, self.BLOCK)
        return tl.load(self.ptr + offs, mask=offs < self.n, other=0.0) * self.scale

    def offsets(self, start):  # not @jit: kernels run it as kernel code too
        return start + tl.arange(0, self.BLOCK)

    @staticmethod
    @tegula.jit
    def tripled(ptr, n, BLOCK: tl.constexpr):
        return Rows(ptr, n, BLOCK, scale=3.0)

    @tegula.jit
    def __getitem__(self, i):
        return tl.load(self.ptr + i)


@tegula.aggregate
class Accumulator:
    total: tl.tensor
    count: tl.tensor

    def __init__(self, BLOCK: tl.constexpr):
        self.total = tl.zeros((BLOCK,), tl.float32)
        self.count = 0
        self.count += 0  # an augmented assignment of a field, in __init__

    @tegula.jit
    def add(self, x):
        return tl.aggregate_replace(self, total=self.total + x, count=self.count + 1)


@tegula.jit
def _first_block(rows):
    return rows.load(0)


@tegula.jit
def _sum_blocks(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    rows = Rows(x_ptr, n, BLOCK)
    tripled = Rows.tripled(x_ptr, n, BLOCK)
    acc = Accumulator(BLOCK)
    for start in range(0, n, BLOCK):  # the instance is carried by the loop, field by field
        acc = acc.add(rows.load(start) + tripled.load(start))
    offs = rows.offsets(0)
    tl.store(out_ptr + offs, acc.total + rows[0] + _first_block(rows) * 0.0)
    tl.store(out_ptr + BLOCK, acc.count.to(tl.float32))


@pytest.mark.parametrize("n", [100, 64, 193])
def test_methods_fields_and_loop_carried_instances(backend, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(65, np.nan, np.float32)
    x_d, out_d = backend.array(x), backend.array(out)
    _sum_blocks[(1,)](x_d, out_d, n, BLOCK=64)
    out = backend.numpy(out_d)
    blocks = -(-n // 64)
    padded = np.zeros(blocks * 64, np.float32)
    padded[:n] = x
    expected = (padded.reshape(blocks, 64) * 5.0).sum(0) + x[0]
    np.testing.assert_allclose(out[:64], expected, rtol=1e-5, atol=1e-5)
    assert out[64] == blocks


@tegula.aggregate
class Pair:
    first: tl.tensor
    second: tl.tensor

    @tegula.jit
    def get_first(self):
        return self.first

    def get_second(self, _semantic=None):  # written as Triton's builtins are: _semantic is ignored
        return self.second

    @tegula.jit
    def unpack(self):
        return self.get_first(), self.get_second()

    def __getitem__(self, ind: tl.constexpr, _semantic=None):
        if ind == 0:
            return self.first
        assert ind == 1
        return self.second


@tegula.jit
def _pair_methods(out_ptr):
    pair = Pair(tl.arange(0, 4), 11)
    a, b = pair.unpack()
    tl.store(out_ptr + tl.arange(0, 4), a * 100 + b + pair[1] * 1000 + pair[0])


def test_jit_and_plain_methods_and_getitem():
    out = np.zeros(4, np.int32)
    _pair_methods[(1,)](out)
    np.testing.assert_array_equal(out, np.arange(4) * 101 + 11 + 11000)


@tegula.jit
def _choose(n):
    if n > 0:
        return Pair(n, n * 2)
    return Pair(-n, 0)


@tegula.jit
def _branches(out_ptr, n):
    pair = Pair(1, 2)
    if n > 5:  # a runtime `if` yields the instance's fields
        pair = Pair(n, 3)
    chosen = _choose(n)  # returned from a @jit function's runtime `if`
    tl.store(out_ptr, pair.first + pair.second)
    tl.store(out_ptr + 1, chosen.first + chosen.second * 10)


@pytest.mark.parametrize("n", [7, 3, -4])
def test_instances_through_runtime_control_flow(n):
    out = np.zeros(2, np.int32)
    _branches[(1,)](out, n)
    assert out[0] == (n + 3 if n > 5 else 3)
    assert out[1] == (n + 20 * n if n > 0 else -n)


@tegula.aggregate
class WithConstexpr:
    a: tl.tensor
    b: tl.constexpr

    @staticmethod
    def create(a):
        return WithConstexpr(a, tl.constexpr(42))


@tegula.aggregate
class WithTuple:
    items: tl.tuple

    @staticmethod
    @tegula.jit
    def create(a):
        return WithTuple((a, a + 1))


@tegula.jit
def _add_constexpr(agg):
    tl.static_assert(agg.b == 42)
    return agg.a + agg.b


@tegula.jit
def _constexpr_and_tuple_fields(out_ptr):
    agg = WithConstexpr.create(tl.arange(0, 4))
    t = WithTuple.create(tl.arange(0, 4))
    tl.static_assert(isinstance(agg, WithConstexpr))
    tl.static_assert(not isinstance(agg, WithTuple))
    tl.store(out_ptr + tl.arange(0, 4), _add_constexpr(agg) + t.items[1] * 100)


def test_constexpr_and_tuple_fields_and_isinstance():
    out = np.zeros(4, np.int32)
    _constexpr_and_tuple_fields[(1,)](out)
    np.testing.assert_array_equal(out, np.arange(4) + 42 + (np.arange(4) + 1) * 100)


@tegula.aggregate
class Base:
    x: tl.tensor

    @tegula.jit
    def doubled(self):
        return self.x * 2


@tegula.aggregate
class Derived(Base):
    y: tl.tensor

    @tegula.jit
    def total(self):
        return self.doubled() + self.y


@tegula.aggregate
class Namespace:
    LIMIT = 7  # a class constant, read as Namespace.LIMIT

    @tegula.jit
    def helper():
        return 5


@tegula.jit
def _inheritance(out_ptr):
    d = Derived(3, y=4)
    tl.store(out_ptr, d.total())
    tl.store(out_ptr + 1, Namespace.helper() + Namespace.LIMIT)


def test_inherited_fields_and_methods_and_class_members():
    out = np.zeros(2, np.int32)
    _inheritance[(1,)](out)
    assert list(out) == [10, 12]


# --- errors -------------------------------------------------------------------


def _compile_error(kernel, *args):
    with pytest.raises(tegula.CompilationError) as e:
        kernel[(1,)](*args)
    return str(e.value)


@tegula.jit
def _assign_field(o):
    pair = Pair(tl.arange(0, 4), 11)
    pair.second = 42


@tegula.jit
def _augassign_field(o):
    pair = Pair(tl.arange(0, 4), 11)
    pair.second += 42


@tegula.jit
def _assign_item(o):
    pair = Pair(tl.arange(0, 4), 11)
    pair[1] = 42


@tegula.jit
def _unpack(o):
    pair = Pair(tl.arange(0, 4), 11)
    a, b = pair


@pytest.mark.parametrize("kernel, words", [
    (_assign_field, "the fields of `Pair` are set only in its __init__"),
    (_augassign_field, "the fields of `Pair` are set only in its __init__"),
    (_assign_item, "an instance of `Pair` cannot be assigned to by index"),
    (_unpack, "cannot unpack an instance of `Pair`"),
])
def test_instances_are_immutable(kernel, words):
    message = _compile_error(kernel, np.zeros(1, np.int32))
    assert words in message
    if "__init__" in words:
        assert "tl.aggregate_replace(pair, second=...)" in message


@tegula.aggregate
class Incomplete:
    a: tl.tensor
    b: tl.tensor

    def __init__(self, a):
        self.a = a


@tegula.aggregate
class ReadsEarly:
    a: tl.tensor
    b: tl.tensor

    def __init__(self, a):
        self.b = self.a + a
        self.a = a


@tegula.jit
def _incomplete(o):
    x = Incomplete(1)


@tegula.jit
def _reads_early(o):
    x = ReadsEarly(1)


@tegula.jit
def _unknown_field(o):
    x = Pair(1, 2, third=3)


@tegula.jit
def _missing_field(o):
    x = Pair(1)


@tegula.jit
def _too_many(o):
    x = Pair(1, 2, 3)


@tegula.jit
def _runtime_constexpr_field(o, n):
    x = WithConstexpr(1, n)


@tegula.jit
def _no_such_member(o):
    x = Pair(1, 2)
    y = x.third


@tegula.jit
def _not_indexable(o):
    d = Derived(1, 2)
    y = d[0]


@tegula.jit
def _mixed_classes(o, n):
    p = Pair(1, 2)
    if n > 0:
        p = Derived(1, 2)
    tl.store(o, p.x)


@tegula.jit
def _replace_unknown(o):
    p = tl.aggregate_replace(Pair(1, 2), third=3)


@tegula.jit
def _replace_not_aggregate(o):
    p = tl.aggregate_replace((1, 2), first=3)


@pytest.mark.parametrize("kernel, words", [
    (_incomplete, "the __init__ of `Incomplete` does not set the field `b`"),
    (_reads_early, "the field `a` of `ReadsEarly` is read before __init__ sets it"),
    (_unknown_field, "`Pair` has no field named `third`"),
    (_missing_field, "`Pair` is missing the field `second`"),
    (_too_many, "`Pair` takes 2 fields but 3 were given"),
    (_runtime_constexpr_field, "the field `b` of `WithConstexpr` is a tl.constexpr but receives"),
    (_no_such_member, "`Pair` has no field or method named `third`"),
    (_not_indexable, "an instance of `Derived` cannot be indexed"),
    (_mixed_classes, "p"),
    (_replace_unknown, "`Pair` has no field named `third`"),
    (_replace_not_aggregate, "tl.aggregate_replace takes an instance of an @aggregate class"),
])
def test_errors_name_the_class_and_the_field(kernel, words):
    message = _compile_error(kernel, np.zeros(1, np.int32), 3) if "n" in kernel.arg_names else \
        _compile_error(kernel, np.zeros(1, np.int32))
    assert words in message
    assert "error[E" in message


@tegula.aggregate
class Square:
    x: tl.tensor

    @tegula.constexpr_function
    def __init__(self, x):
        self.x = x

    @tegula.must_use_result
    @tegula.jit
    def compute(self):
        return self.x * self.x


@tegula.jit
def _square_unused(o):
    a = Square(tl.full((4,), 3.0, tl.float32))
    a.compute()


@tegula.jit
def _square_used(o):
    a = Square(tl.full((4,), 3.0, tl.float32))
    tl.store(o + tl.arange(0, 4), a.compute())


def test_must_use_result_method_and_constexpr_function_init():
    assert "The result of a.compute is not being used" in _compile_error(_square_unused, np.zeros(4, np.float32))
    out = np.zeros(4, np.float32)
    _square_used[(1,)](out)
    np.testing.assert_array_equal(out, np.full(4, 9.0, np.float32))


# --- instances built on the host and passed to a kernel ------------------------------------------


@tegula.jit
def _relu(x):
    return tl.maximum(x, 0.0)


@tegula.aggregate
class Epilogue:
    bias_ptr: tl.tensor
    scale: tl.tensor
    HAS_BIAS: tl.constexpr
    activation: tl.constexpr = None

    @tegula.jit
    def apply(self, acc, cols, mask):
        if self.HAS_BIAS:
            acc += tl.load(self.bias_ptr + cols, mask=mask, other=0.0)
        acc = acc * self.scale
        if self.activation is not None:
            acc = self.activation(acc)
        return acc


@tegula.aggregate
class ShiftedEpilogue(Epilogue):
    shift: tl.tensor

    @tegula.jit
    def apply(self, acc, cols, mask):
        return Epilogue.apply(self, acc, cols, mask) + self.shift


@tegula.jit
def _with_epilogue(x_ptr, out_ptr, n, epilogue: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + cols, mask=mask)
    tl.store(out_ptr + cols, epilogue.apply(x, cols, mask), mask=mask)


def test_a_host_built_instance_lifts_runtime_fields_and_bakes_constexprs(backend):
    n = 1000
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    x_d, bias_d = backend.array(x), backend.array(bias)
    out_d = backend.array(np.full(n, np.nan, np.float32))
    grid = (tegula.cdiv(n, 128),)
    _with_epilogue[grid](x_d, out_d, n, Epilogue(bias_d, 2.5, True), BLOCK=128)
    np.testing.assert_allclose(backend.numpy(out_d), (x + bias) * 2.5, rtol=1e-6)
    runs = tegula.runtime_stats()["frontend_runs"]
    _with_epilogue[grid](x_d, out_d, n, Epilogue(bias_d, 0.5, True), BLOCK=128)  # a runtime field: same kernel
    np.testing.assert_allclose(backend.numpy(out_d), (x + bias) * 0.5, rtol=1e-6)
    assert tegula.runtime_stats()["frontend_runs"] == runs
    _with_epilogue[grid](x_d, out_d, n, Epilogue(None, 3.0, False, _relu), BLOCK=128)  # constexprs: a new one
    np.testing.assert_allclose(backend.numpy(out_d), np.maximum(x * 3.0, 0.0), rtol=1e-6)
    _with_epilogue[grid](x_d, out_d, n, ShiftedEpilogue(bias_d, 2.0, True, None, -1.0), BLOCK=128)
    np.testing.assert_allclose(backend.numpy(out_d), (x + bias) * 2.0 - 1.0, rtol=1e-6)


@tegula.aggregate
class Span:
    ptr: tl.tensor
    n: tl.tensor


@tegula.aggregate
class Copy:
    src: Span
    dst: Span
    BLOCK: tl.constexpr


@tegula.jit
def _copy(job, extra):
    offs = tl.arange(0, job.BLOCK)
    mask = offs < job.src.n
    tl.store(job.dst.ptr + offs, tl.load(job.src.ptr + offs, mask=mask) + extra[1].n, mask=mask)


def test_nested_instances_and_instances_in_tuples_to_runtime_parameters():
    src = np.arange(50, dtype=np.float32)
    dst = np.zeros(64, np.float32)
    _copy[(1,)](Copy(Span(src, 50), Span(dst, 50), 64), (0, Span(src, 7)))
    np.testing.assert_array_equal(dst[:50], src + 7)
    assert not dst[50:].any()


def test_a_host_instance_field_declared_constexpr_cannot_hold_an_array():
    @tegula.aggregate
    class Wrong:
        ptr: tl.constexpr

    @tegula.jit
    def k(w):
        tl.store(w.ptr, 1.0)

    with pytest.raises(TypeError, match="constexpr argument"):
        k[(1,)](Wrong(np.zeros(1, np.float32)))


@tegula.aggregate
class _Swappable:
    v: tl.tensor

    @tegula.jit
    def value(self):
        return self.v + 1


@tegula.jit
def _swappable(out_ptr):
    tl.store(out_ptr, _Swappable(10).value())


def test_a_rebound_class_recompiles_and_the_same_one_does_not(monkeypatch):
    out = np.zeros(1, np.int32)
    _swappable[(1,)](out)
    assert out[0] == 11
    runs = tegula.runtime_stats()["frontend_runs"]
    _swappable[(1,)](out)  # the same class: the compiled kernel
    assert tegula.runtime_stats()["frontend_runs"] == runs

    @tegula.aggregate
    class _Swappable2:
        v: tl.tensor

        @tegula.jit
        def value(self):
            return self.v * 3

    monkeypatch.setitem(globals(), "_Swappable", _Swappable2)
    _swappable[(1,)](out)
    assert out[0] == 30


# --- the host side of the class -------------------------------------------------


def test_host_construction_by_position_keyword_and_default():
    @tegula.aggregate
    class State:
        x: tl.constexpr
        y: tl.constexpr
        z: int = 5

    state = State(3, y=7)
    assert isinstance(state.x, tl.constexpr) and state.x.value == 3
    assert state.y.value == 7 and state.z == 5
    assert State.__aggregate_fields__ == ("x", "y", "z")
    with pytest.raises(TypeError, match="missing the field 'y'"):
        State(1)
    with pytest.raises(TypeError, match="has no field 'w'"):
        State(1, 2, w=3)
    with pytest.raises(TypeError, match="multiple values for the field 'x'"):
        State(1, 2, x=3)
    with pytest.raises(TypeError, match="takes 3 fields but 4 were given"):
        State(1, 2, 3, 4)


def test_host_tuples_are_language_tuples():
    class Shape(NamedTuple):
        x: int
        y: int

    @tegula.aggregate
    class State:
        shape: tl.tuple
        strides: tl.tuple

    state = State(Shape(3, 7), (7, 1))
    assert isinstance(state.shape, tl.tuple) and state.shape.x == 3 and state.shape[1] == 7
    assert isinstance(state.strides, tl.tuple) and tuple(state.strides) == (7, 1)


def test_host_instances_are_immutable_and_replace_copies():
    @tegula.aggregate
    class State:
        x: int
        y: int

        def __init__(self, x):
            self.x = x + 1
            self.y = 0

    state = State(10)
    assert (state.x, state.y) == (11, 0)
    with pytest.raises(AttributeError, match="set only in __init__"):
        state.x = 3
    with pytest.raises(AttributeError, match="has no field 'z'"):
        State.__setattr__(state, "z", 3)
    changed = tl.aggregate_replace(state, y=4)
    assert (changed.x, changed.y, state.y) == (11, 4, 0)
    with pytest.raises(TypeError, match="has no field 'w'"):
        tl.aggregate_replace(state, w=1)
    with pytest.raises(TypeError, match="expects an aggregate instance"):
        tl.aggregate_replace((1, 2), x=1)


def test_host_init_must_set_every_field_and_bases_must_be_aggregates():
    @tegula.aggregate
    class Partial:
        x: int
        y: int

        def __init__(self):
            self.x = 1

    with pytest.raises(AttributeError, match="did not set the field 'y'"):
        Partial()

    class Plain:
        pass

    with pytest.raises(TypeError, match="is not an aggregate"):
        @tegula.aggregate
        class Bad(Plain):
            x: int
    with pytest.raises(TypeError, match="decorates a class"):
        tegula.aggregate(lambda: 0)


# --- found by hostile inputs --------------------------------------------------------------------


@tegula.aggregate
class _Counter:
    ptr: tl.tensor
    n: tl.tensor


def test_autotune_restores_arrays_inside_instances_and_keys_them_by_class():
    @tegula.autotune(configs=[tegula.Config({"BLOCK": b}) for b in (16, 32, 64, 128)], key=["c"], warmup=1, rep=1,
                     cache_results=False)
    @tegula.jit
    def bump(c, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < c.n
        tl.store(c.ptr + offs, tl.load(c.ptr + offs, mask=mask) + 1, mask=mask)  # in place: saved while tuning

    x = np.zeros(100, np.float32)
    for _ in range(3):
        bump[(1,)](_Counter(x, 10))
    np.testing.assert_array_equal(x[:10], 3.0)  # one update per launch, none per trial
    assert len(bump.cache) == 1  # keyed by the class and its fields' shapes and dtypes, not their values


@tegula.jit
def _loop_with_none_field(e, out_ptr, n):
    for _ in range(n):  # a None field is part of the instance's structure, the same on every path
        e = tl.aggregate_replace(e, scale=e.scale + 1)
    if n > 2:
        e = tl.aggregate_replace(e, scale=e.scale * 2)
    tl.store(out_ptr, e.scale)


def test_instances_with_none_fields_cross_loops_and_ifs():
    out = np.zeros(1, np.int32)
    _loop_with_none_field[(1,)](Epilogue(None, 7, False), out, 3)
    assert out[0] == 20


@tegula.jit
def _collides(t, t__0, out_ptr):
    tl.store(out_ptr, t.n * 1000 + t__0)


def test_a_parameter_named_like_a_lifted_field():
    out = np.zeros(1, np.int32)
    _collides[(1,)](_Counter(out, 4), 321, out)
    assert out[0] == 4321


def test_applying_aggregate_twice_keeps_the_classs_init():
    @tegula.aggregate
    @tegula.aggregate
    class Twice:
        x: tl.tensor

        def __init__(self, x):
            self.x = x * 2

    assert Twice(5).x == 10


def test_a_method_replaced_on_the_class_recompiles(monkeypatch):
    @tegula.aggregate
    class Scaled:
        v: tl.tensor

        @tegula.jit
        def get(self):
            return self.v * 2

    @tegula.jit
    def k(s, out_ptr):
        tl.store(out_ptr, s.get())

    @tegula.jit
    def times3(self):
        return self.v * 3

    out = np.zeros(1, np.int32)
    k[(1,)](Scaled(5), out)
    assert out[0] == 10
    monkeypatch.setattr(Scaled, "get", times3)
    k[(1,)](Scaled(5), out)
    assert out[0] == 15


def test_class_level_declarations():
    @tegula.aggregate
    class Declared:
        x: "tl.constexpr"  # a string annotation is read as written
        LIMIT: typing.ClassVar[int] = 3  # a class attribute, not a field

        @property
        def doubled(self):
            return self.x * 2

    assert Declared.__aggregate_fields__ == ("x",)
    assert isinstance(Declared(4).x, tl.constexpr)

    @tegula.jit
    def k(d, out_ptr):
        tl.store(out_ptr, d.doubled)

    with pytest.raises(tegula.CompilationError, match="a property of Declared"):
        k[(1,)](Declared(4), np.zeros(1, np.int32))
    with pytest.raises(TypeError, match="remove __slots__"):
        @tegula.aggregate
        class Slotted:
            __slots__ = ("x",)
            x: int


@tegula.jit
def _is_base(out_ptr):
    d = Derived(1, 2)
    tl.store(out_ptr, isinstance(d, Base) + 2 * isinstance(Base(1), Derived))


def test_isinstance_sees_base_classes():
    out = np.zeros(1, np.int32)
    _is_base[(1,)](out)
    assert out[0] == 1


def test_an_instance_missing_a_field_is_named():
    broken = object.__new__(_Counter)
    with pytest.raises(TypeError, match="no value for its field 'ptr'"):
        _copy[(1,)](broken, (0, Span(np.zeros(1, np.float32), 1)))


@tegula.aggregate
class _ScaledBase:
    ptr: tl.tensor
    SCALE: tl.constexpr = tl.constexpr(3.0)  # a tl.constexpr default (callable, yet a default)

    @tegula.constexpr_function
    def doubled_scale(self):
        return self.SCALE * 2


@tegula.aggregate
class _Scaled(_ScaledBase):
    n: tl.tensor


@tegula.jit
def _scaled_copy(view, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < view.n
    tl.store(out_ptr + offs, tl.load(view.ptr + offs, mask=mask) * view.SCALE, mask=mask)


@pytest.mark.parametrize("n", [1, 77])
def test_constexpr_defaults_inherited_and_constexpr_function_methods(backend, n):
    assert _Scaled(None, n=4).SCALE.value == 3.0  # the base's default, its field given by keyword
    assert _ScaledBase(None).doubled_scale() == 6.0  # a constexpr_function method binds its instance
    assert _Scaled(None, 9.0, 4).doubled_scale() == 18.0  # ...inherited too
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    out = backend.zeros(n, np.float32)
    _scaled_copy[(1,)](_Scaled(backend.array(x), n=n), out, BLOCK=128)
    np.testing.assert_array_equal(backend.numpy(out), x * np.float32(3.0))


def test_numbers_in_host_tuple_fields_are_constexprs():
    class Shape(NamedTuple):
        x: int
        y: int

    @tegula.aggregate
    class State:
        shape: tl.tuple

    state = State(Shape(3, tl.constexpr(7)))
    assert isinstance(state.shape.x, tl.constexpr) and state.shape.x.value == 3
    assert isinstance(state.shape[1], tl.constexpr) and state.shape[1].value == 7
