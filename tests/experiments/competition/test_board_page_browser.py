"""index.html in a real headless browser (Chromium): every column of every table sorts both ways, in
the right order ("-" cells last, "#" by rank in one click, an arrow on the sorted column), and every
column of the board is defined on the page, as LEADERBOARD.md defines it.

The page is the committed board rendered again (``leaderboard.py render`` into a copy: the views as
this checkout writes them). The browser runs the page's own script, then a harness appended to it
that clicks each header twice and writes what it saw into the page; ``--dump-dom`` hands the page
back. Chromium comes from the system (``make setup`` installs it as root on Debian/Ubuntu, with the
sandbox's tools); without one the test is skipped, saying so, except where
``PLD_LAB_REQUIRE_BROWSER`` is set (``.ci/run`` sets it): there it fails.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from experiments import leaderboard as cli

ROOT = Path(__file__).resolve().parents[3]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

HARNESS = """
<script>
(() => {
  const seen = [];
  document.querySelectorAll("table.sortable").forEach((table, t) => {
    [...table.tHead.rows[0].cells].forEach((th, i) => {
      for (const click of [1, 2]) {
        th.click();
        const cells = [...table.tBodies[0].rows].map(r => (r.cells[i].dataset.v ?? r.cells[i].textContent).trim());
        seen.push({table: t, column: th.textContent, click, sort: th.getAttribute("aria-sort"),
                   arrow: getComputedStyle(th, "::after").content, cells});
      }
    });
  });
  const main = document.querySelector("table.sortable");
  const heads = [...main.tHead.rows[0].cells].map(th => ({name: th.textContent, title: th.title}));
  const defined = [...document.querySelectorAll("#columns dt")].map(dt => dt.textContent);
  const links = [...document.querySelectorAll("a[href]")].map(a => a.getAttribute("href"));
  const pre = document.createElement("pre");
  pre.id = "harness";
  pre.textContent = JSON.stringify({seen, heads, defined, links, text: document.body.innerText});
  document.body.appendChild(pre);
})();
</script>
"""


def browser() -> str:
    found = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if found is None:
        reason = ("no headless browser (chromium): `make setup` installs it as root on Debian/Ubuntu, or "
                  "`apt-get install chromium`")
        if os.environ.get("PLD_LAB_REQUIRE_BROWSER"):
            pytest.fail(reason)
        pytest.skip(reason)
    return found


@pytest.fixture(scope="module")
def seen(tmp_path_factory) -> dict:
    chromium = browser()
    folder = tmp_path_factory.mktemp("board") / "leaderboard"
    shutil.copytree(ROOT / "leaderboard", folder)
    assert cli.main(["render", "--board", str(folder)]) == 0
    page = folder / "index.html"
    tested = folder / "tested.html"
    tested.write_text(page.read_text().replace("</body>", HARNESS + "</body>"))
    done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", tested.as_uri()],
                          capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="harness">(.*?)</pre>', done.stdout, flags=re.S)
    assert found, f"the harness wrote nothing: exit {done.returncode}\n{done.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


def key(cell: str):
    """The page's sort key of a cell: None for no figure, a number where it starts with one, else the text."""
    if cell in ("", "-"):
        return None
    number = re.match(r"^-?\d+(?:\.\d+)?(?:e-?\d+)?", cell)
    return float(number.group(0)) if number else cell.lower()


def test_every_column_sorts_both_ways_with_missing_figures_last(seen):
    assert len({s["table"] for s in seen["seen"]}) >= 4  # the board, per group, ours against the peers, GPU tracks
    for s in seen["seen"]:
        where = f"table {s['table']} column {s['column']!r} click {s['click']}"
        keys = [key(c) for c in s["cells"]]
        present = [k for k in keys if k is not None]
        assert keys == present + [None] * (len(keys) - len(present)), f"{where}: '-' cells are not last: {s['cells']}"
        numbers = [k for k in present if isinstance(k, float)]
        words = [k for k in present if isinstance(k, str)]
        assert present == numbers + words, f"{where}: figures before words"
        ascending = s["sort"] == "ascending"
        assert s["sort"] in ("ascending", "descending"), where
        for part in (numbers, words):
            assert part == sorted(part, reverse=not ascending), f"{where}: not {s['sort']}: {s['cells']}"
        assert s["arrow"] in ('" \\25B2"', '" ▲"') if ascending else s["arrow"] in ('" \\25BC"', '" ▼"'), where
    firsts = {(s["table"], s["column"]): s["sort"] for s in seen["seen"] if s["click"] == 1}
    seconds = {(s["table"], s["column"]): s["sort"] for s in seen["seen"] if s["click"] == 2}
    assert all(firsts[k] != seconds[k] for k in firsts)  # the second click sorts the other way


def test_one_click_on_rank_sorts_by_rank(seen):
    rank = next(s for s in seen["seen"] if s["table"] == 0 and s["column"] == "#" and s["click"] == 1)
    ranks = [float(c) for c in rank["cells"]]
    assert rank["sort"] == "ascending" and ranks[0] == -1 and ranks[1:] == list(range(1, len(ranks)))  # oracle first
    score = next(s for s in seen["seen"] if s["table"] == 0 and s["column"].startswith("fresh CPU") and s["click"] == 1)
    assert score["sort"] == "descending"  # the best first


def test_every_column_is_defined_and_the_page_says_what_the_markdown_says(seen):
    heads = seen["heads"]
    assert [h["name"] for h in heads] == seen["defined"]  # every column of the board, defined in order
    assert all(h["title"] for h in heads)  # and on hover
    text = seen["text"]
    for said in ("Ranked by", "fresh cases", "public", "GPU tracks", "track flat", "Per task group",
                 "Ours against the peers"):
        assert said in text, said
    assert "public GPU (flat track)" in [h["name"] for h in heads]  # the GPU column says its basis
    assert "../docs/competition.md" in seen["links"] and "../docs/hardware.md" in seen["links"]
