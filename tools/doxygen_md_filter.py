#!/usr/bin/env python3
"""Doxygen's input filter for the course's Markdown pages (docs/Doxyfile.in, FILTER_PATTERNS).

The lessons are written so that a plain Markdown preview (a code host's, an editor's) resolves their
links and images; Doxygen 1.9 resolves three of those forms differently, so the docs build passes each
page through this filter, which prints it to Doxygen in the forms Doxygen resolves:

  ![caption](../figures/compare_h100.svg)   ->  ![caption](compare_h100.svg)
      Doxygen finds an image by its bare name in IMAGE_PATH (docs/, docs/figures/) and copies it into
      the site; a path with folders it would print as it stands, pointing outside the html folder.
  [text](04_cuda_matmul.md#lesson-04-step)  ->  [text](#lesson-04-step)
      Doxygen turns "#label" into a reference to that label wherever it is, but leaves "page.md#label"
      as a link to a .md file the site does not have. (A link to a whole page, "page.md", it resolves.)
  <a id="lesson-04-step"></a>               ->  (an empty line)
      The anchor a preview needs above a heading whose {#lesson-04-step} only Doxygen reads; Doxygen
      would take it as a second label of the same name and warn (warnings fail the docs build).

Code blocks, code spans and formulas pass unchanged, and every line stays on its line, so Doxygen's
warnings name the right line of the page. tools/check_lesson_links.py checks the pages in both forms.

    python3 tools/doxygen_md_filter.py docs/lessons/04_cuda_matmul.md     (Doxygen runs it so)
"""
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from check_lesson_links import INLINE, is_url, prose  # noqa: E402  (one reading of the links for both)

ANCHOR_LINE = re.compile(r"^\s*<a\s+(?:id|name)\s*=\s*[\"']([\w-]+)[\"']\s*>\s*</a>\s*$")


def doxygen_form(text):
    masked = prose(text)
    labels = set(re.findall(r"^#{1,6} .*\{#([\w-]+)\}\s*$", masked, re.M))
    edits = []   # (start, end, replacement) in the text
    for m in INLINE.finditer(masked):
        start, end = m.span(3)
        target = text[start:end]
        if not target or target.startswith("<") or is_url(target):
            continue
        path, hash_, fragment = target.partition("#")
        if m.group(1):
            if "/" in path:
                edits.append((start, end, path.rsplit("/", 1)[1] + hash_ + fragment))
        elif fragment and path.endswith(".md"):
            edits.append((start, end, "#" + fragment))
    offset = 0
    for line in masked.split("\n"):
        m = ANCHOR_LINE.match(line)
        if m and m.group(1) in labels:
            edits.append((offset, offset + len(line), ""))
        offset += len(line) + 1
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def main():
    # Bytes, so that the page reaches Doxygen as UTF-8 whatever the locale of the build.
    sys.stdout.buffer.write(doxygen_form(Path(sys.argv[1]).read_text(encoding="utf-8")).encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
