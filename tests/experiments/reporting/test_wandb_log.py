"""wandb_log.py: offline runs are written and read back (config, summary, tables, histogram, images);
resolve_mode logs only when asked (or logged in), from local credentials only; online trouble falls back
to offline; runs are named by what they hold, and a user's WANDB_DIR is where they go."""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import pytest

from experiments.reporting import plots, wandb_log
from experiments.reporting.summary import summarize
from experiments.running.rows import CaseResult
from pldcore.errors import PLDError
from test_plots import REPLAY, fake_rows  # tests/experiments/reporting is on sys.path (pytest's default import mode)

wandb = pytest.importorskip("wandb")
from google.protobuf.message import DecodeError  # noqa: E402  (wandb depends on protobuf)
from wandb.proto import wandb_internal_pb2  # noqa: E402


# -- reading a run back -----------------------------------------------------------------------------
def wandb_records(path: Path):
    """The protobuf Records of a run-*.wandb file.

    wandb >= 0.2x has no Python reader any more (the Go core writes the file), so this is a small
    one for the format: a 7-byte header (":W&B", magic, version), then 32 KiB blocks of records,
    each with a 7-byte header (crc32, length, type: 1 full, 2 first, 3 middle, 4 last).
    """
    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B run file"
    pos, block, pending = 7, 32768, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0 and length == 0:  # zero padding to the end of the block
            pos += left
            continue
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == 1:
            yield _record(chunk)
        elif kind == 2:
            pending = chunk
        elif kind == 3:
            pending += chunk
        elif kind == 4:
            yield _record(pending + chunk)
            pending = b""


def _record(raw: bytes):
    record = wandb_internal_pb2.Record()
    record.ParseFromString(raw)
    return record


def _key(item) -> str:
    return "/".join(item.nested_key) if item.nested_key else item.key


def finished_records(run_dir: Path, timeout_s: float = 60.0) -> list:
    """The records of the run in ``run_dir`` once its closing ``exit`` record is on disk.

    wandb's service writes the file in the background: ``run.finish()`` can return before the
    run's records (its ``run`` record among them) reach the file, most often on a busy machine.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            [path] = run_dir.glob("run-*.wandb")
            records = list(wandb_records(path))
        except (ValueError, AssertionError, DecodeError):  # not there yet, or cut mid-record
            records = []
        if any(r.WhichOneof("record_type") == "exit" for r in records) or time.monotonic() > deadline:
            return records
        time.sleep(0.05)


def read_run(run_dir: Path) -> dict:
    """{run: name/group/job_type, config, summary, history, files} of an offline run folder."""
    out = {"config": {}, "summary": {}, "history": {}, "files": set()}
    for record in finished_records(run_dir):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run = record.run
            out["run"] = {"name": run.display_name, "group": run.run_group, "job_type": run.job_type,
                          "project": run.project}
            out["config"].update({_key(u): json.loads(u.value_json) for u in run.config.update})
        elif kind == "config":
            out["config"].update({_key(u): json.loads(u.value_json) for u in record.config.update})
        elif kind == "summary":
            out["summary"].update({_key(u): json.loads(u.value_json) for u in record.summary.update})
        elif kind == "history":
            out["history"].update({_key(i): json.loads(i.value_json) for i in record.history.item})
        elif kind == "files":
            out["files"].update(f.path for f in record.files.files)
    return out


# -- fixtures -------------------------------------------------------------------------------------
@pytest.fixture
def offline_env(tmp_path, monkeypatch):
    """wandb confined to tmp_path: no credentials, offline, quiet, caches and settings in tmp."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "WANDB_BASE_URL", "NETRC"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    for var, sub in (("WANDB_DIR", "wandb-dir"), ("WANDB_CONFIG_DIR", "config"), ("WANDB_CACHE_DIR", "cache"),
                     ("WANDB_DATA_DIR", "data"), ("WANDB_ARTIFACT_DIR", "artifacts")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    return tmp_path


def small_rows() -> list[CaseResult]:
    # two methods x two groups: enough to see grouping, few runs (each wandb.init costs ~0.1-0.7 s)
    rows = fake_rows(prompts=2, methods=("hf-greedy", "unfold"))
    return [r for r in rows if r.category in ("code-edit", "mt-bench") and r.turn == 1]


# -- logging --------------------------------------------------------------------------------------
def test_offline_runs_hold_config_summary_tables_histogram_and_images(offline_env, capsys):
    rows = small_rows()
    pngs = plots.write_plots(rows, offline_env / "plots")
    assert len(pngs) == 3
    dirs = wandb_log.log_comparison(rows, mode="offline", group="exp-123", plots=pngs, out_dir=offline_env / "out")

    assert len(dirs) == 2 * 2 + 1  # (method, group) runs + the summary run
    runs = {}
    for d in map(Path, dirs):
        # the user's WANDB_DIR (the fixture sets one) wins over the results folder
        assert d.is_dir() and d.name.startswith("offline-run-") and d.parent == offline_env / "wandb-dir" / "wandb"
        run = read_run(d)
        runs[run["run"]["name"]] = (d, run)
    # folders say what they hold: offline-run-<time>-<method>-<group>-<experiment>-<hex>
    assert any("-unfold-code-edit-exp-123-" in d.name for d, _ in runs.values())
    assert not (offline_env / "out").exists()
    assert set(runs) == {"hf-greedy/code-edit", "hf-greedy/mt-bench (turn 1)", "unfold/code-edit",
                         "unfold/mt-bench (turn 1)", "summary"}
    assert all(r["run"]["group"] == "exp-123" and r["run"]["project"] == "pld-lab" for _, r in runs.values())

    d, run = runs["unfold/code-edit"]
    assert run["run"]["job_type"] == "code-edit"
    config = run["config"]
    assert config["method"] == "unfold" and config["params"] == {"drafter": "unfold"}
    assert config["model"] == "SmolLM2-135M-Instruct" and config["device"] == "cpu"
    assert config["max_new_tokens"] == 128 and config["temperature"] == 0.0

    mine = [r for r in rows if r.method == "unfold" and r.category == "code-edit"]
    expected = summarize(mine)
    summary = run["summary"]
    assert summary["tau"] == pytest.approx(expected["tau"])
    assert summary["speedup"] == pytest.approx(expected["speedup"])
    assert summary["est_speedup"] == pytest.approx(expected["est_speedup"])
    assert summary["tokens_per_s"] == pytest.approx(expected["tokens_per_s"])

    # the per-prompt table: a file the run points at, with one line per prompt
    assert summary["prompts/_type"] == "table-file"
    table = json.loads((d / "files" / summary["prompts/path"]).read_text())
    assert table["columns"][:3] == ["case", "turn", "prompt_tokens"] and "est_speedup" in table["columns"]
    assert sorted(line[0] for line in table["data"]) == sorted(r.case for r in mine)

    # the histogram of accepted lengths: one bin per integer length, counts add up to the steps
    assert run["history"]["accepted_lengths/_type"] == "histogram"
    steps = sum(len(r.accepted_lengths) for r in mine)
    assert sum(run["history"]["accepted_lengths/values"]) == steps
    # the reference records no steps: no histogram there
    assert "accepted_lengths/_type" not in runs["hf-greedy/code-edit"][1]["history"]

    # the summary run: comparison table (methods x groups + all) and the three plots as images
    d, run = runs["summary"]
    assert run["run"]["job_type"] == "summary"
    comparison = json.loads((d / "files" / run["summary"]["comparison/path"]).read_text())
    assert len(comparison["data"]) == 2 * (2 + 1)
    assert {line[0] for line in comparison["data"]} == {"code-edit", "mt-bench (turn 1)", "(all)"}
    images = sorted(k.split("/")[1] for k, v in run["summary"].items() if k.endswith("/_type") and v == "image-file")
    assert images == ["accepted_lengths", "speedup_by_category", "tau_vs_context"]
    for name in images:  # the image files themselves, copied into the run
        png = d / "files" / run["summary"][f"plots/{name}/path"]
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert run["summary"]["speedup/unfold"] == pytest.approx(summarize(
        [r for r in rows if r.method == "unfold"])["speedup"])

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "wandb sync" in err  # tells the user how to upload later, in one line
    assert f"5 offline runs of group exp-123 in {offline_env / 'wandb-dir' / 'wandb'}" in err


def test_without_wandb_dir_runs_go_under_the_results_folder(offline_env, monkeypatch, capsys):
    monkeypatch.delenv("WANDB_DIR")
    monkeypatch.chdir(offline_env)
    rows = [r for r in small_rows() if r.method == "unfold" and r.category == "code-edit"]
    dirs = wandb_log.log_comparison(rows, mode="offline", group="g", out_dir=offline_env / "results")
    assert [Path(d).parent for d in dirs] == [offline_env / "results" / "wandb"] * 2
    assert str(offline_env / "results" / "wandb") in capsys.readouterr().err


@pytest.mark.parametrize("name,group,head", [
    ("unfold/code-edit", "b0b68ef122b2", "unfold-code-edit-b0b68ef122b2-"),
    ("adaptive:history=true/mt-bench (turn 1)", "g", "adaptive-history-true-mt-bench-turn-1-g-"),
    ("x" * 100 + "/code-edit", "b0b68ef122b2", "x" * 44 + "-b0b68ef122b2-"),
])
def test_run_ids_name_the_run_within_wandbs_rules(name, group, head):
    ids = {wandb_log.run_id(name, group) for _ in range(20)}
    assert len(ids) == 20  # a rerun never resumes an earlier run
    for run_id in ids:
        assert run_id.startswith(head) and len(run_id) <= 64 and len(run_id) == len(head) + 6
        assert not set(run_id) & set(":;,#?/' ")

def test_online_failure_falls_back_to_offline(offline_env, monkeypatch, capsys):
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)  # "logged in", but the server is unreachable
    real_init, modes = wandb.init, []

    def init(*args, mode=None, **kwargs):
        modes.append(mode)
        if mode == "online":
            raise wandb.errors.CommError("Timed out while retrying: dial tcp: no such host\nmore lines")
        return real_init(*args, mode=mode, **kwargs)

    monkeypatch.setattr(wandb, "init", init)
    rows = [r for r in small_rows() if r.method == "unfold" and r.category == "code-edit"]
    dirs = wandb_log.log_comparison(rows, mode="online", group="g", out_dir=offline_env / "out")
    assert len(dirs) == 2 and all(Path(d).name.startswith("offline-run-") for d in dirs)
    assert modes == ["online", "offline", "offline"]  # one online try, then offline for the rest
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "CommError" in warnings[0] and "offline" in warnings[0]


def test_online_without_credentials_never_tries_the_network(offline_env, monkeypatch, capsys):
    modes = []
    real_init = wandb.init
    monkeypatch.setattr(wandb, "init", lambda *a, mode=None, **k: modes.append(mode) or real_init(*a, mode=mode, **k))
    rows = [r for r in small_rows() if r.method == "hf-greedy" and r.category == "code-edit"]
    assert len(wandb_log.log_comparison(rows, mode="online", group="g", out_dir=offline_env / "out")) == 2
    assert modes == ["offline", "offline"]
    assert "not logged in" in capsys.readouterr().err


def test_off_and_empty_log_nothing(offline_env, monkeypatch):
    monkeypatch.setattr(wandb, "init", lambda *a, **k: pytest.fail("wandb.init called"))
    assert wandb_log.log_comparison(small_rows(), mode="off", group="g", out_dir=offline_env / "out") == []
    assert wandb_log.log_comparison([], mode="offline", group="g", out_dir=offline_env / "out") == []
    assert not (offline_env / "out").exists()


def test_a_wandb_error_warns_instead_of_raising(offline_env, monkeypatch, capsys):
    def broken(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(wandb, "init", broken)
    assert wandb_log.log_comparison(small_rows(), mode="offline", group="g", out_dir=offline_env / "out") == []
    assert "disk full" in capsys.readouterr().err


# -- what a run holds, without wandb.init ---------------------------------------------------------
class FakeWandb:
    """Just the constructors the views call; they keep their arguments."""

    class Table:
        def __init__(self, columns, data):
            self.columns, self.data = columns, data

    class Histogram:
        def __init__(self, sequence=None, np_histogram=None, num_bins=None):
            self.sequence, self.np_histogram, self.num_bins = sequence, np_histogram, num_bins


def test_replay_rows_log_without_wall_times():
    rows = [REPLAY(r) for r in fake_rows(prompts=2, methods=("unfold",)) if r.category == "code-edit"]
    config = wandb_log.run_config("unfold", "code-edit", rows)
    assert config["replay"] is True and config["params"] == {"drafter": "unfold"}
    table = wandb_log.prompt_table(FakeWandb, rows)
    line = dict(zip(table.columns, table.data[0]))
    assert line["speedup"] is None and line["tokens_per_s"] is None and line["identical"] is None
    assert line["est_speedup"] == pytest.approx(rows[0].est_speedup) and line["tau"] == pytest.approx(rows[0].tau)
    metrics = wandb_log.summary_metrics(rows)
    assert "speedup" not in metrics and "tokens_per_s" not in metrics  # None is left out, not logged as 0
    assert metrics["est_speedup"] == pytest.approx(summarize(rows)["est_speedup"])
    assert wandb_log.run_config("unfold", "code-edit", fake_rows(prompts=1, methods=("unfold",)))["replay"] is False


def test_histogram_has_one_bin_per_length_and_none_without_steps():
    rows = fake_rows(prompts=1, methods=("hf-greedy", "voting"))
    assert wandb_log.accepted_histogram(FakeWandb, [r for r in rows if r.method == "hf-greedy"]) is None
    mine = [r for r in rows if r.method == "voting"]
    counts, edges = wandb_log.accepted_histogram(FakeWandb, mine).np_histogram
    lengths = [a for r in mine for a in r.accepted_lengths]
    assert list(counts) == [lengths.count(k) for k in range(max(lengths) + 1)]
    assert list(edges) == [k - 0.5 for k in range(max(lengths) + 2)]


def test_comparison_table_is_methods_by_groups_and_all():
    rows = fake_rows(prompts=1, methods=("hf-greedy", "unfold"))
    table = wandb_log.comparison_table(FakeWandb, rows)
    assert table.columns[:3] == ["group", "method", "n"]
    assert [(line[0], line[1]) for line in table.data] == [
        (g, m) for g in ("code-edit", "mt-bench (turn 1)", "mt-bench (turn 2)", "summarization", "(all)")
        for m in ("hf-greedy", "unfold")]
    assert [line[2] for line in table.data][-2:] == [4, 4]  # every case under "(all)"


# -- resolve_mode ---------------------------------------------------------------------------------
@pytest.fixture
def no_credentials(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "WANDB_BASE_URL", "WANDB_MODE", "NETRC"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def test_resolve_mode_not_logged_in_is_off(no_credentials):
    assert wandb_log.resolve_mode(None) == "off"  # nothing asked for: nothing logged


def test_resolve_mode_api_key_in_env_is_online(no_credentials, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "k" * 40)
    assert wandb_log.resolve_mode(None) == "online"


@pytest.mark.parametrize("machine,base_url,expected", [
    ("api.wandb.ai", None, "online"),
    ("example.com", None, "off"),
    ("wandb.mycorp.local", "https://wandb.mycorp.local", "online"),  # a self-hosted server
])
def test_resolve_mode_reads_netrc(no_credentials, monkeypatch, machine, base_url, expected):
    netrc = no_credentials / ".netrc"
    netrc.write_text(f"machine {machine}\n  login user\n  password {'k' * 40}\n")
    netrc.chmod(0o600)
    if base_url:
        monkeypatch.setenv("WANDB_BASE_URL", base_url)
    assert wandb_log.resolve_mode(None) == expected


def test_resolve_mode_broken_netrc_is_off(no_credentials):
    (no_credentials / ".netrc").write_text("machine\n")
    assert wandb_log.resolve_mode(None) == "off"


def test_resolve_mode_honours_wandb_mode_env(no_credentials, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "k" * 40)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert wandb_log.resolve_mode(None) == "off"
    monkeypatch.setenv("WANDB_MODE", "offline")
    assert wandb_log.resolve_mode(None) == "offline"
    monkeypatch.delenv("WANDB_API_KEY")  # asking for offline runs needs no login
    assert wandb_log.resolve_mode(None) == "offline"


@pytest.mark.parametrize("mode", ["online", "offline", "off", "OFFLINE", " online "])
def test_resolve_mode_explicit(no_credentials, mode):
    assert wandb_log.resolve_mode(mode) == mode.strip().lower()


@pytest.mark.parametrize("mode", ["onlin", "", "disabled", 1])
def test_resolve_mode_invalid(mode):
    with pytest.raises(PLDError, match="online, offline, off"):
        wandb_log.resolve_mode(mode)


def test_a_comparisons_group_and_run_folders_name_what_it_ran_on():
    replay = {"replay": True, "benchmark": "173c9375a857b781", "traces": ["code-edit-n128.jsonl.gz:80"]}
    assert wandb_log.experiment_label(replay) == "replay-173c9375"
    assert wandb_log.experiment_label({"model": "/home/me/models/My Model v2", "device": "cpu"}) == "My-Model-v2"
    assert wandb_log.experiment_label({}) == "live"
    # the run's folder: method, task group, benchmark, and the config hash as far as it fits
    run_id = wandb_log.run_id("adaptive/code-edit", f"{wandb_log.experiment_label(replay)}-d7ae2e914a62")
    assert run_id.startswith("adaptive-code-edit-replay-173c9375-d7ae2e91-") and len(run_id) <= 64


# -- one run of anything else (the leaderboard's table) ----------------------------------------------------------
def test_log_run_writes_one_offline_run_with_its_table_image_and_summary(offline_env, capsys):
    png = plots.grouped_bars_png([plots.Bars("a", [[1.5, 2.0]])], ["copy", "geo-mean"], ["CPU"])
    dirs = wandb_log.log_run(mode="offline", group="leaderboard-h", name="leaderboard", job_type="leaderboard",
                             config={"benchmark": {"hash": "h"}}, tables={"leaderboard": (["entry", "score"], [["a", 1.5]])},
                             images={"speedup_by_category": png}, summary={"score/a": 1.5}, out_dir=offline_env / "out")
    (d,) = map(Path, dirs)
    run = read_run(d)
    assert run["run"]["name"] == "leaderboard" and run["run"]["group"] == "leaderboard-h"
    assert run["summary"]["score/a"] == 1.5 and run["summary"]["speedup_by_category/_type"] == "image-file"
    table = json.loads((d / "files" / run["summary"]["leaderboard/path"]).read_text())
    assert table["columns"] == ["entry", "score"] and table["data"] == [["a", 1.5]]
    assert "1 offline runs of group leaderboard-h" in capsys.readouterr().err


def test_log_run_off_logs_nothing_and_a_wandb_error_warns(offline_env, monkeypatch, capsys):
    monkeypatch.setattr(wandb, "init", lambda *a, **k: pytest.fail("wandb.init called"))
    assert wandb_log.log_run(mode="off", group="g", name="x", job_type="x", config={}) == []

    def broken(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(wandb, "init", broken)
    assert wandb_log.log_run(mode="offline", group="g", name="x", job_type="x", config={}) == []
    assert "logging x failed (RuntimeError: disk full)" in capsys.readouterr().err
