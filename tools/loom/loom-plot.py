#!/usr/bin/python3
"""Draws the learning curves of `loom train` runs into one PNG.

    loom-plot RUN [RUN...] -o curves.png [--label NAME ...] [--title TEXT]

RUN is a model directory (its metrics.jsonl is read) or a metrics.jsonl
itself. The figure has two rows: against the step (top) and against the
wall time of training (bottom); its columns are the losses (train:
label-smoothed, with dropout, over the steps since the previous report;
valid: the references' NLL per token), validation BLEU (greedy), the
learning rate and the training throughput. Several runs are overlaid, one
colour each.

`loom train` runs this after each validation and `loom plot` runs it for
the command line; both find it beside the `loom` binary. It needs
matplotlib (Debian: python3-matplotlib). The PNG is written to a temporary
file and renamed, so a reader never sees half of one.

Exit status: 0 drawn; 1 a run is missing or its metrics are malformed;
2 bad usage; 3 matplotlib is missing.
"""

import argparse
import json
import math
import os
import sys
import tempfile


class PlotError(Exception):
    pass


def metrics_path(run):
    if os.path.isdir(run):
        path = os.path.join(run, "metrics.jsonl")
        if not os.path.isfile(path):
            raise PlotError(f"{run}: no metrics.jsonl (is it a `loom train` --out directory?)")
        return path
    if os.path.isfile(run):
        return run
    raise PlotError(f"{run}: no such directory or file")


def number(value):
    """A metric as a float; JSON null (a NaN or infinity when written) is NaN."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not a number: {value!r}")
    return float(value)


def read_run(run):
    """The run's train and valid records, each a dict of lists, by step."""
    path = metrics_path(run)
    train = {k: [] for k in ("step", "elapsed_s", "loss", "lr", "tokens_per_s")}
    valid = {k: [] for k in ("step", "elapsed_s", "valid_nll", "valid_bleu")}
    with open(path, encoding="utf-8") as f:
        for number_of_line, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{number_of_line}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise PlotError(f"{where}: not JSON ({e.msg})")
            if not isinstance(record, dict):
                raise PlotError(f"{where}: not a JSON object")
            kind = record.get("type")
            if kind not in ("train", "valid"):
                continue  # records of later versions are skipped
            columns = train if kind == "train" else valid
            try:
                values = {k: number(record[k]) for k in columns}
            except KeyError as e:
                raise PlotError(f"{where}: a {kind} record without {e.args[0]!r}")
            except ValueError as e:
                raise PlotError(f"{where}: {e}")
            for k, v in values.items():
                columns[k].append(v)
    if not train["step"] and not valid["step"]:
        raise PlotError(f"{path}: no train or valid records yet")
    return train, valid


def wall_unit(runs):
    """Minutes for runs under two hours, else hours: (divisor, name)."""
    longest = max((max(t["elapsed_s"] + v["elapsed_s"], default=0) for t, v in runs), default=0)
    return (60.0, "minutes") if longest < 7200 else (3600.0, "hours")


def draw(runs, labels, out, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    panels = [
        ("loss", "loss per token"),
        ("bleu", "valid BLEU (greedy)"),
        ("lr", "learning rate"),
        ("tps", "train tokens/s"),
    ]
    fig, axes = plt.subplots(2, len(panels), figsize=(18, 8.5), squeeze=False)
    divisor, unit = wall_unit(runs)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, ((train, valid), label) in enumerate(zip(runs, labels)):
        colour = colours[index % len(colours)]
        for row in range(2):
            tx = train["step"] if row == 0 else [t / divisor for t in train["elapsed_s"]]
            vx = valid["step"] if row == 0 else [t / divisor for t in valid["elapsed_s"]]
            ax = axes[row]
            ax[0].plot(tx, train["loss"], color=colour, alpha=0.55, lw=1,
                       label=f"{label} train (smoothed)")
            ax[0].plot(vx, valid["valid_nll"], color=colour, lw=2, marker=".",
                       label=f"{label} valid NLL")
            ax[1].plot(vx, valid["valid_bleu"], color=colour, lw=2, marker=".", label=label)
            ax[2].plot(tx, train["lr"], color=colour, lw=1.5, label=label)
            ax[3].plot(tx, train["tokens_per_s"], color=colour, lw=1, label=label)
            # The best BLEU of each run, marked and written.
            scores = [(b, x) for b, x in zip(valid["valid_bleu"], vx) if not math.isnan(b)]
            if scores:
                best, at = max(scores)
                ax[1].annotate(f"{best:.2f}", (at, best), textcoords="offset points",
                               xytext=(0, 6), ha="center", color=colour, fontsize=8)
    for row, xlabel in enumerate(("step", f"wall time of training ({unit})")):
        for col, (_, ylabel) in enumerate(panels):
            ax = axes[row][col]
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.grid(True, alpha=0.3)
        axes[row][2].ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
        axes[row][0].set_yscale("log")
        axes[row][0].yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        axes[row][0].yaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%.1f"))
        axes[row][1].margins(y=0.12)
    axes[0][0].legend(fontsize=7)
    if len(runs) > 1:
        axes[0][1].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()

    directory = os.path.dirname(os.path.abspath(out))
    fd, temporary = tempfile.mkstemp(prefix=".curves-", suffix=".png", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format="png", dpi=80)
        # mkstemp makes the file private; the PNG gets the usual mode.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, out)
    except BaseException:
        os.unlink(temporary)
        raise
    finally:
        plt.close(fig)


def main(argv):
    parser = argparse.ArgumentParser(
        prog="loom plot", description="Learning curves of `loom train` runs, overlaid, as a PNG")
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="a model directory or its metrics.jsonl")
    parser.add_argument("-o", "--output", required=True, help="the PNG to write")
    parser.add_argument("--label", action="append", default=[],
                        help="a run's name in the legend, in order (default: its directory)")
    parser.add_argument("--title", default=None)
    args = parser.parse_args(argv)
    if len(args.label) > len(args.runs):
        parser.error(f"{len(args.label)} --label for {len(args.runs)} runs")
    labels = args.label + [
        os.path.basename(os.path.normpath(r if os.path.isdir(r) else os.path.dirname(r) or "."))
        for r in args.runs[len(args.label):]
    ]
    try:
        runs = [read_run(r) for r in args.runs]
    except PlotError as e:
        print(f"loom plot: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"loom plot: {e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("loom plot: needs matplotlib for Python 3 (Debian: apt install python3-matplotlib)",
              file=sys.stderr)
        return 3
    title = args.title if args.title is not None else ", ".join(labels)
    try:
        draw(runs, labels, args.output, title)
    except OSError as e:
        print(f"loom plot: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
