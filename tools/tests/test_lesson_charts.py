"""Every lesson shows its stage's charts from docs/figures/, and every chart there is shown.

How a lesson shows a chart: a Markdown image with the chart's path from the lesson's folder,

    ![Stage 04: GFLOP/s of every matmul kernel against cuBLAS](../figures/sweep_matmul_h100.svg)

(what a Markdown preview follows; the docs build hands Doxygen the bare name, which it finds in
docs/figures/, its IMAGE_PATH, and copies beside the pages: tools/doxygen_md_filter.py). The
comparison charts come with the comparison tables: tools/compare_tables.py writes each
compare_NAME.svg under its table, inside the <!-- compare:NAME --> block, so a lesson that holds the
two blocks shows the speedup charts with nothing more to do. A stage's own chart (a sweep) is placed
by hand where the lesson discusses it, and named in STAGE_CHARTS below.

    python3 -m unittest tools.tests.test_lesson_charts     (tools/test.d/compare-selftest runs it)
"""
import re
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import check_lesson_links  # noqa: E402
import compare_tables  # noqa: E402

FIGURES = ROOT / "docs" / "figures"
LESSONS = sorted((ROOT / "docs" / "lessons").glob("[0-9][0-9]_*.md"))
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
# A stage's own charts, by the prefix of their file names: the lesson of the stage must show each
# chart of docs/figures with that prefix (every machine's). New stages with a chart add a line.
STAGE_CHARTS = {"03": "sweep_threads_", "04": "sweep_matmul_", "09": "scaling_"}


def images(page):
    # Not those in code (the README shows the form a lesson writes: `![caption](../figures/NAME.svg)`).
    return IMAGE.findall(check_lesson_links.prose(page.read_text()))


def shown_charts(page):
    """The file names of the images a page shows."""
    return {Path(src).name for src in images(page)}


def charts():
    return sorted(p.name for p in FIGURES.glob("*.svg"))


class LessonCharts(unittest.TestCase):
    def test_every_lesson_shows_a_chart_of_docs_figures(self):
        self.assertTrue(LESSONS)
        for lesson in LESSONS:
            shown = shown_charts(lesson) & set(charts())
            self.assertTrue(shown, f"{lesson.relative_to(ROOT)} shows no chart of docs/figures/: hold the "
                                   "<!-- compare:h100 --> and <!-- compare:vm --> blocks (tools/compare_tables.py "
                                   "fills them with the tables and charts) or add ![caption](../figures/NAME.svg)")

    def test_every_stage_shows_its_own_charts(self):
        for stage, prefix in STAGE_CHARTS.items():
            lesson = next((l for l in LESSONS if l.name.startswith(stage + "_")), None)
            self.assertIsNotNone(lesson, f"no lesson for stage {stage}")
            own = [c for c in charts() if c.startswith(prefix)]
            self.assertTrue(own, f"no {prefix}*.svg in docs/figures/ for stage {stage}")
            for chart in own:
                self.assertIn(chart, shown_charts(lesson), f"{lesson.relative_to(ROOT)} does not show {chart}")

    def test_every_chart_is_shown_somewhere(self):
        shown = set()
        # docs/replication.md shows the studies' experiments (tools/replicate.py writes their blocks).
        for page in LESSONS + [ROOT / "README.md", ROOT / "docs" / "replication.md"]:
            shown |= shown_charts(page)
        orphans = [c for c in charts() if c not in shown]
        self.assertFalse(orphans, f"charts in docs/figures/ that no lesson shows: {orphans}")

    def test_every_image_a_page_shows_exists(self):
        # By its path from the page's folder, as a Markdown preview looks for it; the built site's
        # images are checked by tools/check_lesson_links.py (tools/test.d/lesson-links).
        for page in sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]:
            for src in images(page):
                if "://" not in src:
                    self.assertTrue((page.parent / src).is_file(),
                                    f"{page.relative_to(ROOT)} shows {src}, which is not a file beside it")

    def test_compare_blocks_carry_their_chart_by_the_path_each_page_needs(self):
        run = compare_tables.RUNS["h100"]
        self.assertIn("](../figures/compare_h100.svg)", compare_tables.chart_line("h100", run, LESSONS[0]))
        self.assertIn("](docs/figures/compare_h100.svg)", compare_tables.chart_line("h100", run, ROOT / "README.md"))
        self.assertEqual(compare_tables.chart_line("x", FIGURES / "no_such_run.json", LESSONS[0]), "")


if __name__ == "__main__":
    unittest.main()
