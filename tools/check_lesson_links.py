#!/usr/bin/env python3
"""Every link and image of the lessons resolves, read as Markdown and read in the built site.

A learner meets the lessons in two forms. `tools/course next` names docs/lessons/*.md, which a code
host (GitHub) or an editor previews as GitHub-flavoured Markdown; and the docs target builds them,
with docs/*.md and the API reference, into the Doxygen site. A link that only one of the two
resolves is a broken link for half the readers, so both are checked:

  Markdown form (README.md, docs/*.md, docs/lessons/*.md): every image and every link that is not a
    URL names a path, relative to the page's folder, that exists in the repository; an image is a
    file. A #fragment, on the same page or on another .md page, is an anchor the preview makes:
    the slug GitHub derives from a heading (lowercase; punctuation other than '-' and '_' dropped;
    spaces to '-'; a repeated slug gets -1, -2, ...) or the id/name of an HTML element of that
    page (the <a id="..."></a> line above a heading that other pages link to). A page under docs/
    is built into the site as well, where Doxygen links to labels, never to slugs, so its
    fragments must be such HTML anchors. Code blocks, code spans and formulas are not read.

  Built-site form (<build>/docs/html): in the page Doxygen made of each Markdown page under docs/,
    every <a href>, <img src>, <object data> (Doxygen shows an SVG so), <script src> and
    <link href> that is not a URL names a file inside the html folder (so the site still works
    copied elsewhere), and a #fragment names an element with that id or name in the page it points
    to. A Markdown page with no page in the site fails too.

How a lesson writes them so that both forms resolve (docs/doxygen_md_filter.py turns them into
what Doxygen resolves when the site is built):

    ![Stage 04's sweep](../figures/sweep_matmul_h100.svg)      a path from the page's folder
    [the training step](04_cuda_matmul.md#lesson-04-step)       another lesson's section
    [the tolerances](#lesson-06-tolerances)                     a section of the same page

and the section linked to carries its label twice: `{#lesson-04-step}` at the end of its heading
(Doxygen's label) and `<a id="lesson-04-step"></a>` on the line above it (the preview's anchor).

    python3 tools/check_lesson_links.py                     the Markdown form only
    python3 tools/check_lesson_links.py --site DIR          and the built site in DIR (an html folder)
    python3 tools/check_lesson_links.py --build BUILD_DIR   build the docs target of BUILD_DIR (configured
                                                            with the ci preset where it is not yet), then both

Exit 1 with a line per broken link or image (path:line: what is wrong), else 0. tools/test.d/lesson-links
runs it in CI; its own tests are tools/tests/test_check_lesson_links.py.
"""
import argparse
import html
import html.parser
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent


def markdown_pages(root):
    """The Markdown pages a learner reads: README.md and every .md under docs/."""
    pages = [root / "README.md"] if (root / "README.md").exists() else []
    return pages + sorted((root / "docs").rglob("*.md"))


# ---- reading Markdown -------------------------------------------------------------------------------

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# Doxygen's formulas (\f$..\f$, \f[..\f], \f{..}{..\f}) hold brackets and parentheses that are not links.
FORMULA = re.compile(r"\\f\$.*?\\f\$|\\f\[.*?\\f\]|\\f\{.*?\\f\}", re.S)
CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)


def blank(m):
    """The match replaced by spaces, its newlines kept, so that offsets and line numbers hold."""
    return re.sub(r"[^\n]", " ", m.group(0))


def prose(text):
    """The text with fenced code blocks, code spans and formulas blanked out (offsets and lines kept)."""
    lines = text.split("\n")
    fence = None
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            lines[i] = " " * len(line)
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip(" `~"):
                fence = None
            lines[i] = " " * len(line)
    text = "\n".join(lines)
    text = FORMULA.sub(blank, text)
    return CODE_SPAN.sub(blank, text)


# [text](target) and ![alt](target): the text may hold one level of brackets and span lines; the
# target may be in <...> and be followed by a title.
INLINE = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>\n]*>|[^\s)]*)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
HTML_REF = re.compile(r"<(a|img)\b[^>]*?\s(href|src)\s*=\s*[\"']([^\"']*)[\"']", re.I)
HTML_ANCHOR = re.compile(r"<[a-z][a-z0-9]*\b[^>]*?\s(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


def references(text):
    """(line, 'image' or 'link', target) of every Markdown and HTML link and image in the text."""
    text = prose(text)
    out = []
    for m in INLINE.finditer(text):
        target = m.group(3)
        if target.startswith("<"):
            target = target[1:-1]
        out.append((text.count("\n", 0, m.start()) + 1, "image" if m.group(1) else "link", target))
    for m in HTML_REF.finditer(text):
        out.append((text.count("\n", 0, m.start()) + 1, "image" if m.group(1).lower() == "img" else "link",
                    html.unescape(m.group(3))))
    return sorted(out)


def heading_text(raw):
    """What a heading shows, as GitHub takes it for the slug: links by their text, no markup."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("`", "").replace("*", "")
    return html.unescape(text)


def github_slug(text):
    """The anchor GitHub gives a heading: lowercase, letters, digits, '-', '_' and spaces kept (every
    other punctuation mark and symbol dropped), each space a '-' (github-slugger's rule)."""
    kept = []
    for ch in text.strip().lower():
        cat = unicodedata.category(ch)
        if ch in " -" or cat[0] in "LMN" or cat == "Pc":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def markdown_anchors(text):
    """Every #fragment a preview of the page resolves: heading slugs (repeats numbered) and HTML ids."""
    lines = prose(text).split("\n")
    raw = text.split("\n")
    headings = []
    for i, line in enumerate(lines):
        m = ATX.match(line)
        if m:
            headings.append(raw[i].strip().lstrip("#").rstrip("#").strip() if m.group(2) else "")
        elif (SETEXT.match(line) and i > 0 and lines[i - 1].strip() and not ATX.match(lines[i - 1])
              and not SETEXT.match(lines[i - 1])):
            headings.append(raw[i - 1].strip())
    anchors, seen = set(), {}
    for h in headings:
        slug = github_slug(heading_text(h))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    anchors |= set(HTML_ANCHOR.findall("\n".join(lines)))
    return anchors


def is_url(target):
    return bool(re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target)) or target.startswith("//")


def counted_references(name, refs, skip, counts):
    """The references of page `name` to check, each as (where, kind, target), `where` the start of its
    message ("page:line: kind (target)"); those `skip` (a URL, say) says to pass over are left out.
    Once all are read, counts[name] = (links, images): how many of each it checked."""
    links = images = 0
    for line, kind, target in refs:
        if skip(target):
            continue
        if kind == "image":
            images += 1
        else:
            links += 1
        yield f"{name}:{line}: {kind} ({target})", kind, target
    counts[name] = (links, images)


def check_markdown(pages, root):
    """(problems, {page: (links, images)}) of the Markdown form of `pages`, inside repository `root`."""
    problems, counts = [], {}
    anchors_of = {}

    def anchors(path):
        if path not in anchors_of:
            anchors_of[path] = markdown_anchors(path.read_text(encoding="utf-8"))
        return anchors_of[path]

    def html_ids(path):
        return set(HTML_ANCHOR.findall(prose(path.read_text(encoding="utf-8"))))

    root = root.resolve()
    for page in pages:
        page = page.resolve()
        name = page.relative_to(root).as_posix()
        in_site = (root / "docs") in page.parents   # Doxygen builds it into the site too
        for where, kind, target in counted_references(name, references(page.read_text(encoding="utf-8")), is_url,
                                                      counts):
            path, _, fragment = target.partition("#")
            path, fragment = unquote(path), unquote(fragment)
            if not path and not fragment:
                problems.append(f"{where}: an empty target")
                continue
            if path.startswith("/"):
                problems.append(f"{where}: an absolute path; write it relative to the page's folder")
                continue
            dest = (page.parent / path).resolve() if path else page
            if root not in dest.parents and dest != root:
                problems.append(f"{where}: points outside the repository")
                continue
            if not dest.exists():
                hint = ""
                if kind == "image" and (root / "docs" / "figures" / Path(path).name).exists():
                    hint = (f"; the chart is docs/figures/{Path(path).name}: write "
                            f"{os.path.relpath(root / 'docs' / 'figures' / Path(path).name, page.parent)}")
                problems.append(f"{where}: {dest.relative_to(root).as_posix()} does not exist{hint}")
                continue
            if kind == "image" and not dest.is_file():
                problems.append(f"{where}: not a file")
                continue
            if not fragment:
                continue
            if dest.suffix != ".md":
                problems.append(f"{where}: a #fragment on a page that is not Markdown, which this check cannot follow")
            elif in_site and fragment in anchors(dest) and fragment not in html_ids(dest):
                # A heading's slug: the preview has it, but Doxygen links only to labels and anchors.
                problems.append(f"{where}: #{fragment} is a heading's slug in {dest.relative_to(root).as_posix()}, "
                                f"which the built site does not have: give the heading a label "
                                f'{{#name}} and <a id="name"></a> on the line above it, and link #name')
            elif fragment not in anchors(dest):
                labelled = any(re.search(r"\{#" + re.escape(fragment) + r"\}", p.read_text(encoding="utf-8"))
                               for p in markdown_pages(root) if p.exists())
                hint = (f'; its heading has {{#{fragment}}} (Doxygen\'s label), which a preview does not '
                        f'make an anchor: put <a id="{fragment}"></a> on the line above the heading, and '
                        f"link the page that holds it") if labelled else ""
                problems.append(f"{where}: {dest.relative_to(root).as_posix()} has no anchor #{fragment}{hint}")
    return problems, counts


# ---- reading the built site -------------------------------------------------------------------------

REF_ATTRS = {("a", "href"): "link", ("area", "href"): "link", ("img", "src"): "image",
             ("object", "data"): "image", ("iframe", "src"): "link", ("script", "src"): "link",
             ("link", "href"): "link"}


class HtmlPage(html.parser.HTMLParser):
    """The ids and names of one HTML page, and the links and images in it, with their lines."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.refs = []   # (line, kind, target)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])
        for (t, attr), kind in REF_ATTRS.items():
            if tag == t and a.get(attr) is not None:
                self.refs.append((self.getpos()[0], kind, a[attr]))

    handle_startendtag = handle_starttag


def read_html(path):
    page = HtmlPage()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    page.close()
    return page


def md_label(path):
    """The label Doxygen names a Markdown page by: {#label} on its first heading, else None."""
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith("#"):
            m = re.search(r"\{#([\w-]+)\}\s*$", line)
            return m.group(1) if m else None
    return None


def site_pages(docs, html_dir, mainpage="index.md"):
    """{Markdown page: the HTML page Doxygen makes of it} for every .md under `docs`."""
    out = {}
    for md in sorted(docs.rglob("*.md")):
        if md.relative_to(docs).as_posix() == mainpage:
            out[md] = html_dir / "index.html"
            continue
        label = md_label(md)
        # Without a label Doxygen names the page after its path: md_ and the path, '/' and '.' as '_'.
        name = label or "md_" + re.sub(r"[/.]", "_", md.relative_to(docs.parent).with_suffix("").as_posix())
        out[md] = html_dir / f"{name}.html"
    return out


def check_site(pages, html_dir):
    """(problems, {page: (links, images)}) of the given HTML pages, read in the site `html_dir`."""
    problems, counts = [], {}
    html_dir = html_dir.resolve()
    parsed = {}

    def page_of(path):
        if path not in parsed:
            parsed[path] = read_html(path)
        return parsed[path]

    for path in pages:
        path = path.resolve()
        name = path.relative_to(html_dir).as_posix()
        refs = page_of(path).refs
        for where, kind, target in counted_references(name, refs, lambda t: is_url(t) or t in ("", "#"), counts):
            parts = urlsplit(target)
            rel, fragment = unquote(parts.path), unquote(parts.fragment)
            if rel.startswith("/"):
                problems.append(f"{where}: an absolute path, which a site copied elsewhere does not have")
                continue
            dest = (path.parent / rel).resolve() if rel else path
            if html_dir not in dest.parents:
                problems.append(f"{where}: points outside the site's html folder")
                continue
            if not dest.is_file():
                problems.append(f"{where}: {dest.relative_to(html_dir).as_posix()} is not in the site")
                continue
            if fragment and dest.suffix == ".html" and fragment not in page_of(dest).ids:
                problems.append(f"{where}: {dest.relative_to(html_dir).as_posix()} has no element with id #{fragment}")
    return problems, counts


# ---- the command --------------------------------------------------------------------------------------

def say(msg):
    print(f"lesson-links: {msg}", flush=True)


def report(form, problems, counts):
    links = sum(n for n, _ in counts.values())
    images = sum(n for _, n in counts.values())
    for p in problems:
        say(f"BROKEN ({form}) {p}")
    lessons = [c for name, c in counts.items() if "lesson" in name]
    say(f"{form}: {links} links and {images} images in {len(counts)} pages "
        f"({sum(n for n, _ in lessons)} links and {sum(n for _, n in lessons)} images in the {len(lessons)} lessons): "
        + (f"{len(problems)} broken" if problems else "all resolve"))


def build_docs(build_dir):
    """Builds the docs target of build_dir; its html folder, or None (and why) where it cannot."""
    if not shutil.which("doxygen"):
        return None, "SKIPPED the built-site form: needs Doxygen to build the site (Debian: apt-get install doxygen)"
    if not (build_dir / "CMakeCache.txt").exists():
        if subprocess.run(["cmake", "--preset", "ci", "-B", str(build_dir)], cwd=ROOT,
                          stdout=subprocess.DEVNULL).returncode != 0:
            return None, f"FAILED: could not configure {build_dir}"
    if subprocess.run(["cmake", "--build", str(build_dir), "--target", "docs"], cwd=ROOT).returncode != 0:
        return None, "FAILED: the docs target did not build (Doxygen's warnings are above)"
    return build_dir / "docs" / "html", ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--site", type=Path, help="the Doxygen html folder to check (already built)")
    where.add_argument("--build", type=Path, help="a build folder: build its docs target, then check its site")
    args = ap.parse_args(argv)

    problems, counts = check_markdown(markdown_pages(ROOT), ROOT)
    report("Markdown", problems, counts)
    failed = bool(problems)

    html_dir = args.site
    if args.build:
        html_dir, why = build_docs(args.build if args.build.is_absolute() else ROOT / args.build)
        if html_dir is None:
            say(why)
            return 1 if why.startswith("FAILED") or failed else 0
    if html_dir is None:
        say("the built site was not checked (give --site HTML_DIR or --build BUILD_DIR)")
        return 1 if failed else 0
    pages = site_pages(ROOT / "docs", html_dir)
    missing = [f"{md.relative_to(ROOT).as_posix()}: no page {page.name} in {html_dir}"
               for md, page in pages.items() if not page.is_file()]
    problems, counts = check_site([p for p in pages.values() if p.is_file()], html_dir)
    report("built site", missing + problems, counts)
    return 1 if failed or missing or problems else 0


if __name__ == "__main__":
    sys.exit(main())
