"""tables.py: the one renderer (aligned text or Markdown, None as "-"), a table per task group plus
one over everything with only the columns some method fills, and the cost profile as a table."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_plots import case_row  # tests/experiments/reporting is on sys.path under pytest's default import mode

from experiments.reporting.summary import summarize
from experiments.reporting.tables import (category_tables, describe_profile, fmt, format_profile, method_table, render,
                                          report)
from pldcore.cost import CostProfile


# -- fmt / render ---------------------------------------------------------------------------------
@pytest.mark.parametrize("value,text", [
    (None, "-"), (1.23456, "1.23"), (0.5, "0.5"), (12345.6, "12,346"), (1000.0, "1,000"), (3, "3"),
    ("unfold", "unfold"), (True, "True"),
])
def test_fmt(value, text):
    assert fmt(value) == text


@pytest.mark.parametrize("value", [999.5, 999.7, -999.96])
def test_fmt_never_writes_large_numbers_in_exponent_form(value):
    assert fmt(value) in ("1,000", "-1,000")


def test_render_aligns_text_left_and_numbers_right():
    text = render(["name", "x"], [["a", 1.5], ["bbbbb", None], ["c", 12345.0]])
    assert text.splitlines() == [
        "name        x",
        "-----  ------",
        "a         1.5",
        "bbbbb       -",
        "c      12,345",
    ]


def test_render_markdown():
    text = render(["name", "x"], [["a", 1.5], ["bbbbb", None]], markdown=True)
    assert text.splitlines() == [
        "| name  |   x |",
        "|-------|-----|",
        "| a     | 1.5 |",
        "| bbbbb |   - |",
    ]


def test_render_without_rows_and_with_mixed_columns():
    assert render(["method", "tau"], []).splitlines() == ["method  tau", "------  ---"]
    # a column holding text and numbers is text: left-aligned; plain lines lose trailing blanks
    assert render(["v"], [["long text"], [1.0]]).splitlines() == ["v", "---------", "long text", "1"]


cell = st.none() | st.integers(-10 ** 6, 10 ** 6) | st.floats(-1e5, 1e5) | st.text("abc xyz", min_size=1, max_size=6)


@given(st.integers(1, 4).flatmap(lambda n: st.tuples(
    st.lists(st.text("abcdef", min_size=1, max_size=7), min_size=n, max_size=n),
    st.lists(st.lists(cell, min_size=n, max_size=n), max_size=5))))
def test_render_markdown_cells_read_back(table):
    headers, rows = table
    lines = render(headers, rows, markdown=True).splitlines()
    assert len(lines) == len(rows) + 2 and len({len(line) for line in lines}) == 1  # a straight grid
    assert lines[1] == "|" + "|".join("-" * len(c) for c in lines[0][1:-1].split("|")) + "|"
    for line, values in zip([lines[0], *lines[2:]], [headers, *rows]):
        assert line.startswith("| ") and line.endswith(" |")
        assert [c.strip() for c in line[2:-2].split(" | ")] == [fmt(v).strip() for v in values]


@given(st.lists(st.lists(st.none() | st.floats(-1e5, 1e5) | st.integers(-999, 999), min_size=2, max_size=2),
                min_size=1, max_size=5))
def test_render_plain_numbers_end_under_their_header(rows):
    lines = render(["first", "second"], rows).splitlines()
    ends = {len(line) for line in lines}
    assert len(ends) == 1  # right-aligned numbers end where the header ends: no trailing blanks to strip
    for line, row in zip(lines[2:], rows):
        assert line.endswith(fmt(row[1])) and line.lstrip().startswith(fmt(row[0]))


# -- method and category tables -------------------------------------------------------------------
def parse(table: str) -> dict[str, dict[str, str]]:
    """{method: {header: cell}} of a plain ``method_table``; cells are separated by 2+ spaces."""
    header, _rule, *lines = table.splitlines()
    names = re.split(r"\s{2,}", header.strip())
    out = {}
    for line in lines:
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(names), line
        out[cells[0]] = dict(zip(names[1:], cells[1:]))
    return out


def sections(text: str) -> dict[str, str]:
    """{group: table} of ``category_tables``; the last title says what the pooled table holds."""
    out = {}
    for part in text.split("\n\n"):
        title, table = part.split("\n", 1)
        assert title.startswith("## ")
        out[title[3:].split(":")[0]] = table
    return out


def comparison_rows():
    ref = dict(method="hf-greedy", wall_s=2.0, speedup=1.0, new_tokens=64, forwards=64)
    drafter = dict(method="unfold", wall_s=1.0, new_tokens=64, forwards=20, drafted=60, accepted=44,
                   drafter_us_per_step=20.0, accepted_lengths=[2, 3], identical=True)
    return [
        case_row(case="code-edit/000", category="code-edit", **ref),
        case_row(case="code-edit/000", category="code-edit", speedup=2.0, **drafter),
        case_row(case="mt-bench/81#1", category="mt-bench", turn=1, **ref),
        case_row(case="mt-bench/81#1", category="mt-bench", turn=1, speedup=1.5, **drafter),
        case_row(case="mt-bench/81#2", category="mt-bench", turn=2, **ref),  # the drafter never ran here
    ]


def test_a_table_per_group_then_all():
    rows = comparison_rows()
    tables = sections(category_tables(rows, ["hf-greedy", "unfold"]))
    assert list(tables) == ["code-edit", "mt-bench (turn 1)", "mt-bench (turn 2)", "(all)"]
    assert list(parse(tables["code-edit"])) == ["hf-greedy", "unfold"]
    assert list(parse(tables["mt-bench (turn 2)"])) == ["hf-greedy"]  # a method with no rows there: no line
    everything = parse(tables["(all)"])
    assert everything["hf-greedy"]["n"] == "3" and everything["unfold"]["n"] == "2"
    # each table's numbers are summarize()'s over that group's rows
    unfold_all = summarize([r for r in rows if r.method == "unfold"])
    assert everything["unfold"]["speedup"] == fmt(unfold_all["speedup"])
    assert parse(tables["mt-bench (turn 1)"])["unfold"]["speedup"] == fmt(1.5)
    # the method order is the caller's, not the rows'
    assert list(parse(sections(category_tables(rows, ["unfold", "hf-greedy"]))["(all)"])) == ["unfold", "hf-greedy"]


def test_a_column_shows_only_when_some_method_has_a_value():
    tables = sections(category_tables(comparison_rows(), ["hf-greedy", "unfold"]))
    columns = set(parse(tables["(all)"])["unfold"])
    assert {"speedup", "worst", "tok/s", "drafter µs/step", "identical", "tau"} <= columns
    assert "est speedup" not in columns  # no row was priced under a cost profile
    # a column that only one method fills: the other's cell is "-"
    assert parse(tables["(all)"])["hf-greedy"]["drafter µs/step"] == "-"
    assert parse(tables["(all)"])["unfold"]["identical"] == "yes"
    # in a group where the drafter never ran, its columns go too
    assert {"drafter µs/step", "identical"}.isdisjoint(parse(tables["mt-bench (turn 2)"])["hf-greedy"])


def test_replay_rows_show_estimates_not_wall_times():
    rows = [case_row(case=f"code-edit/{i}", category="code-edit", method="voting", new_tokens=50, forwards=20,
                     drafted=40, accepted=30, est_plain_s=5.0, est_run_s=2.5 + i, est_prefill_s=0.0,
                     drafter_us_per_step=8.0)
            for i in range(2)]
    line = parse(method_table(rows, ["voting"]))["voting"]
    assert set(line) == {"n", "new tok", "fwd", "tau", "est speedup", "decode speedup", "drafter µs/step"}
    assert line["est speedup"] == fmt(10.0 / 6.0) and line["tau"] == fmt(2.5)
    assert line["decode speedup"] == fmt(10.0 / 6.0)  # est_prefill_s 0.0: rated for the decoding phase


def replay_rows():
    """Two drafters on three cases of two groups, priced with a prefill of 1 s a case."""
    rows = []
    for method, run in (("voting", 2.0), ("unfold", 4.0)):
        for case, category, plain in (("code-edit/0", "code-edit", 8.0), ("code-edit/1", "code-edit", 4.0),
                                      ("doc-qa/0", "doc-qa", 5.0)):
            rows.append(case_row(case=case, category=category, method=method, new_tokens=50, forwards=20,
                                 drafted=40, accepted=30, est_plain_s=plain + 1.0, est_run_s=run + 1.0,
                                 est_prefill_s=1.0, drafter_us_per_step=8.0))
    return rows


def test_the_pooled_table_shows_the_boards_score_under_its_name_and_says_what_each_figure_is():
    from experiments.reporting.summary import decode_speedup_of, est_speedup_of, score_of
    from experiments.reporting.tables import COLUMN_NOTES, column_notes

    rows = replay_rows()
    text = category_tables(rows, ["voting", "unfold"])
    assert "## (all): pooled over every case; score over the task groups" in text
    tables = sections(text)
    assert "score" not in parse(tables["code-edit"])["voting"]  # one group: its decode speedup, said once
    pooled = parse(tables["(all)"])
    for method in ("voting", "unfold"):
        mine = [r for r in rows if r.method == method]
        assert pooled[method]["score"] == fmt(score_of(mine))
        assert pooled[method]["decode speedup"] == fmt(decode_speedup_of(mine))
        assert pooled[method]["est speedup"] == fmt(est_speedup_of(mine))
    assert pooled["voting"]["score"] != pooled["voting"]["decode speedup"]  # two figures, two names
    notes = column_notes(rows, ["voting", "unfold"]).splitlines()
    assert notes == [COLUMN_NOTES[k] for k in ("est_speedup", "decode_speedup", "score", "drafter_us_per_step")]
    assert "prefill included" in notes[0] and "board ranks by" in notes[2] and "sandbox" in notes[3]
    # one group only: no score, no word of it
    assert not any(n.startswith("score") for n in column_notes(rows[:2], ["voting"]).splitlines())


def test_a_report_warns_of_small_groups():
    class Comparison:
        rows = {(r.case, r.method): r for r in replay_rows()}
        order = ["voting", "unfold"]

        def heading(self):
            return "heading"

        def footer(self):
            return "footer"

    text = report(Comparison(), ["the oracle's line"])
    assert text.startswith("heading\n\n## code-edit") and text.endswith("the oracle's line\n\nfooter")
    assert "warning: fewer than 10 cases in code-edit (2), doc-qa (1)" in text


def test_a_mismatch_reads_NO():
    rows = comparison_rows()
    rows[1].identical = False
    assert parse(method_table(rows, ["hf-greedy", "unfold"]))["unfold"]["identical"] == "NO"


# -- format_profile -------------------------------------------------------------------------------
def test_format_profile_of_a_flat_profile():
    lines = format_profile(CostProfile.flat(8, seconds=0.002)).splitlines()
    assert lines[0].split() == ["tokens", "forward"]
    assert [line.split() for line in lines[1:]] == [
        ["1", "2.0", "ms", "(1.00x)"],
        ["8", "2.0", "ms", "(1.00x)"],  # verifying 8 tokens costs what one does
        ["9", "4.0", "ms", "(2.00x)"],
    ]
    assert len({len(line) for line in lines}) == 1  # columns line up


def test_describe_profile_says_where_when_and_how_noisy():
    assert describe_profile(CostProfile.flat(8)) == "flat on ideal: measured an unknown date on an unknown machine"
    p = CostProfile((1,), (1.0,), "m", "cpu", spread=0.031, measured_at="2026-12-01T10:00:00+00:00", host="x, 2 cores",
                    load_per_core=0.12)
    assert describe_profile(p) == ("m on cpu: measured 2026-12-01T10:00:00+00:00 on x, 2 cores, repeats spread 3.1%, "
                                   "load 0.12 per core at the start")


def test_format_profile_by_context_with_prefill():
    profile = CostProfile((1, 4), (0.010, 0.015), contexts=(128, 1024), grid=((0.010, 0.015), (0.020, 0.040)),
                          prefill=(0.050, 0.300))
    lines = format_profile(profile).splitlines()
    assert lines[0].split() == ["tokens", "ctx", "128", "ctx", "1024"]
    assert lines[1].split() == ["1", "10.0", "ms", "(1.00x)", "20.0", "ms", "(1.00x)"]
    assert lines[2].split() == ["4", "15.0", "ms", "(1.50x)", "40.0", "ms", "(2.00x)"]
    assert lines[3].split() == ["prefill", "50.0", "ms", "300.0", "ms"]
    assert len({len(line) for line in lines}) == 1


def test_the_loss_table_shows_a_first_token_auc_column_only_where_one_was_measured():
    from experiments.reporting.tables import loss_table
    from experiments.running.explain import Loss

    loss = Loss(plain=10.0, oracle=4.0, run=6.0, cases=2)
    loss.parts["wrong"] = 2.0
    assert "first-token AUC" not in loss_table({"(all)": loss})
    measured = Loss(plain=10.0, oracle=4.0, run=6.0, cases=2, first_token_auc=0.8125)
    measured.parts["wrong"] = 2.0
    table = loss_table({"g": loss, "(all)": measured})
    assert "first-token AUC" in table and "0.812" in table
    assert re.search(r"\(all\) pooled\s+2\s+1\.667x\s+2\.500x\s+44%\s+0\.812", table)


def test_the_loss_table_adds_the_boards_score_over_groups_and_names_the_pooled_row():
    from experiments.reporting.summary import board_score, oracle_gain
    from experiments.reporting.tables import LOSS_NOTES, loss_notes, loss_table
    from experiments.running.explain import Loss

    def loss(plain, oracle, run, cases):
        out = Loss(plain=plain, oracle=oracle, run=run, cases=cases)
        out.parts["short"] = run - oracle
        return out

    groups = {"code-edit": loss(4.0, 1.0, 2.0, 40), "chat": loss(1.0, 0.5, 0.8, 40)}
    pooled = loss(5.0, 1.5, 2.8, 80)
    lines = loss_table({**groups, "(all)": pooled}).splitlines()
    assert lines[0].split()[:8] == ["group", "cases", "decode", "speedup", "cost-aware", "oracle", "of", "gain"]
    assert lines[-2].startswith("(all) pooled") and lines[-1].startswith("score")
    score = board_score({g: x.speedup for g, x in groups.items()})
    oracle = board_score({g: x.oracle_speedup for g, x in groups.items()})
    assert lines[-1].split() == ["score", "80", f"{score:.3f}x", f"{oracle:.3f}x",
                                 f"{100 * oracle_gain(score, oracle):.0f}%"]  # and no parts: a mean splits into none
    assert f"{pooled.speedup:.3f}x" in lines[-2] and f"{pooled.speedup:.3f}x" != f"{score:.3f}x"
    # one group: no score row
    assert not loss_table({"chat": groups["chat"], "(all)": groups["chat"]}).splitlines()[-1].startswith("score")
    assert "what the board ranks by" in LOSS_NOTES and loss_notes({**groups, "(all)": pooled}) == []


def test_the_loss_table_leaves_out_a_share_of_next_to_nothing_and_says_why():
    from experiments.reporting.tables import loss_notes, loss_table
    from experiments.running.explain import Loss

    # 3 own prompts where the oracle gains 2%: a 0.977x drafter would read "-113%"
    tiny = Loss(plain=1.0, oracle=1 / 1.02, run=1 / 0.977, cases=3)
    tiny.parts["long"] = tiny.gap
    table = loss_table({"mine": tiny, "(all)": tiny})
    assert "%" in table and "-113%" not in table and "0.977x" in table and "1.020x" in table
    notes = loss_notes({"mine": tiny, "(all)": tiny})
    assert len(notes) == 2 and "mine (3)" in notes[0] and "mine (1.020x)" in notes[1]
