"""SVG charts written by hand (no plotting library): a grouped bar chart on a log scale around 1x,
and a line chart. Every mark carries a class (and data-* attributes) so tests can count them."""
import math
import textwrap
from xml.sax.saxutils import escape, quoteattr

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
INK, GREY, LIGHT = "#222222", "#666666", "#dddddd"
# Colour-blind-safe (Okabe-Ito) for the series.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000"]
LEGEND_CHAR = 7.2   # px a legend character takes at 11.5 px type, capitals included ("11 TF32 mma")
DEVICE_COLOURS = {"CPU, 1 thread": "#56B4E9", "CPU, all cores": "#009E73", "GPU": "#E69F00"}


def _attrs(kw):
    out = []
    for k, v in kw.items():
        if v is None:
            continue
        name = k.rstrip("_").replace("_", "-")
        if isinstance(v, float):
            v = f"{v:.2f}".rstrip("0").rstrip(".") if name in ("x", "y", "x1", "x2", "y1", "y2", "width", "height",
                                                                  "cx", "cy", "r") else repr(v)
        out.append(f"{name}={quoteattr(str(v))}")
    return " ".join(out)


class Svg:
    def __init__(self, width, height):
        self.width, self.height, self.parts = width, height, []

    def rect(self, x, y, w, h, **kw):
        self.parts.append(f"<rect {_attrs(dict(x=x, y=y, width=max(w, 0.0), height=max(h, 0.0), **kw))}/>")

    def line(self, x1, y1, x2, y2, stroke=INK, width=1, **kw):
        self.parts.append(f"<line {_attrs(dict(x1=x1, y1=y1, x2=x2, y2=y2, stroke=stroke, stroke_width=width, **kw))}/>")

    def polyline(self, points, stroke, width=2, **kw):
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.parts.append(f"<polyline {_attrs(dict(points=pts, fill='none', stroke=stroke, stroke_width=width, **kw))}/>")

    def circle(self, cx, cy, r, **kw):
        self.parts.append(f"<circle {_attrs(dict(cx=cx, cy=cy, r=r, **kw))}/>")

    def text(self, x, y, s, size=12, anchor="start", fill=INK, weight=None, rotate=None, **kw):
        transform = f"rotate({rotate} {x:.1f} {y:.1f})" if rotate else None
        attrs = _attrs(dict(x=x, y=y, font_size=size, text_anchor=anchor, fill=fill, font_weight=weight,
                            transform=transform, **kw))
        self.parts.append(f"<text {attrs}>{escape(str(s))}</text>")

    def render(self, title):
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n'
                f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                f'viewBox="0 0 {self.width} {self.height}" font-family={quoteattr(FONT)}>\n'
                f"<title>{escape(title)}</title>\n"
                f'<rect x="0" y="0" width="{self.width}" height="{self.height}" fill="#ffffff"/>\n'
                + "\n".join(self.parts) + "\n</svg>\n")


def _header(svg, title, subtitle_lines, x=20):
    svg.text(x, 28, title, size=17, weight="bold", class_="title")
    for i, line in enumerate(subtitle_lines):
        svg.text(x, 48 + 16 * i, line, size=11.5, fill=GREY, class_="subtitle")
    return 48 + 16 * len(subtitle_lines)


def ticks_125(lo, hi):
    """1-2-5 ticks from lo to hi (positive), or powers of ten only when those are too many."""
    out = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0 ** e
            if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9):
                out.append(v)
    if len(out) > 12:
        out = [v for v in out if abs(math.log10(v) - round(math.log10(v))) < 1e-9]
    return out


def log_domain(values, pad=1.25, include_one=True):
    """[lo, hi] on a 1-2-5 grid around the values (and 1, where bars start)."""
    vals = [v for v in values if v and v > 0] + ([1.0] if include_one else [])
    vals = vals or [1.0]
    lo, hi = min(vals) / pad, max(vals) * pad
    grid = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 2)
            for m in (1, 2, 5)]
    return max(v for v in grid if v <= lo), min(v for v in grid if v >= hi)


def fmt_tick(v):
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 1:
        return f"{v:g}"
    return f"{v:.3g}"


def wrap_notes(notes, width):
    """Footnotes broken into lines that fit `width` pixels at 10.5 px type (about 5.9 px a character)."""
    chars = max(40, int((width - 40) / 5.9))
    return [line for note in notes for line in textwrap.wrap(note, chars, subsequent_indent="  ")]


def _legend(svg, items, x, y, max_x):
    """items: [(colour, label, dash)]; wraps to a new line at max_x. Returns the y below it."""
    cx = x
    for colour, label, dash in items:
        w = 34 + LEGEND_CHAR * len(label)
        if cx + w > max_x and cx > x:
            cx, y = x, y + 18
        if dash is None:
            svg.rect(cx, y - 10, 14, 12, fill=colour, class_="legend")
        else:
            svg.line(cx, y - 4, cx + 22, y - 4, stroke=colour, width=2.5, stroke_dasharray=dash or None,
                     class_="legend")
        svg.text(cx + (20 if dash is None else 28), y, label, size=11.5)
        cx += w
    return y + 18


def bar_chart(groups, *, title, subtitle, y_label, legend, footnotes, width=960, height=560):
    """Bars on a log scale that grow up from 1x (faster) or down from it (slower).

    groups: [{"label": str, "bars": [{"label", "value" (None = no bar), "text" (above the bar),
    "note" (under the label), "colour", "attrs" (data-* for the rect)}]}]"""
    footnotes = wrap_notes(footnotes, width)
    height += 16 * max(0, len(footnotes) - 3)
    svg = Svg(width, height)
    top = _header(svg, title, subtitle) + 16
    left, right = 78, width - 24
    bottom = height - 86 - 16 * len(footnotes)
    values = [b["value"] for g in groups for b in g["bars"] if b.get("value")]
    lo, hi = log_domain(values)

    def y_of(v):
        return bottom - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (bottom - top)

    for t in ticks_125(lo, hi):
        y = y_of(t)
        svg.line(left, y, right, y, stroke=LIGHT if t != 1 else GREY, width=1 if t != 1 else 1.5, class_="grid")
        svg.text(left - 8, y + 4, fmt_tick(t) + "x", size=11, anchor="end", fill=GREY, class_="tick")
    svg.text(22, (top + bottom) / 2, y_label, size=12, anchor="middle", rotate=-90, class_="axis-label")
    svg.line(left, top, left, bottom, stroke=GREY)

    slots = sum(len(g["bars"]) for g in groups) + max(len(groups) - 1, 0)
    slot_w = (right - left - 20) / max(slots, 1)
    bar_w = min(slot_w * 0.7, 70)
    x = left + 10
    for gi, g in enumerate(groups):
        g_start = x
        for b in g["bars"]:
            cx = x + slot_w / 2
            v = b.get("value")
            if v:
                y1, y0 = y_of(v), y_of(1.0)
                svg.rect(cx - bar_w / 2, min(y0, y1), bar_w, max(abs(y0 - y1), 1.5), fill=b.get("colour", PALETTE[0]),
                         class_="bar", **b.get("attrs", {}))
                ty = min(y0, y1) - 6 if v >= 1 else max(y0, y1) + 14
                svg.text(cx, ty, b.get("text", ""), size=12, anchor="middle", weight="bold", class_="bar-value")
            else:
                svg.text(cx, y_of(1.0) - 8, b.get("text", ""), size=10.5, anchor="middle", fill=GREY,
                         class_="bar-missing", **b.get("attrs", {}))
            svg.text(cx, bottom + 16, b["label"], size=11.5, anchor="middle", class_="bar-label")
            if b.get("note"):
                svg.text(cx, bottom + 30, b["note"], size=10, anchor="middle", fill=GREY, class_="bar-note")
            x += slot_w
        svg.text((g_start + x) / 2, bottom + 50, g["label"], size=12.5, anchor="middle", weight="bold",
                 class_="group-label")
        if gi + 1 < len(groups):
            svg.line(x + slot_w / 2, top, x + slot_w / 2, bottom + 40, stroke=LIGHT, stroke_dasharray="4,4")
            x += slot_w
    y = _legend(svg, legend, left, bottom + 74, right)
    for i, note in enumerate(footnotes):
        svg.text(20, y + 2 + 16 * i, note, size=10.5, fill=GREY, class_="footnote")
    return svg.render(title)


def line_chart(series, *, title, subtitle, x_label, y_label, x_ticks, x_log2=True, y_log=False, y_min=None,
               footnotes=(), width=960, height=560):
    """series: [{"name", "points": [(x, y)], "colour", "dash" ("" solid), "markers": bool, "attrs"}]."""
    footnotes = wrap_notes(footnotes, width)
    height += 16 * max(0, len(footnotes) - 2)
    svg = Svg(width, height)
    top = _header(svg, title, subtitle) + 16
    left, right = 78, width - 24
    bottom = height - 56 - 18 * _legend_rows(series, left, right) - 16 * len(footnotes)
    y = _plot(svg, series, _scales(series, x_ticks, x_log2, y_log, y_min), top=top, bottom=bottom, left=left,
              right=right, x_ticks=x_ticks, x_label=x_label, y_label=y_label)
    for i, note in enumerate(footnotes):
        svg.text(20, y + 2 + 16 * i, note, size=10.5, fill=GREY, class_="footnote")
    return svg.render(title)


def line_panels(panels, *, title, subtitle, x_label, y_label, x_ticks, x_log2=True, y_log=False, y_min=None,
                footnotes=(), width=960, panel_height=230):
    """line_chart()s stacked one above the other on the same x and y scales, so that panels compare by
    eye; each has its title and its legend. panels: [{"title", "series" (as line_chart's)}]."""
    footnotes = wrap_notes(footnotes, width)
    svg = Svg(width, 0)
    y = _header(svg, title, subtitle) + 8
    left, right = 78, width - 24
    scales = _scales([s for p in panels for s in p["series"]], x_ticks, x_log2, y_log, y_min)
    for p in panels:
        svg.text(left, y + 18, p["title"], size=13, weight="bold", class_="panel-title")
        y = _plot(svg, p["series"], scales, top=y + 32, bottom=y + 32 + panel_height, left=left, right=right,
                  x_ticks=x_ticks, x_label=x_label, y_label=y_label) + 4
    for i, note in enumerate(footnotes):
        svg.text(20, y + 2 + 16 * i, note, size=10.5, fill=GREY, class_="footnote")
    svg.height = round(y + 16 * len(footnotes) + 8)
    return svg.render(title)


def _legend_rows(series, left, right):
    return 1 + sum(34 + LEGEND_CHAR * len(s["name"]) for s in series) // (right - left)


def _scales(series, x_ticks, x_log2, y_log, y_min):
    """The axes' transforms and ranges for every point of `series`: (fx, x range, fy, y range, y ticks, y_log)."""
    xs = [x for s in series for x, _ in s["points"]] + list(x_ticks)
    ys = [y for s in series for _, y in s["points"] if y is not None and y > 0]
    fx = (lambda v: math.log2(v)) if x_log2 else (lambda v: v)
    x_lo, x_hi = fx(min(xs)), fx(max(xs))
    if x_hi == x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    if y_log:
        y_lo, y_hi = log_domain(ys, pad=1.3, include_one=False)
        if y_min:
            y_lo = max(y_lo, y_min)
        fy = math.log10
        y_ticks = ticks_125(y_lo, y_hi)
    else:
        y_lo, y_hi = (y_min or 0.0), max(ys + [1.0]) * 1.1
        step = [s for s in (0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100) if (y_hi - y_lo) / s <= 10][0]
        y_ticks = [y_lo + i * step for i in range(int((y_hi - y_lo) / step) + 1)]
        fy = (lambda v: v)
    return fx, (x_lo, x_hi), fy, (y_lo, y_hi), y_ticks, y_log


def _plot(svg, series, scales, *, top, bottom, left, right, x_ticks, x_label, y_label):
    """The axes, the lines and their legend of one line chart between top and bottom; returns the y
    below the legend."""
    fx, (x_lo, x_hi), fy, (y_lo, y_hi), y_ticks, y_log = scales
    pad = 24

    def px(v):
        return left + pad + (fx(v) - x_lo) / (x_hi - x_lo) * (right - left - 2 * pad)

    def py(v):
        return bottom - (fy(v) - fy(y_lo)) / (fy(y_hi) - fy(y_lo)) * (bottom - top)

    for t in y_ticks:
        svg.line(left, py(t), right, py(t), stroke=LIGHT, class_="grid")
        svg.text(left - 8, py(t) + 4, fmt_tick(t), size=11, anchor="end", fill=GREY, class_="tick")
    for t in x_ticks:
        svg.line(px(t), bottom, px(t), bottom + 5, stroke=GREY)
        svg.text(px(t), bottom + 19, fmt_tick(t), size=11, anchor="middle", fill=GREY, class_="tick")
    svg.line(left, bottom, right, bottom, stroke=GREY)
    svg.line(left, top, left, bottom, stroke=GREY)
    svg.text((left + right) / 2, bottom + 40, x_label, size=12, anchor="middle", class_="axis-label")
    svg.text(22, (top + bottom) / 2, y_label, size=12, anchor="middle", rotate=-90, class_="axis-label")
    for s in series:
        pts = [(px(x), py(y)) for x, y in s["points"] if y is not None and y > 0 and (not y_log or y >= y_lo)]
        if len(pts) > 1:
            svg.polyline(pts, s["colour"], width=2.2 if not s.get("dash") else 1.6,
                         stroke_dasharray=s.get("dash") or None, class_="series", **s.get("attrs", {}))
        if s.get("markers", True):
            for x, y in pts:
                svg.circle(x, y, 3.6, fill=s["colour"], class_="point")
    return _legend(svg, [(s["colour"], s["name"], s.get("dash") or "") for s in series], left, bottom + 62, right)
