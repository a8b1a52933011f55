"""Parameter sweeps in the style of ``triton.testing.perf_report``.

    @tegula.testing.perf_report(tegula.testing.Benchmark(
        x_names=["size"], x_vals=[2**i for i in range(12, 20)], x_log=True,
        line_arg="provider", line_vals=["tegula", "numpy"], line_names=["Tegula", "NumPy"],
        plot_name="vector-add", args={}, ylabel="GB/s"))
    def bench(size, provider):
        ...
        return gbps                      # or (value, low, high)

    bench.run(print_data=True, save_path="results")

Each point calls the function with the x values, one line value and the fixed
``args``; it returns a number, or a ``(value, low, high)`` triple (shaded in
the plot). ``run`` prints a table, writes ``<plot_name>.csv`` and, when
matplotlib is installed, ``<plot_name>.png`` into ``save_path`` (without it,
a RuntimeWarning says the PNG was not drawn). Nothing here
needs pandas; ``run(return_df=True)`` returns DataFrames when it is there.
"""

from __future__ import annotations

import csv
import math
import numbers
import os
import warnings

__all__ = ["Benchmark", "Mark", "perf_report"]


class Benchmark:
    """One sweep: the x axis (``x_names`` over ``x_vals``), one line per value of
    ``line_arg`` (``line_vals``, labelled ``line_names``), fixed ``args``."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args=None,
                 xlabel="", ylabel="", x_log=False, y_log=False, styles=None, color=None):
        if isinstance(x_names, str):
            x_names = [x_names]
        self.x_names = list(x_names)
        self.x_vals = list(x_vals)
        self.line_arg = line_arg
        self.line_vals = list(line_vals)
        self.line_names = [str(name) for name in line_names]
        self.plot_name = str(plot_name)
        self.args = dict(args or {})
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.x_log = x_log
        self.y_log = y_log
        self.styles = list(styles) if styles is not None else None
        self.color = color
        if not self.x_names:
            raise ValueError("Benchmark needs at least one name in x_names")
        if len(self.line_names) != len(self.line_vals):
            raise ValueError(f"Benchmark '{self.plot_name}' has {len(self.line_vals)} line_vals but "
                             f"{len(self.line_names)} line_names; give one name per value")
        if self.styles is not None and len(self.styles) < len(self.line_vals):  # extra ones go unused, as in Triton
            raise ValueError(f"Benchmark '{self.plot_name}' has {len(self.styles)} styles for "
                             f"{len(self.line_vals)} lines; give one style per line")
        if not self.plot_name or os.sep in self.plot_name or self.plot_name in (".", ".."):
            raise ValueError(f"plot_name names the output files, so it must be a plain file name, "
                             f"got {plot_name!r}")
        for x in self.x_vals:
            if isinstance(x, (list, tuple)) and len(x) != len(self.x_names):
                raise ValueError(f"Benchmark '{self.plot_name}': the x value {x!r} has {len(x)} "
                                 f"entries for {len(self.x_names)} x_names")

    def x_args(self, x) -> dict:
        """The keyword arguments of point ``x``: one value per x name, or the same value for all."""
        if isinstance(x, (list, tuple)):
            return dict(zip(self.x_names, x))
        return {name: x for name in self.x_names}


class Table:
    """The results of one Benchmark: one row per x value, one column per line
    (plus ``<line>-min`` / ``<line>-max`` where the function returned a triple)."""

    def __init__(self, bench: Benchmark):
        self.bench = bench
        self.rows = []   # [x values..., value per line...]
        self.lows = []   # per row: low per line (None when not given)
        self.highs = []

    @property
    def columns(self) -> list:
        return self.bench.x_names + self.bench.line_names

    def add(self, xs: list, values: list, lows: list, highs: list) -> None:
        self.rows.append(list(xs) + list(values))
        self.lows.append(lows)
        self.highs.append(highs)

    def text(self) -> str:
        cells = [[str(c) for c in self.columns]]
        cells += [[_format(v) for v in row] for row in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns))]
        lines = ["  ".join(cell.rjust(width) for cell, width in zip(row, widths)) for row in cells]
        return "\n".join(lines)

    def write_csv(self, path: str) -> None:
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(self.columns)
            for row in self.rows:
                writer.writerow([_csv_value(v) for v in row])

    def data_frame(self):
        try:
            import pandas
        except ImportError:
            raise ImportError("run(return_df=True) returns pandas DataFrames; install pandas "
                              "(the table is also written as CSV with save_path=...)") from None
        return pandas.DataFrame(self.rows, columns=self.columns)


def _format(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _csv_value(value):
    if isinstance(value, float):
        return f"{value:.6f}"
    return value


def _split_result(result, bench: Benchmark, point: dict):
    """(value, low, high) from what the benchmarked function returned."""
    if isinstance(result, (list, tuple)):
        if len(result) != 3:
            raise ValueError(f"benchmark '{bench.plot_name}' at {point} returned {len(result)} values; "
                             f"return one number or (value, low, high)")
        value, low, high = (float(v) for v in result)
        return value, low, high
    if not isinstance(result, numbers.Real):
        raise TypeError(f"benchmark '{bench.plot_name}' at {point} returned "
                        f"{type(result).__name__}; return a number or (value, low, high)")
    return float(result), None, None


class Mark:
    """A function decorated with ``perf_report``: call it like the function, or
    ``.run(...)`` the sweep(s)."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def _sweep(self, bench: Benchmark, **kwargs) -> Table:
        table = Table(bench)
        for x in bench.x_vals:
            x_args = bench.x_args(x)
            values, lows, highs = [], [], []
            for line_val in bench.line_vals:
                point = {**x_args, bench.line_arg: line_val}
                result = self.fn(**point, **bench.args, **kwargs)
                value, low, high = _split_result(result, bench, point)
                values.append(value)
                lows.append(low)
                highs.append(high)
            table.add([x_args[name] for name in bench.x_names], values, lows, highs)
        return table

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
        """Runs every Benchmark. ``print_data`` prints each table; ``save_path``
        (a folder, created if missing) receives ``<plot_name>.csv`` and, with
        matplotlib, ``<plot_name>.png``; ``show_plots`` opens the plots
        (matplotlib). Extra keyword arguments go to every call of the function.
        Returns the DataFrame(s) with ``return_df=True`` (needs pandas)."""
        benches = self.benchmarks if isinstance(self.benchmarks, (list, tuple)) else [self.benchmarks]
        tables = []
        for bench in benches:
            table = self._sweep(bench, **kwargs)
            tables.append(table)
            if print_data:
                print(f"{bench.plot_name}:")
                print(table.text())
            if save_path:
                os.makedirs(save_path, exist_ok=True)
                table.write_csv(os.path.join(save_path, f"{bench.plot_name}.csv"))
            if save_path or show_plots:
                _plot(table, save_path, show_plots)
        if return_df:
            frames = [table.data_frame() for table in tables]
            return frames[0] if len(frames) == 1 else frames
        return None


def perf_report(benchmarks):
    """Decorator: ``@perf_report(Benchmark(...))`` (or a list of them) makes the
    function a ``Mark`` whose ``.run()`` sweeps it."""

    def decorate(fn):
        return Mark(fn, benchmarks)

    return decorate


def _plot(table: Table, save_path: str, show: bool) -> bool:
    """Draws the table's lines. Without matplotlib: show_plots raises
    ImportError, a save_path alone gets the CSV and a warning saying that the
    PNG was not drawn (never a silent skip); returns False then."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        hint = "matplotlib is not installed (pip install matplotlib)"
        if show:
            raise ImportError(f"perf_report: show_plots needs matplotlib: {hint}") from None
        warnings.warn(f"perf_report: {table.bench.plot_name}.png was not drawn, only its CSV written: {hint}",
                      RuntimeWarning, stacklevel=3)
        return False
    bench = table.bench
    if show:  # a window needs pyplot; a file alone does not (no global backend change)
        import matplotlib.pyplot as plt

        figure = plt.figure(figsize=(7, 4.5))
    else:
        figure = Figure(figsize=(7, 4.5))
    axes = figure.add_subplot()
    first_x = [row[0] for row in table.rows]
    for i, name in enumerate(bench.line_names):
        column = len(bench.x_names) + i
        ys = [row[column] for row in table.rows]
        style = {}
        if bench.styles is not None:
            color, linestyle = (list(bench.styles[i]) + [None, None])[:2]
            style = {k: v for k, v in (("color", color), ("linestyle", linestyle)) if v is not None}
        elif bench.color is not None:
            style = {"color": bench.color}
        axes.plot(first_x, ys, label=name, **style)
        lows = [low[i] for low in table.lows]
        highs = [high[i] for high in table.highs]
        if all(v is not None and math.isfinite(v) for v in lows + highs) and table.rows:
            axes.fill_between(first_x, lows, highs, alpha=0.15, color=style.get("color"))
    axes.set_xlabel(bench.xlabel or bench.x_names[0])
    axes.set_ylabel(bench.ylabel)
    axes.set_title(bench.plot_name)
    if bench.x_log:
        axes.set_xscale("log")
    if bench.y_log:
        axes.set_yscale("log")
    axes.legend()
    axes.grid(True, alpha=0.3)
    if save_path:
        figure.savefig(os.path.join(save_path, f"{bench.plot_name}.png"), dpi=100)
    if show:
        plt.show()
    return True
