#!/usr/bin/python3
"""Draws the learning curves of `loom train` runs into one PNG.

    loom-plot RUN [RUN...] -o curves.png [--label NAME ...] [--title TEXT]

RUN is a model directory (its metrics.jsonl is read) or a metrics.jsonl
itself. The figure has two rows: against the step (top) and against the
wall time of training (bottom); its columns are the losses (train:
label-smoothed, with dropout, over the steps since the previous report;
valid: the references' NLL per token), validation BLEU (greedy), the
learning rate and the training throughput. Several runs are overlaid, one
colour each. A metric that is null (a NaN or infinity when written) or
beyond what an axis can hold is a gap in its curve.

`loom train` runs this after each validation and `loom plot` runs it for
the command line; both find it beside the `loom` binary. It needs
matplotlib (Debian: python3-matplotlib). The PNG is written to a temporary
file and renamed, so a reader never sees half of one.

What it refuses to write, before drawing anything: an -o that is one of the
runs' metrics, a directory or something else that is not a file, an
existing file that is not a PNG, a name that does not end in .png, and any
file in a run directory (one holding metrics.jsonl) but the curves.png of a
run being drawn. Text from the user (--title, --label, directory names) is
drawn as it is, never as mathtext.

Exit status: 0 drawn; 1 a run is missing or its metrics are malformed, or
-o cannot be written; 2 bad usage; 3 matplotlib is missing.
"""

import argparse
import codecs
import json
import math
import os
import re
import stat
import sys
import tempfile

# Far beyond any real run (a record is about 250 bytes; a run that logs
# every step for a million steps writes about 250 MB), small enough that a
# huge or endless input is refused before it exhausts memory or time.
MAX_LINE_BYTES = 1 << 20
MAX_FILE_BYTES = 512 << 20
# Longer text does not fit the figure and takes matplotlib seconds to lay out.
MAX_TEXT_CHARS = 1000
# Beyond this magnitude matplotlib's axis limits, ticks and margins overflow
# (1e308 and -1e308 in one panel end in an IndexError in tight_layout);
# `loom train` writes float32 losses (< 3.5e38), so only damage reaches it.
MAX_MAGNITUDE = 1e100
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TRAIN_FIELDS = ("step", "elapsed_s", "loss", "lr", "tokens_per_s")
VALID_FIELDS = ("step", "elapsed_s", "valid_nll", "valid_bleu")
# A line's text; lines end as in Python's text files (\n, \r\n, a lone \r).
LINE = re.compile(rb"[^\r\n]+")


class PlotError(Exception):
    pass


class Once(argparse.Action):
    """An option given once: a second -o would silently win over the first."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest) is not None:
            parser.error(f"{option_string} given twice")
        setattr(namespace, self.dest, values)


def printable(text):
    """`text` with what a terminal or matplotlib cannot show (control
    characters, the surrogates that stand for bytes that are not UTF-8)
    written as Python escapes, so that a message stays on one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def literal(text):
    """User text as matplotlib draws it literally: control characters
    escaped (NUL and the like have no glyph), newlines kept, and every '$'
    escaped so that no mathtext is parsed ("$\\frac{$" would raise)."""
    lines = text.replace("\t", " ").split("\n")
    text = "\n".join(printable(line) for line in lines).replace("$", r"\$")
    # matplotlib leaves labels that start with '_' out of the legend.
    return " " + text if text.startswith("_") else text


def kind_of(mode):
    """What a file that is not a regular one is, for a message."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def metrics_path(run):
    if run == "":
        raise PlotError("a RUN is an empty path")
    if os.path.isdir(run):
        path = os.path.join(run, "metrics.jsonl")
        if not os.path.lexists(path):
            raise PlotError(f"{printable(run)}: no metrics.jsonl (is it a `loom train` --out directory?)")
        return path
    if os.path.lexists(run):
        return run
    raise PlotError(f"{printable(run)}: no such directory or file")


def read_metrics_file(path):
    """The bytes of a metrics file; refuses what is not a regular file (a
    FIFO would block, /dev/zero never ends) and files over MAX_FILE_BYTES."""
    # O_NONBLOCK: opening a FIFO without a writer would wait forever; the
    # type is checked on what was opened, not on the name.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise PlotError(f"{printable(path)}: {kind_of(info.st_mode)}, not a metrics file")
    with os.fdopen(fd, "rb") as f:
        too_large = (f"{printable(path)}: larger than {MAX_FILE_BYTES >> 20} MiB, "
                     f"which no `loom train` run writes")
        if info.st_size > MAX_FILE_BYTES:
            raise PlotError(too_large)
        # It may grow meanwhile (a run that trains appends to it).
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise PlotError(too_large)
    return data


def describe(value):
    """A JSON value that is not a number, short, for a message."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        shown = printable(value if len(value) <= 40 else value[:40] + "...")
        return repr(shown)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def number(value):
    """A metric as a float: NaN (a gap in the curve) for JSON null, for
    infinities and for magnitudes no axis can hold; ValueError for what
    is not a number."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not a number: {describe(value)}")
    try:
        value = float(value)
    except OverflowError:  # an int beyond a double
        return math.nan
    return value if abs(value) <= MAX_MAGNITUDE else math.nan


def parse_metrics(data, name):
    """The train and valid records of a metrics file's bytes, each a dict of
    lists by field, in the file's order. Raises PlotError naming `name`, the
    line and the field for anything malformed; no other exception for any
    input. A last line without its line end that is not JSON is left out:
    `loom train` may be appending it."""
    train = {k: [] for k in TRAIN_FIELDS}
    valid = {k: [] for k in VALID_FIELDS}
    start = 0
    if data.startswith(codecs.BOM_UTF8):
        start = len(codecs.BOM_UTF8)
    line_number, counted_to = 1, 0
    for match in LINE.finditer(data, start):
        begin, end = match.span()
        # The line breaks before this line; a \r\n is one.
        line_number += (data.count(b"\n", counted_to, begin) + data.count(b"\r", counted_to, begin)
                        - data.count(b"\r\n", counted_to, begin))
        counted_to = begin
        where = f"{name}:{line_number}"
        if end - begin > MAX_LINE_BYTES:
            raise PlotError(f"{where}: a line of {end - begin} bytes; a record is a few hundred "
                            f"bytes and lines over {MAX_LINE_BYTES >> 20} MiB are refused")
        raw = match.group()
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            if end == len(data) and e.reason == "unexpected end of data":
                break  # a character cut by the record being written
            raise PlotError(f"{where}: not UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})")
        if not line.strip():
            continue
        try:
            # Numbers as floats: an int of thousands of digits is then
            # infinite (a gap), not Python's int-length ValueError or an
            # OverflowError when converted.
            record = json.loads(line, parse_int=float, parse_constant=float)
        except json.JSONDecodeError as e:
            if end == len(data):
                break  # the record being written
            raise PlotError(f"{where}: not JSON ({e.msg} at column {e.colno})")
        except RecursionError:
            raise PlotError(f"{where}: not a metrics record (JSON nested too deeply)")
        if not isinstance(record, dict):
            raise PlotError(f"{where}: not a JSON object but {describe(record)}")
        kind = record.get("type")
        if not isinstance(kind, str) or kind not in ("train", "valid"):
            continue  # records of later versions are skipped
        columns = train if kind == "train" else valid
        values = []
        for field in columns:
            if field not in record:
                raise PlotError(f"{where}: a {kind} record without '{field}'")
            try:
                values.append(number(record[field]))
            except ValueError as e:
                raise PlotError(f"{where}: {e} (field '{field}')")
        for column, value in zip(columns.values(), values):
            column.append(value)
    if not train["step"] and not valid["step"]:
        raise PlotError(f"{name}: no train or valid records yet")
    return train, valid


def output_target(out, metrics_files):
    """The file to write for -o `out` (through a symbolic link, as any
    write), or PlotError saying why writing it would destroy something."""
    if out == "":
        raise PlotError("-o: the path is empty")
    shown = printable(out)
    for path in metrics_files:
        if same_file(out, path):
            raise PlotError(f"-o {shown} is the metrics of a run being drawn ({printable(path)}); "
                            f"it is not overwritten")
    if out.endswith(os.sep) or os.path.isdir(out):
        raise PlotError(f"-o {shown} names a directory; name the PNG to write, e.g. "
                        f"{printable(os.path.join(out, 'curves.png'))}")
    target = os.path.realpath(out)
    if os.path.lexists(target):
        info = os.stat(target)
        if not stat.S_ISREG(info.st_mode):
            raise PlotError(f"-o {shown} is {kind_of(info.st_mode)}; the curves are written to a file")
        if info.st_size > 0:
            with open(target, "rb") as f:
                if f.read(len(PNG_SIGNATURE)) != PNG_SIGNATURE:
                    raise PlotError(f"-o {shown} exists and is not a PNG; it is not overwritten "
                                    f"(remove it or name another file)")
    if not target.lower().endswith(".png"):
        raise PlotError(f"-o {shown}: the curves are a PNG; name a file ending in .png")
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        what = "not a directory" if os.path.lexists(folder) else "no such directory"
        raise PlotError(f"cannot write {shown}: {what} {printable(folder)}")
    # A run directory is written by `loom train`; of it, `loom plot` writes
    # only the curves.png of a run it draws (as `loom train` does itself).
    run_metrics = os.path.join(folder, "metrics.jsonl")
    if os.path.lexists(run_metrics):
        drawn = any(same_file(run_metrics, path) for path in metrics_files)
        if os.path.basename(target) != "curves.png" or not drawn:
            raise PlotError(f"-o {shown} is in the run directory {printable(folder)}, where only "
                            f"curves.png is written, and only when that run is drawn")
    return target


def wall_unit(runs):
    """Minutes for runs under two hours, else hours: (divisor, name)."""
    longest = max((t for train, valid in runs for t in train["elapsed_s"] + valid["elapsed_s"]
                   if not math.isnan(t)), default=0)
    return (60.0, "minutes") if longest < 7200 else (3600.0, "hours")


def minor_log_label(value, _position):
    """Minor ticks of the log-scaled losses: 2.0, 3.0, ... where a loss lies
    (between two powers of ten there is no major tick), short elsewhere."""
    return f"{value:.1f}" if 0.1 <= value < 1e4 else f"{value:.3g}"


def draw(runs, labels, out, title):
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # A matplotlibrc that turns on LaTeX would make every label a LaTeX
    # document ('_', '%' and '$' in a name break it).
    matplotlib.rcParams["text.usetex"] = False
    panels = [
        ("loss", "loss per token"),
        ("bleu", "valid BLEU (greedy)"),
        ("lr", "learning rate"),
        ("tps", "train tokens/s"),
    ]
    # Glyphs missing from the font, log axes of a run without positive
    # losses, tight_layout giving up on a long title: the figure is still
    # right, and a warning of several lines on stderr reads as a failure.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig, axes = plt.subplots(2, len(panels), figsize=(18, 8.5), squeeze=False)
        try:
            draw_panels(fig, axes, panels, runs, labels, title)
            write_png(fig, out)
        finally:
            plt.close(fig)


def draw_panels(fig, axes, panels, runs, labels, title):
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    divisor, unit = wall_unit(runs)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, ((train, valid), label) in enumerate(zip(runs, labels)):
        colour = colours[index % len(colours)]
        label = literal(label)
        for row in range(2):
            tx = train["step"] if row == 0 else [t / divisor for t in train["elapsed_s"]]
            vx = valid["step"] if row == 0 else [t / divisor for t in valid["elapsed_s"]]
            ax = axes[row]
            # A line through one point draws nothing: a single report is a dot.
            dot = "." if len(tx) == 1 else None
            ax[0].plot(tx, train["loss"], color=colour, alpha=0.55, lw=1, marker=dot,
                       label=f"{label} train (smoothed)")
            ax[0].plot(vx, valid["valid_nll"], color=colour, lw=2, marker=".",
                       label=f"{label} valid NLL")
            ax[1].plot(vx, valid["valid_bleu"], color=colour, lw=2, marker=".", label=label)
            ax[2].plot(tx, train["lr"], color=colour, lw=1.5, marker=dot, label=label)
            ax[3].plot(tx, train["tokens_per_s"], color=colour, lw=1, marker=dot, label=label)
            # The best BLEU of each run, marked and written.
            scores = [(b, x) for b, x in zip(valid["valid_bleu"], vx)
                      if not math.isnan(b) and not math.isnan(x)]
            if scores:
                best, at = max(scores)
                ax[1].annotate(f"{best:.2f}", (at, best), textcoords="offset points",
                               xytext=(0, 6), ha="center", color=colour, fontsize=8)
    # A log scale needs a positive loss to show (a damaged run may have none).
    positive_loss = any(v > 0 for train, valid in runs
                        for v in train["loss"] + valid["valid_nll"])
    for row, xlabel in enumerate(("step", f"wall time of training ({unit})")):
        for col, (_, ylabel) in enumerate(panels):
            ax = axes[row][col]
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.grid(True, alpha=0.3)
        axes[row][2].ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
        if positive_loss:
            axes[row][0].set_yscale("log")
            axes[row][0].yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
            axes[row][0].yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(minor_log_label))
        axes[row][1].margins(y=0.12)
    axes[0][0].legend(fontsize=7)
    if len(runs) > 1:
        axes[0][1].legend(fontsize=8)
    fig.suptitle(literal(title))
    fig.tight_layout()


def write_png(fig, out):
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


def default_label(run):
    """A run's name: its directory's (of a metrics file, the folder's)."""
    folder = run if os.path.isdir(run) else os.path.dirname(run) or "."
    return os.path.basename(os.path.abspath(folder)) or os.path.abspath(folder)


def main(argv):
    parser = argparse.ArgumentParser(
        prog="loom plot", description="Learning curves of `loom train` runs, overlaid, as a PNG")
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="a model directory or its metrics.jsonl")
    parser.add_argument("-o", "--output", required=True, action=Once,
                        help="the PNG to write (an existing file there must be a PNG)")
    parser.add_argument("--label", action="append", default=[],
                        help="a run's name in the legend, in order (default: its directory)")
    parser.add_argument("--title", default=None, action=Once)
    args = parser.parse_args(argv)
    if len(args.label) > len(args.runs):
        parser.error(f"{len(args.label)} --label for {len(args.runs)} runs")
    for option, text in [("--title", args.title or "")] + [("--label", t) for t in args.label]:
        if len(text) > MAX_TEXT_CHARS:
            parser.error(f"{option} of {len(text)} characters; at most {MAX_TEXT_CHARS} fit the figure")
    try:
        files = [metrics_path(r) for r in args.runs]
        for later, path in enumerate(files):
            for earlier, other in enumerate(files[:later]):
                if same_file(other, path):
                    raise PlotError(f"{printable(args.runs[later])}: the same run as "
                                    f"{printable(args.runs[earlier])}; give each run once")
        target = output_target(args.output, files)
        runs = [parse_metrics(read_metrics_file(path), printable(path)) for path in files]
    except PlotError as e:
        print(f"loom plot: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        where = f"{printable(str(e.filename))}: " if e.filename is not None else ""
        print(f"loom plot: error: {where}{e.strerror}", file=sys.stderr)
        return 1
    labels = args.label + [default_label(r) for r in args.runs[len(args.label):]]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("loom plot: error: needs matplotlib for Python 3 "
              "(Debian: apt install python3-matplotlib)", file=sys.stderr)
        return 3
    title = args.title if args.title is not None else ", ".join(labels)
    try:
        draw(runs, labels, target, title)
    except OSError as e:
        print(f"loom plot: error: cannot write {printable(args.output)}: {e.strerror}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)  # Ctrl-C: the temporary PNG, if any, is gone
    except Exception as e:  # noqa: BLE001
        # A defect of this script or of matplotlib: one line, not a trace.
        print(f"loom plot: error: internal error drawing the curves ({type(e).__name__}: "
              f"{printable(str(e))[:300]})", file=sys.stderr)
        sys.exit(1)
