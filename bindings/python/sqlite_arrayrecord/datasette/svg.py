# SPDX-License-Identifier: Apache-2.0
"""Server-side SVG charts for the Datasette plugin: no script, no network,
no external style. Each function returns one ``<svg>`` element as a string,
with a title, axes, tick labels and axis labels (say the unit in the label),
every text escaped; colours hold in print (white background, dark ink).

    >>> svg = line_chart({"loss": [(1, 0.9), (2, 0.5), (3, 0.3)]}, title="train", x_label="round", y_label="loss")
    >>> svg.startswith("<svg")
    True

line_chart(series, ...)       one line per series of (x, y) points
bar_chart(labels, series, ...) grouped bars, one group per label
histogram(lo, hi, counts, ...) counts over equal bins from lo to hi
heatmap(values, ...)          a matrix of cells coloured by value, with a
                              colour scale legend; None cells are grey
"""

import math
from html import escape

__all__ = ["line_chart", "bar_chart", "histogram", "heatmap", "nice_ticks", "format_number", "PALETTE"]

# Series colours (Okabe-Ito: distinguishable for colour-blind readers, dark enough to print).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
# Sequential scale (viridis anchors) and diverging scale (blue, white, red).
_VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
_DIVERGING = ((33, 102, 172), (146, 197, 222), (247, 247, 247), (244, 165, 130), (178, 24, 43))
_NULL_FILL = "#d9d9d9"
_FONT = 'font-family="sans-serif" font-size="11"'
_LEGEND_CHARS = 32  # a legend entry's text is cut beyond this
_CHAR_W = 6.3  # about the width of a character of 11-pixel sans-serif


def _t(s):
    return escape(str(s), quote=True)


def format_number(v):
    """A short label for a number: 0.25, 1.5e-05, 12,345, 3.2e+09.

    >>> format_number(12345), format_number(0.000015), format_number(2.0)
    ('12,345', '1.5e-05', '2')
    """
    if v is None:
        return "null"
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return f"{int(v):,}"
    if not math.isfinite(v):
        return str(v)
    a = abs(v)
    if a != 0 and (a < 1e-3 or a >= 1e6):
        return f"{v:.3g}"
    return f"{v:.4g}"


def nice_ticks(lo, hi, count=5):
    """About `count` round tick values covering [lo, hi].

    >>> nice_ticks(0, 1)
    [0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi < lo:
        lo, hi = hi, lo
    if hi == lo:
        return [lo]
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9)
    out = []
    i = first
    while i * step <= hi + step * 1e-9 and len(out) < 50:
        out.append(i * step)
        i += 1
    return out


def _cover(lo, hi, count=5):
    """(lo', hi', ticks): round ticks whose first and last enclose [lo, hi]."""
    ticks = nice_ticks(lo, hi, count)
    if len(ticks) < 2:
        return lo, hi, ticks
    step = ticks[1] - ticks[0]
    while ticks[0] > lo + step * 1e-9:
        ticks.insert(0, ticks[0] - step)
    while ticks[-1] < hi - step * 1e-9:
        ticks.append(ticks[-1] + step)
    return ticks[0], ticks[-1], ticks


def _range(values):
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return 0.0, 1.0
    lo, hi = min(vals), max(vals)
    if lo == hi:
        pad = abs(lo) * 0.1 or 1.0
        return lo - pad, hi + pad
    return lo, hi


class _Frame:
    """A plot area inside an SVG of a given size, with margins for labels."""

    def __init__(self, width, height, left=64, right=16, top=30, bottom=46):
        self.w, self.h = width, height
        self.x0, self.x1 = left, width - right
        self.y0, self.y1 = top, height - bottom

    def sx(self, v, lo, hi):
        return self.x0 + (v - lo) / (hi - lo) * (self.x1 - self.x0) if hi != lo else (self.x0 + self.x1) / 2

    def sy(self, v, lo, hi):
        return self.y1 - (v - lo) / (hi - lo) * (self.y1 - self.y0) if hi != lo else (self.y0 + self.y1) / 2


def _open(width, height, title, desc=None):
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ar-chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" {_FONT}>',
        f"<title>{_t(title)}</title>",
    ]
    if desc:
        out.append(f"<desc>{_t(desc)}</desc>")
    out.append(f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>')
    out.append(
        f'<text x="{width / 2:.1f}" y="16" text-anchor="middle" font-size="13" font-weight="bold">{_t(title)}</text>'
    )
    return out


def _axes(out, f, xlo, xhi, ylo, yhi, x_label, y_label, xticks=None, yticks=None, x_tick_labels=None):
    """Frame, grid lines, ticks and labels of both axes."""
    out.append(f'<g stroke="#444" stroke-width="1" fill="none"><path d="M{f.x0},{f.y0} V{f.y1} H{f.x1}"/></g>')
    yticks = nice_ticks(ylo, yhi) if yticks is None else yticks
    for v in yticks:
        y = f.sy(v, ylo, yhi)
        out.append(f'<line x1="{f.x0}" x2="{f.x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<line x1="{f.x0 - 4}" x2="{f.x0}" y1="{y:.1f}" y2="{y:.1f}" stroke="#444"/>')
        out.append(f'<text x="{f.x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{_t(format_number(v))}</text>')
    if x_tick_labels is None:
        xticks = nice_ticks(xlo, xhi) if xticks is None else xticks
        x_tick_labels = [(f.sx(v, xlo, xhi), format_number(v)) for v in xticks]
    for x, label in x_tick_labels:
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{f.y1}" y2="{f.y1 + 4}" stroke="#444"/>')
        out.append(f'<text x="{x:.1f}" y="{f.y1 + 16}" text-anchor="middle">{_t(label)}</text>')
    out.append(f'<text x="{(f.x0 + f.x1) / 2:.1f}" y="{f.h - 8}" text-anchor="middle">{_t(x_label)}</text>')
    cy = (f.y0 + f.y1) / 2
    out.append(
        f'<text x="14" y="{cy:.1f}" text-anchor="middle" transform="rotate(-90 14 {cy:.1f})">{_t(y_label)}</text>'
    )


def _legend(out, f, names, attrs=None, points=()):
    """The series' names and colours inside the plot area, on a white ground,
    in the corner that hides the fewest of ``points`` (pixel positions;
    top left, then top right, bottom left, bottom right on ties); a long
    name is cut (its whole text in a tooltip)."""
    shown = [n if len(str(n)) <= _LEGEND_CHARS else str(n)[: _LEGEND_CHARS - 1] + "\u2026" for n in names]
    w = 22 + _CHAR_W * max((len(str(n)) for n in shown), default=0)
    h = 14 * len(names) + 4
    corners = [
        (f.x0 + 8, f.y0 + 4),
        (f.x1 - 4 - w, f.y0 + 4),
        (f.x0 + 8, f.y1 - h),
        (f.x1 - 4 - w, f.y1 - h),
    ]

    def hidden(corner):
        x, y = corner
        return sum(1 for px, py in points if x - 4 <= px <= x - 4 + w and y - 3 <= py <= y - 3 + h)

    x, y = min(corners, key=hidden)
    out.append(
        f'<rect x="{x - 4:.1f}" y="{y - 3:.1f}" width="{w:.0f}" height="{h}" fill="#ffffff" '
        'fill-opacity="0.85" stroke="#ccc"/>'
    )
    for i, (name, text) in enumerate(zip(names, shown)):
        color = PALETTE[i % len(PALETTE)]
        extra = _attrs((attrs or {}).get(name))
        out.append(f'<g class="ar-legend"{extra}><title>{_t(name)}</title>')
        out.append(f'<rect x="{x:.1f}" y="{y + 14 * i:.1f}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 14:.1f}" y="{y + 14 * i + 9:.1f}">{_t(text)}</text></g>')


def _attrs(attrs):
    """name="value" ... of a dict, escaped (data-* attributes of a series)."""
    return "".join(f' {k}="{_t(v)}"' for k, v in (attrs or {}).items())


def _empty(out, f, text):
    out.append(
        f'<text x="{(f.x0 + f.x1) / 2:.1f}" y="{(f.y0 + f.y1) / 2:.1f}" text-anchor="middle" fill="#666">{_t(text)}</text>'
    )


def _close(out, f=None, legend=(), legend_attrs=None, points=()):
    """The SVG text: a legend when there is more than one series, then the end tag."""
    if len(legend) > 1:
        _legend(out, f, list(legend), legend_attrs, points)
    out.append("</svg>")
    return "\n".join(out)


def _no_values(out, f, x_label, y_label, text="no values"):
    """An empty chart: unit axes and ``text`` in the middle."""
    _axes(out, f, 0, 1, 0, 1, x_label, y_label)
    _empty(out, f, text)
    return _close(out)


def line_chart(series, *, title, x_label, y_label, width=560, height=280, integer_x=True, series_attrs=None):
    """One line (with dots) per series: ``series`` maps a name to a list of
    (x, y) points; points whose y is None or not finite are left out (the
    line breaks there). Integer x ticks by default (rounds). Each series is
    a ``<g data-series="name">`` (plus ``series_attrs[name]``, a dict of
    more attributes, on it and on its legend entry), each dot carries its
    exact numbers (``data-x``, ``data-y``: Python's repr, which reads back
    to the same float). A series without points keeps its colour and its
    place in the legend."""
    series = {name: [(x, y) for x, y in pts] for name, pts in series.items()}
    f = _Frame(width, height)
    out = _open(width, height, title, f"line chart of {y_label} against {x_label}")
    xs = [x for pts in series.values() for x, _ in pts]
    ys = [y for pts in series.values() for _, y in pts if y is not None and math.isfinite(y)]
    if not ys:
        return _no_values(out, f, x_label, y_label)
    xlo, xhi = (min(xs), max(xs)) if xs else (0, 1)
    if xlo == xhi:
        xlo, xhi = xlo - 1, xhi + 1
    ylo, yhi, yticks = _cover(*_range(ys))
    xticks = nice_ticks(xlo, xhi)
    if integer_x:
        xticks = [t for t in xticks if float(t).is_integer()] or sorted(set(xs))
    _axes(out, f, xlo, xhi, ylo, yhi, x_label, y_label, xticks=xticks, yticks=yticks)
    for i, (name, pts) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        out.append(f'<g class="ar-series" data-series="{_t(name)}"{_attrs((series_attrs or {}).get(name))}>')
        segs, cur = [], []
        for x, y in pts:
            if y is None or not math.isfinite(y):
                if cur:
                    segs.append(cur)
                cur = []
                continue
            cur.append((f.sx(x, xlo, xhi), f.sy(y, ylo, yhi), x, y))
        if cur:
            segs.append(cur)
        for seg in segs:
            d = " ".join(f"{'M' if j == 0 else 'L'}{px:.1f},{py:.1f}" for j, (px, py, _, _) in enumerate(seg))
            out.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="2"/>')
            for px, py, x, y in seg:
                out.append(
                    f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{color}" data-x="{_t(repr(x))}" data-y="{_t(repr(y))}">'
                    f"<title>{_t(name)}: {_t(format_number(x))}, {_t(format_number(y))}</title></circle>"
                )
        out.append("</g>")
    drawn = [
        (px, py)
        for pts in series.values()
        for x, y in pts
        if y is not None and math.isfinite(y)
        for px, py in [(f.sx(x, xlo, xhi), f.sy(y, ylo, yhi))]
    ]
    return _close(out, f, series, series_attrs, drawn)


def bar_chart(labels, series, *, title, x_label, y_label, width=560, height=280, y_range=None):
    """Grouped bars: ``labels`` name the groups along x, ``series`` maps a
    name to one value per label (None: no bar). The y axis includes 0 and
    every value (``y_range=(lo, hi)`` widens it, e.g. (-1, 1) for cosines)."""
    labels = [str(x) for x in labels]
    f = _Frame(width, height)
    out = _open(width, height, title, f"bar chart of {y_label} by {x_label}")
    vals = [v for vs in series.values() for v in vs if v is not None and math.isfinite(v)]
    if not labels or not vals:
        return _no_values(out, f, x_label, y_label)
    ylo, yhi = min(0.0, min(vals)), max(0.0, max(vals))
    if y_range is not None:
        ylo, yhi = min(ylo, y_range[0]), max(yhi, y_range[1])
    if ylo == yhi:
        yhi = 1.0
    ylo, yhi, yticks = _cover(ylo, yhi)
    group = (f.x1 - f.x0) / len(labels)
    nser = max(len(series), 1)
    bar = group * 0.8 / nser
    ticks = [(f.x0 + group * (i + 0.5), label) for i, label in enumerate(labels)]
    step = max(1, math.ceil(len(labels) / max((f.x1 - f.x0) // 40, 1)))
    _axes(out, f, 0, 1, ylo, yhi, x_label, y_label, yticks=yticks, x_tick_labels=ticks[::step])
    zero = f.sy(0, ylo, yhi)
    for s, (name, vs) in enumerate(series.items()):
        color = PALETTE[s % len(PALETTE)]
        for i, v in enumerate(vs):
            if v is None or not math.isfinite(v):
                continue
            x = f.x0 + group * i + group * 0.1 + bar * s
            y = f.sy(v, ylo, yhi)
            top, h = min(y, zero), abs(zero - y)
            out.append(
                f'<rect x="{x:.1f}" y="{top:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{color}">'
                f"<title>{_t(name)} {_t(labels[i])}: {_t(format_number(v))}</title></rect>"
            )
    return _close(out, f, series)


def histogram(lo, hi, counts, *, title, x_label, y_label="elements", width=560, height=240):
    """Counts over len(counts) equal bins from lo to hi (np.histogram's
    edges), drawn as adjacent bars; the x axis is in the array's values."""
    f = _Frame(width, height)
    out = _open(width, height, title, f"histogram of {x_label}, {len(counts)} bins from {lo} to {hi}")
    if not counts or lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return _no_values(out, f, x_label, y_label, "no finite values")
    top = max(counts) or 1
    yticks = [t for t in nice_ticks(0, top) if float(t).is_integer()] or [0, top]
    yhi = max(top, yticks[-1])
    _axes(out, f, lo, hi, 0, yhi, x_label, y_label, yticks=yticks)
    n = len(counts)
    width_bin = (hi - lo) / n
    for i, c in enumerate(counts):
        if not c:
            continue
        a, b = lo + i * width_bin, lo + (i + 1) * width_bin
        x0, x1 = f.sx(a, lo, hi), f.sx(b, lo, hi)
        y = f.sy(c, 0, yhi)
        out.append(
            f'<rect x="{x0:.2f}" y="{y:.1f}" width="{max(x1 - x0 - 0.5, 0.5):.2f}" height="{f.y1 - y:.1f}" '
            f'fill="{PALETTE[0]}"><title>[{_t(format_number(a))}, {_t(format_number(b))}): {c:,}</title></rect>'
        )
    return _close(out)


def _interp(stops, t):
    t = min(max(t, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(t), len(stops) - 2)
    u = t - i
    a, b = stops[i], stops[i + 1]
    return "#%02x%02x%02x" % tuple(round(a[k] + (b[k] - a[k]) * u) for k in range(3))


def _colour(v, lo, hi, diverging):
    if v is None or not math.isfinite(v):
        return _NULL_FILL
    if diverging:
        m = max(abs(lo), abs(hi)) or 1.0
        return _interp(_DIVERGING, (v / m + 1) / 2)
    return _interp(_VIRIDIS, (v - lo) / (hi - lo) if hi != lo else 0.5)


def heatmap(
    values,
    *,
    title,
    x_label,
    y_label,
    value_label,
    row_labels=None,
    col_labels=None,
    lo=None,
    hi=None,
    diverging=False,
    width=560,
    height=None,
    cell_titles=None,
    row_height=None,
    blocks=None,
    row_titles=None,
    col_titles=None,
):
    """A matrix of cells (``values``: rows of numbers or None) coloured on a
    sequential scale from lo to hi (default: the finite values' range), or
    on a diverging one centred on 0 (``diverging=True``, for signed values
    such as cosines); None and non-finite cells are grey. A colour scale
    legend on the right says what the colours mean (``value_label``, with
    its unit). Row and column labels (optional) are drawn when they fit.
    The height follows the cells (square ones, or ``row_height`` pixels a
    row) unless given. ``blocks=(rows, cols)`` draws white lines between
    blocks of cells (the kernels of a convolution weight). The left margin
    fits the longest row label; ``row_titles`` and ``col_titles`` (one text
    per row, per column) are the labels' tooltips, for short labels that
    stand for longer names (a node id, a layer's key)."""
    rows = len(values)
    cols = max((len(r) for r in values), default=0)
    finite = [v for r in values for v in r if v is not None and math.isfinite(v)]
    if lo is None or hi is None:
        flo, fhi = (min(finite), max(finite)) if finite else (0.0, 1.0)
        lo = flo if lo is None else lo
        hi = fhi if hi is None else hi
    if diverging:
        m = max(abs(lo), abs(hi)) or 1.0
        lo, hi = -m, m
    longest = max((len(str(label)) for label in row_labels or ()), default=0)
    left = max(64, min(220, int(24 + _CHAR_W * longest))) if row_labels else 40
    legend_w = 90
    plot_w = width - left - legend_w - 10
    cell = plot_w / cols if cols else plot_w
    right = legend_w + 10
    if height is None:
        if row_height:
            body = min(max(rows * row_height, 60), 420)
        else:
            # square cells: as wide as fits, and no taller than 420 pixels in all
            cell = min(cell, 420 / rows) if rows else cell
            body = max(rows * cell, 60)
            width = int(left + cols * cell + right)
        height = int(body) + 38 + 46
    f = _Frame(width, height, left=left, right=right, top=38, bottom=46)
    ch = (f.y1 - f.y0) / rows if rows else 0
    cw = (f.x1 - f.x0) / cols if cols else 0
    out = _open(width, height, title, f"heatmap of {value_label}, {rows} x {cols} cells")
    if not rows or not cols:
        _empty(out, f, "no values")
        return _close(out)
    for i, r in enumerate(values):
        for j, v in enumerate(r):
            tip = cell_titles[i][j] if cell_titles else f"{i}, {j}: {format_number(v)}"
            out.append(
                f'<rect x="{f.x0 + j * cw:.2f}" y="{f.y0 + i * ch:.2f}" width="{cw + 0.05:.2f}" height="{ch + 0.05:.2f}" '
                f'fill="{_colour(v, lo, hi, diverging)}"><title>{_t(tip)}</title></rect>'
            )
    if blocks:
        # block boundaries (the kernels of a convolution weight)
        bh, bw = blocks
        d = " ".join(f"M{f.x0:.1f},{f.y0 + i * ch:.2f} H{f.x1:.1f}" for i in range(bh, rows, bh))
        d += " " + " ".join(f"M{f.x0 + j * cw:.2f},{f.y0:.1f} V{f.y1:.1f}" for j in range(bw, cols, bw))
        if d.strip():
            out.append(f'<path d="{d.strip()}" stroke="#ffffff" stroke-width="1" fill="none"/>')
    out.append(
        f'<rect x="{f.x0}" y="{f.y0}" width="{f.x1 - f.x0:.1f}" height="{f.y1 - f.y0:.1f}" fill="none" stroke="#444"/>'
    )
    # Row and column labels, thinned to what fits.
    if row_labels:
        step = max(1, math.ceil(12 / ch)) if ch else 1
        for i in range(0, rows, step):
            y = f.y0 + (i + 0.5) * ch + 4
            tip = f"<title>{_t(row_titles[i])}</title>" if row_titles else ""
            out.append(f'<text x="{f.x0 - 4}" y="{y:.1f}" text-anchor="end">{tip}{_t(row_labels[i])}</text>')
    if col_labels:
        step = max(1, math.ceil(30 / cw)) if cw else 1
        for j in range(0, cols, step):
            x = f.x0 + (j + 0.5) * cw
            tip = f"<title>{_t(col_titles[j])}</title>" if col_titles else ""
            out.append(f'<text x="{x:.1f}" y="{f.y1 + 14}" text-anchor="middle">{tip}{_t(col_labels[j])}</text>')
    out.append(f'<text x="{(f.x0 + f.x1) / 2:.1f}" y="{height - 8}" text-anchor="middle">{_t(x_label)}</text>')
    cy = (f.y0 + f.y1) / 2
    out.append(
        f'<text x="12" y="{cy:.1f}" text-anchor="middle" transform="rotate(-90 12 {cy:.1f})">{_t(y_label)}</text>'
    )
    # The colour scale: a gradient bar from hi (top) to lo (bottom) with ticks.
    lx = f.x1 + 14
    bar_h = f.y1 - f.y0
    steps = 32
    for k in range(steps):
        v = hi - (hi - lo) * (k + 0.5) / steps
        out.append(
            f'<rect x="{lx}" y="{f.y0 + bar_h * k / steps:.2f}" width="14" height="{bar_h / steps + 0.1:.2f}" '
            f'fill="{_colour(v, lo, hi, diverging)}"/>'
        )
    out.append(f'<rect x="{lx}" y="{f.y0}" width="14" height="{bar_h:.1f}" fill="none" stroke="#444"/>')
    ticks = nice_ticks(lo, hi, 4) if hi != lo else [lo]
    for v in ticks:
        y = f.y0 + (hi - v) / (hi - lo) * bar_h if hi != lo else f.y0 + bar_h / 2
        out.append(f'<line x1="{lx + 14}" x2="{lx + 18}" y1="{y:.1f}" y2="{y:.1f}" stroke="#444"/>')
        out.append(f'<text x="{lx + 20}" y="{y + 4:.1f}">{_t(format_number(v))}</text>')
    out.append(f'<text x="{lx}" y="{f.y0 - 6}">{_t(value_label)}</text>')
    if any(v is None or not math.isfinite(v) for r in values for v in r):
        out.append(f'<rect x="{lx}" y="{f.y1 + 8}" width="14" height="10" fill="{_NULL_FILL}"/>')
        out.append(f'<text x="{lx + 18}" y="{f.y1 + 17}">none</text>')
    return _close(out)
