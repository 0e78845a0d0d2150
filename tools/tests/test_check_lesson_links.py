"""tools/check_lesson_links.py and tools/doxygen_md_filter.py: the lessons' links and images checked in
both forms. A miniature docs/ folder in a temporary directory, written as the lessons are; with it whole,
each check passes, and with a broken image path or a broken anchor planted, each check names it: in the
Markdown form (what a code host's or an editor's preview follows) and in the built site (pages written
by hand, and, where Doxygen is installed, the miniature built by Doxygen through the filter). Then the
filter's three rewrites, and the repository's own pages in the Markdown form. (The repository's built
site is checked by tools/test.d/lesson-links.)

    python3 -m unittest tools.tests.test_check_lesson_links     (tools/test.d/compare-selftest runs it)
"""
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import check_lesson_links as links  # noqa: E402
import doxygen_md_filter  # noqa: E402

LESSON_A = """# Stage 01: the first {#lesson-a}

[TOC]

The chart:

![Every stage](../figures/chart.svg)

The same page's [tolerances](#lesson-a-tolerances), the next lesson's
[measured section](02_b.md#lesson-b-measured) and the [whole of it](02_b.md),
[the index](../index.md).

```
![not an image, code](nope.svg) and [not a link](#nope)
```

Nor is `[a code span](#nope)` one, nor \\f$[0, 1](x)\\f$.

<a id="lesson-a-tolerances"></a>
## Tolerances {#lesson-a-tolerances}

Text.
"""

LESSON_B = """# Stage 02: the second {#lesson-b}

## Kernel 6: a 4 × 4 block per thread

## Notes

## Notes

<a id="lesson-b-measured"></a>
## Measured {#lesson-b-measured}

Back to [the first](01_a.md#lesson-a-tolerances).
"""

INDEX = "# The course\n\n[Stage 01](lessons/01_a.md), [its tolerances](lessons/01_a.md#lesson-a-tolerances).\n"

SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n'


class TempTree:
    """A temporary folder of files, removed on close() or at the end of a with block."""

    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory()

    def close(self):
        self.tmp.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


class MiniDocs(TempTree):
    """docs/index.md, docs/lessons/01_a.md and 02_b.md, docs/figures/chart.svg and a README, in a
    temporary folder; `plant` replaces text of a page first."""

    def __init__(self, plant=None):
        super().__init__()
        self.root = Path(self.tmp.name)
        # The README is read only as Markdown, so it may link a heading by the slug a preview makes.
        readme = ("See [the lessons](docs/index.md) and ![a chart](docs/figures/chart.svg), a heading\n"
                  "[by its slug](docs/lessons/02_b.md#kernel-6-a-4--4-block-per-thread) and its repeat\n"
                  "[the second](docs/lessons/02_b.md#notes-1).\n")
        files = {"README.md": readme,
                 "docs/index.md": INDEX, "docs/lessons/01_a.md": LESSON_A, "docs/lessons/02_b.md": LESSON_B,
                 "docs/figures/chart.svg": SVG}
        for rel, text in files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        for rel, (old, new) in (plant or {}).items():
            path = self.root / rel
            text = path.read_text(encoding="utf-8")
            assert old in text, old
            path.write_text(text.replace(old, new, 1), encoding="utf-8")

    def markdown(self):
        return links.check_markdown(links.markdown_pages(self.root), self.root)



class OneProblem:
    """For a test class whose check() returns (problems, counts)."""

    def one_problem(self, *args, **kwargs):
        """The one problem check() finds (a failure if there are none or several)."""
        problems, _ = self.check(*args, **kwargs)
        self.assertEqual(len(problems), 1, problems)
        return problems[0]


class MarkdownForm(OneProblem, unittest.TestCase):
    def check(self, plant=None):
        with MiniDocs(plant) as docs:
            return docs.markdown()

    def test_the_whole_miniature_passes_and_everything_is_counted(self):
        problems, counts = self.check()
        self.assertEqual(problems, [])
        # Code blocks, code spans and formulas hold no links; the rest is counted.
        self.assertEqual(counts["docs/lessons/01_a.md"], (4, 1))
        self.assertEqual(counts["docs/lessons/02_b.md"], (1, 0))
        self.assertEqual(counts["README.md"], (3, 1))

    def test_a_broken_image_path_is_caught(self):
        problem = self.one_problem({"docs/lessons/01_a.md": ("../figures/chart.svg", "../figures/nope.svg")})
        self.assertRegex(problem, r"^docs/lessons/01_a\.md:7: image \(\.\./figures/nope\.svg\): "
                                      r"docs/figures/nope\.svg does not exist")

    def test_an_image_by_bare_name_only_doxygen_finds_is_caught_with_the_path_to_write(self):
        problem = self.one_problem({"docs/lessons/01_a.md": ("../figures/chart.svg", "chart.svg")})
        self.assertIn("docs/lessons/chart.svg does not exist; the chart is docs/figures/chart.svg: write "
                      "../figures/chart.svg", problem)

    def test_a_broken_anchor_on_another_page_is_caught(self):
        problem = self.one_problem({"docs/lessons/01_a.md": ("02_b.md#lesson-b-measured", "02_b.md#lesson-b-nope")})
        self.assertIn("docs/lessons/01_a.md:10: link (02_b.md#lesson-b-nope): docs/lessons/02_b.md has no "
                      "anchor #lesson-b-nope", problem)

    def test_a_label_only_doxygen_reads_is_not_an_anchor(self):
        # Without the <a id> line the heading's {#lesson-b-measured} is all there is: the preview's slug
        # of that heading is measured-lesson-b-measured, so the link is broken there, and the hint says why.
        problem = self.one_problem({"docs/lessons/02_b.md": ('<a id="lesson-b-measured"></a>\n', "")})
        self.assertIn("has no anchor #lesson-b-measured; its heading has {#lesson-b-measured}", problem)
        self.assertIn('<a id="lesson-b-measured"></a>', problem)

    def test_a_section_of_another_page_linked_as_if_on_this_one_is_caught(self):
        problem = self.one_problem({"docs/lessons/01_a.md": ("(02_b.md#lesson-b-measured)", "(#lesson-b-measured)")})
        self.assertIn("docs/lessons/01_a.md has no anchor #lesson-b-measured", problem)

    def test_a_missing_page_and_a_site_only_link_are_caught(self):
        problems, _ = self.check({"docs/index.md": ("(lessons/01_a.md)", "(lessons/01_nope.md)"),
                                  "docs/lessons/02_b.md": ("(01_a.md#lesson-a-tolerances)", "(files.html)")})
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("docs/lessons/01_nope.md does not exist", problems[0])
        self.assertIn("docs/lessons/files.html does not exist", problems[1])

    def test_a_slug_from_a_page_of_the_site_is_caught(self):
        # The preview resolves it, but in the site Doxygen has no such label.
        problem = self.one_problem({"docs/index.md": ("(lessons/01_a.md)", "(lessons/02_b.md#notes-1)")})
        self.assertIn("#notes-1 is a heading's slug in docs/lessons/02_b.md, which the built site does not have",
                      problem)

    def test_slugs_as_github_makes_them(self):
        self.assertEqual(links.github_slug("Kernel 6: a 4 × 4 block per thread"), "kernel-6-a-4--4-block-per-thread")
        self.assertEqual(links.github_slug(links.heading_text("One `step()` on the *GPU* {#lesson-04-step}")),
                         "one-step-on-the-gpu-lesson-04-step")
        self.assertEqual(links.github_slug("E1: sequential (thesis Figs 5.1-5.2)"), "e1-sequential-thesis-figs-51-52")
        anchors = links.markdown_anchors("# A\n\n## Notes\n\n## Notes\n\nSetext\n---\n\n```\n# not a heading\n```\n")
        self.assertEqual(anchors, {"a", "notes", "notes-1", "setext"})


class HtmlSite(TempTree):
    """An html folder of pages written by hand, as Doxygen writes them."""

    def __init__(self, pages):
        super().__init__()
        self.html = Path(self.tmp.name) / "html"
        self.html.mkdir()
        (Path(self.tmp.name) / "outside.svg").write_text(SVG)
        (self.html / "chart.svg").write_text(SVG)
        for name, body in pages.items():
            (self.html / name).write_text(f"<!DOCTYPE html><html><body>\n{body}\n</body></html>\n")

    def check(self, names):
        return links.check_site([self.html / n for n in names], self.html)



GOOD_A = ('<a class="anchor" id="lesson-a-tolerances"></a><h2>Tolerances</h2>\n'
          '<object type="image/svg+xml" data="chart.svg"></object>\n'
          '<a class="el" href="lesson-b.html#lesson-b-measured">measured</a> <a href="#lesson-a-tolerances">here</a>\n'
          '<a href="https://example.org/x">out</a> <img src="chart.svg"/>')
GOOD_B = '<a class="anchor" id="lesson-b-measured"></a><a class="el" href="lesson-a.html">back</a>'


class SiteForm(OneProblem, unittest.TestCase):
    def check(self, a=GOOD_A, b=GOOD_B):
        with HtmlSite({"lesson-a.html": a, "lesson-b.html": b}) as site:
            return site.check(["lesson-a.html", "lesson-b.html"])

    def test_the_whole_site_passes(self):
        problems, counts = self.check()
        self.assertEqual(problems, [])
        self.assertEqual(counts["lesson-a.html"], (2, 2))

    def test_a_broken_image_path_is_caught(self):
        problem = self.one_problem(a=GOOD_A.replace('<img src="chart.svg"/>', '<img src="nope.svg"/>'))
        self.assertIn("lesson-a.html:5: image (nope.svg): nope.svg is not in the site", problem)

    def test_an_svg_outside_the_html_folder_is_caught(self):
        # It exists on disk beside the site, but a copy of the html folder elsewhere would lose it.
        problem = self.one_problem(a=GOOD_A.replace('data="chart.svg"', 'data="../outside.svg"'))
        self.assertIn("image (../outside.svg): points outside the site's html folder", problem)

    def test_a_broken_anchor_is_caught(self):
        problem = self.one_problem(a=GOOD_A.replace("lesson-b.html#lesson-b-measured", "lesson-b.html#lesson-b-nope"))
        self.assertIn("lesson-a.html:4: link (lesson-b.html#lesson-b-nope): lesson-b.html has no element with "
                      "id #lesson-b-nope", problem)
        problem = self.one_problem(a=GOOD_A.replace('href="#lesson-a-tolerances"', 'href="#nope"'))
        self.assertIn("lesson-a.html has no element with id #nope", problem)

    def test_a_link_to_a_markdown_file_is_caught(self):
        # What Doxygen 1.9 leaves of [text](02_b.md#label) without the filter.
        problem = self.one_problem(b=GOOD_B.replace('href="lesson-a.html"', 'href="01_a.md#lesson-a-tolerances"'))
        self.assertIn("01_a.md is not in the site", problem)


class Filter(unittest.TestCase):
    def test_the_three_rewrites_and_nothing_else(self):
        out = doxygen_md_filter.doxygen_form(LESSON_A)
        self.assertEqual(out.count("\n"), LESSON_A.count("\n"), "every line stays on its line")
        self.assertIn("![Every stage](chart.svg)", out)
        self.assertIn("[measured section](#lesson-b-measured)", out)
        self.assertIn("[whole of it](02_b.md)", out)
        self.assertIn("[the index](../index.md)", out)
        self.assertIn("[tolerances](#lesson-a-tolerances)", out)
        self.assertNotIn('<a id="lesson-a-tolerances">', out)
        self.assertIn("## Tolerances {#lesson-a-tolerances}", out)
        # Code blocks and code spans are left as they are.
        self.assertIn("![not an image, code](nope.svg) and [not a link](#nope)", out)
        self.assertIn("`[a code span](#nope)`", out)

    def test_an_anchor_without_a_label_of_its_own_stays(self):
        text = '<a id="free"></a>\nText.\n\n<a id="x"></a>\n## X {#x}\n'
        self.assertEqual(doxygen_md_filter.doxygen_form(text), '<a id="free"></a>\nText.\n\n\n## X {#x}\n')

    def test_urls_are_left_alone(self):
        text = "[a](https://example.org/page.md#part) ![b](https://example.org/c/d.svg)\n"
        self.assertEqual(doxygen_md_filter.doxygen_form(text), text)


@unittest.skipUnless(shutil.which("doxygen"), "needs Doxygen (Debian: apt-get install doxygen)")
class BuiltByDoxygen(unittest.TestCase):
    """The miniature built by Doxygen with the site's image path and filter (docs/Doxyfile.in's lines)."""

    def build(self, docs, filtered=True):
        settings = {}
        for line in (ROOT / "docs" / "Doxyfile.in").read_text().split("\n"):
            m = re.match(r"^(IMAGE_PATH|FILTER_PATTERNS)\s*=\s*(.*)$", line)
            if m:
                settings[m.group(1)] = (m.group(2).replace("@CMAKE_SOURCE_DIR@/tools", str(ROOT / "tools"))
                                        .replace("@CMAKE_SOURCE_DIR@", str(docs.root))
                                        .replace("@Python3_EXECUTABLE@", sys.executable))
        self.assertEqual(set(settings), {"IMAGE_PATH", "FILTER_PATTERNS"})
        if not filtered:
            del settings["FILTER_PATTERNS"]
        doxyfile = docs.root / "Doxyfile"
        doxyfile.write_text("\n".join([
            f"OUTPUT_DIRECTORY = {docs.root / 'out'}", f"INPUT = {docs.root / 'docs'}", "FILE_PATTERNS = *.md",
            "RECURSIVE = YES", f"USE_MDFILE_AS_MAINPAGE = {docs.root / 'docs' / 'index.md'}",
            f"STRIP_FROM_PATH = {docs.root}", "GENERATE_LATEX = NO", "USE_MATHJAX = YES", "HAVE_DOT = NO", "QUIET = YES",
            *(f"{k} = {v}" for k, v in settings.items())]) + "\n")
        proc = subprocess.run(["doxygen", str(doxyfile)], cwd=docs.root, capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        html = docs.root / "out" / "html"
        pages = links.site_pages(docs.root / "docs", html)
        for md, page in pages.items():
            self.assertTrue(page.is_file(), f"no {page.name} for {md.name}")
        return proc.stderr, links.check_site(list(pages.values()), html)

    def test_the_miniature_resolves_in_the_site_too(self):
        with MiniDocs() as docs:
            warnings, (problems, counts) = self.build(docs)
        self.assertEqual(warnings.strip(), "")
        self.assertEqual(problems, [])
        self.assertGreaterEqual(counts["lesson-a.html"][1], 1)

    def test_a_broken_image_path_breaks_the_site_too(self):
        with MiniDocs({"docs/lessons/01_a.md": ("../figures/chart.svg", "../figures/nope.svg")}) as docs:
            _, (problems, _) = self.build(docs)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("lesson-a.html", problems[0])
        self.assertIn("nope.svg is not in the site", problems[0])

    def test_a_broken_anchor_fails_the_build(self):
        # Doxygen leaves an unresolved reference as plain text, so no link is left for the site's check
        # to follow: its warning is the check (the docs target fails on warnings).
        with MiniDocs({"docs/lessons/01_a.md": ("02_b.md#lesson-b-measured", "02_b.md#lesson-b-nope")}) as docs:
            warnings, _ = self.build(docs)
        self.assertRegex(warnings, r"01_a\.md:10: warning: unable to resolve reference to 'lesson-b-nope'")

    def test_without_the_filter_the_preview_forms_break_the_site(self):
        # Why the filter is there: Doxygen 1.9 prints ../figures/chart.svg and 02_b.md#label as they
        # stand, pointing outside the html folder and at a file the site does not have, and takes the
        # <a id> line as a second label of its heading. (A later Doxygen may resolve some of them.)
        version = subprocess.run(["doxygen", "--version"], capture_output=True, text=True).stdout.strip()
        if not version.startswith("1.9."):
            self.skipTest(f"shows what Doxygen 1.9 does; this is Doxygen {version}")
        with MiniDocs() as docs:
            warnings, (problems, _) = self.build(docs, filtered=False)
        self.assertIn("multiple use of section label 'lesson-a-tolerances'", warnings)
        self.assertTrue(any("(../figures/chart.svg): points outside the site's html folder" in p for p in problems),
                        problems)
        self.assertTrue(any("(02_b.md#lesson-b-measured): 02_b.md is not in the site" in p for p in problems),
                        problems)


if __name__ == "__main__":
    unittest.main()
