"""Log a comparison's rows to Weights & Biases: a view of the JSONL, never a requirement.

    mode = resolve_mode(args.wandb)                      # "online" | "offline" | "off"
    group = f"{experiment_label(config)}-{experiment}"   # replay-<benchmark>-<config hash>, or <model>-<config hash>
    log_comparison(rows, mode=mode, group=group, plots=write_plots(rows, out), out_dir=results_dir)
    log_run(mode=mode, group=group, name="leaderboard", job_type="leaderboard", config={...},
            tables={"leaderboard": (columns, rows)}, images={"plot": png_bytes})   # one run of anything else

Only when asked: ``--wandb online|offline``, ``WANDB_MODE=offline``, or being logged in to W&B
(then online); otherwise nothing is logged and nothing is imported.

One run per (method, task group), all runs of an experiment in one W&B group named for what it
ran on and its config hash, with ``job_type`` = task group and name ``method/group``: filter by job
type in the UI and the drafters sit side by side. Run ids, and so the local run folders, carry the
same name and the group's: ``offline-run-<time>-adaptive-code-edit-replay-173c9375-d7ae2e91-<6 hex
digits>`` (never a timestamp alone). Each run holds the method's parameters and the decoding settings
as config, a per-prompt table, a histogram of accepted draft lengths and the aggregate metrics
(the same ``summary.summarize`` the tables and plots use) as its summary. One more run named ``summary``
holds the methods x groups comparison table and the plots.

No network is needed: offline runs are written under ``$WANDB_DIR/wandb`` when the user set
``WANDB_DIR``, else under ``out_dir/wandb`` (upload later with ``wandb sync``; the folder is
printed either way); an online run that cannot reach the server within ``INIT_TIMEOUT_S`` falls
back to offline with a one-line warning on stderr. Logging never raises: the JSONL already
holds the results, and a W&B hiccup must not throw away an hour of measurements.
"""

from __future__ import annotations

import contextlib
import netrc
import os
import re
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Mapping, Sequence
from urllib.parse import urlsplit

import numpy as np

from experiments.reporting.summary import ALL, by_method_and_group, group_order, method_order, summarize
from experiments.running.rows import CaseResult
from pldcore.errors import PLDError

MODES = ("online", "offline", "off")
INIT_TIMEOUT_S = 15.0  # wandb's default is 90 s: too long to wait for a server that is not there
DEFAULT_HOST = "https://api.wandb.ai"
PROMPT_COLUMNS = ["case", "turn", "prompt_tokens", "new_tokens", "forwards", "tau", "speedup", "est_speedup",
                  "decode_speedup", "tokens_per_s", "drafter_us_per_step", "identical"]
SUMMARY_COLUMNS = ["group", "method", "n", "new_tokens", "forwards", "tau", "tokens_per_s", "speedup",
                   "est_speedup", "decode_speedup", "score", "worst_speedup", "drafter_us_per_step", "acceptance",
                   "mean_accepted", "identical"]
#: the summary run's headline numbers, per method over every group
HEADLINE = ("tau", "speedup", "est_speedup", "decode_speedup", "score", "tokens_per_s", "worst_speedup", "acceptance")


# -- mode ------------------------------------------------------------------------------------------
def _netrc_path() -> Path:
    if os.environ.get("NETRC"):
        return Path(os.environ["NETRC"]).expanduser()
    for name in ("~/.netrc", "~/_netrc"):
        if Path(name).expanduser().exists():
            return Path(name).expanduser()
    return Path("~/.netrc").expanduser()


def logged_in() -> bool:
    """Whether W&B credentials are configured locally: WANDB_API_KEY (or an identity token file)
    in the environment, or a .netrc entry for the W&B host (WANDB_BASE_URL, default api.wandb.ai).
    Reads local files only; whether the key is valid is not checked (that needs the network)."""
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return True
    host = urlsplit(os.environ.get("WANDB_BASE_URL") or DEFAULT_HOST).netloc
    if not host:
        return False
    try:
        creds = netrc.netrc(str(_netrc_path())).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return False
    return bool(creds and creds[2])


def resolve_mode(mode: str | None) -> str:
    """"online" | "offline" | "off" (case-insensitive); None picks one without touching the network.

    None logs only when the user asked for it: WANDB_MODE offline/dryrun gives "offline", disabled
    "off"; otherwise "online" when credentials are configured (see ``logged_in``: a logged-in user
    wants their runs on W&B) and "off" when not. A W&B run costs seconds each, so logging by default
    would slow every comparison down for a view nobody asked for.
    """
    if mode is None:
        env = (os.environ.get("WANDB_MODE") or "").strip().lower()
        if env in ("offline", "dryrun"):
            return "offline"
        if env == "disabled":
            return "off"
        return "online" if logged_in() else "off"
    if not isinstance(mode, str) or mode.strip().lower() not in MODES:
        raise PLDError(f"W&B mode must be one of {', '.join(MODES)}; got {mode!r}")
    return mode.strip().lower()


# -- what each run holds ------------------------------------------------------------------------
def _clean(value):
    """JSON-able, W&B-table-friendly scalar: numpy scalars unwrapped, NaN/inf as None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def run_config(method: str, group: str, rows: Sequence[CaseResult]) -> dict:
    """The W&B config of one (method, group) run: method, its parameters, the comparison's settings."""
    first = rows[0]
    config = dict(first.config)  # model, device, dtype, max_new_tokens, temperature, versions, ...
    config.update({
        "method": method, "group": group, "params": dict(first.params), "experiment": first.experiment,
        "prompts_logged": len(rows), "git_sha": first.git_sha, "code": first.code,
        "replay": all(r.replay for r in rows),
    })
    return config


def prompt_table(wandb, rows: Sequence[CaseResult]):
    """One line per prompt (turn) of one method in one group."""
    data = [[_clean(getattr(r, c)) for c in PROMPT_COLUMNS] for r in rows]
    return wandb.Table(columns=PROMPT_COLUMNS, data=data)


def accepted_histogram(wandb, rows: Sequence[CaseResult]):
    """Accepted draft tokens per step, one bin per integer length; None when no steps were recorded."""
    lengths = np.asarray([a for r in rows for a in r.accepted_lengths], dtype=np.int64)
    if lengths.size == 0:
        return None
    top = int(lengths.max())
    if top + 1 > 512:  # W&B's bin limit
        return wandb.Histogram(lengths.tolist(), num_bins=64)
    edges = np.arange(top + 2) - 0.5
    return wandb.Histogram(np_histogram=np.histogram(lengths, bins=edges))


def summary_metrics(rows: Sequence[CaseResult]) -> dict:
    return {k: _clean(v) for k, v in summarize(rows).items() if v is not None}


def comparison_table(wandb, rows: Sequence[CaseResult]):
    """Methods x groups (and "all"): the comparison's text table as a W&B table."""
    cells = by_method_and_group(rows)
    data = []
    for group in group_order(rows) + [ALL]:
        for method in method_order(rows):
            mine = cells.get((method, group))
            if mine:
                s = summarize(mine)
                data.append([group, method] + [_clean(s[c]) for c in SUMMARY_COLUMNS[2:]])
    return wandb.Table(columns=SUMMARY_COLUMNS, data=data)


# -- logging -------------------------------------------------------------------------------------
@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """WANDB_SILENT for the duration: wandb's banners would break the runner's output."""
    old = os.environ.get("WANDB_SILENT")
    os.environ["WANDB_SILENT"] = "true"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("WANDB_SILENT", None)
        else:
            os.environ["WANDB_SILENT"] = old


def _warn(message: str) -> None:
    print(f"warning: W&B: {message}", file=sys.stderr, flush=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip(": ")


def run_id(name: str, group: str) -> str:
    """A W&B run id that says what the run is (its local folder is named by it): ``name`` and
    ``group`` made safe (letters, digits, ``_`` and ``-``) and 6 random hex digits, so that a rerun
    never resumes an earlier run; at most 64 characters. ``adaptive:history=true/code-edit`` ->
    ``adaptive-history-true-code-edit-<group>-<hex>``."""
    tail = f"-{_safe(group)[:24]}-{secrets.token_hex(3)}"
    return (_safe(name) or "run")[: 64 - len(tail)].rstrip("-") + tail


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")


def experiment_label(config: dict) -> str:
    """A short readable name for a comparison's W&B group (its config hash follows it): what it ran
    on, ``replay-<the benchmark's hash>`` or the model's name; run ids carry its first 24 characters."""
    if config.get("replay"):
        return f"replay-{str(config.get('benchmark') or '')[:8]}".rstrip("-")
    return _safe(Path(str(config.get("model") or "live")).name)[:24] or "live"


def wandb_dir(out_dir: Path | None) -> Path | None:
    """Where runs are written: the user's ``WANDB_DIR`` when set, else ``out_dir`` (both hold a
    ``wandb/`` folder); None: wandb's own default (./wandb)."""
    env = os.environ.get("WANDB_DIR")
    return Path(env).expanduser() if env else out_dir


class _Session:
    """Starts runs in one mode; the first online failure switches this and every later run to offline."""

    def __init__(self, wandb, mode: str, project: str, group: str, out_dir: Path | None) -> None:
        self.wandb, self.mode, self.project, self.group = wandb, mode, project, group
        self.out_dir = wandb_dir(out_dir)
        self.dirs: list[str] = []
        self.urls: list[str] = []

    def _init(self, mode: str, **kwargs):
        settings = self.wandb.Settings(init_timeout=INIT_TIMEOUT_S, silent=True, console="off",
                                       disable_git=True, save_code=False)
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
        return self.wandb.init(project=self.project, group=self.group, mode=mode,
                               dir=str(self.out_dir) if self.out_dir else None,
                               reinit="create_new", settings=settings, **kwargs)

    def start(self, **kwargs):
        if self.mode == "online":
            try:
                return self._init("online", **kwargs)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # CommError on timeout, UsageError, auth errors, ...
                self.mode = "offline"
                _warn(f"online logging failed ({_first_line(exc)}); logging offline instead")
        return self._init("offline", **kwargs)

    def log(self, *, name: str, job_type: str, config: dict, data: dict, summary: dict) -> None:
        run = self.start(name=name, id=run_id(name, self.group), job_type=job_type, config=config)
        try:
            if data:
                run.log(data)
            run.summary.update(summary)
        finally:
            run.finish()
        self.dirs.append(str(Path(run.dir).parent))
        if self.mode == "online" and getattr(run, "url", None):
            self.urls.append(run.url)

    def report(self) -> None:
        """One line on stderr: how many runs, where their folders are, how to upload offline ones."""
        if not self.dirs:
            return
        root = Path(self.dirs[0]).parent
        if self.mode == "offline":
            where = f"upload with: wandb sync {root}/offline-run-*"
        else:
            where = f"first at {self.urls[0]}" if self.urls else "online"
        print(f"W&B: {len(self.dirs)} {self.mode} runs of group {self.group} in {root}; {where}",
              file=sys.stderr, flush=True)


def log_comparison(rows: Sequence[CaseResult], *, mode: str | None, project: str = "pld-lab", group: str,
                   plots: Sequence[Path] = (), out_dir: Path | None = None) -> list[str]:
    """Log ``rows`` (result rows of one comparison) to W&B; return the local run folders written.

    ``mode`` goes through ``resolve_mode`` (None = online if logged in, else off); "off" or no
    rows log nothing. ``group`` names the W&B group (use the experiment hash); ``plots`` are PNGs
    (``plots.write_plots``) logged as images in the ``summary`` run; ``out_dir`` is where wandb
    writes (``out_dir/wandb/...``) unless the user set ``WANDB_DIR`` (None: wandb's default,
    ./wandb). Prints the runs' folder in one line. Never raises for W&B trouble: it warns on
    stderr in one line and returns the runs logged so far.
    """
    mode = resolve_mode(mode)
    rows = list(rows)
    if mode == "off" or not rows:
        return []
    if mode == "online" and not logged_in():  # wandb would prompt for a key (and block) on a terminal
        _warn("not logged in (no WANDB_API_KEY, no .netrc entry); logging offline instead")
        mode = "offline"
    out_dir = None if out_dir is None else Path(out_dir)
    with _quiet():
        try:
            import wandb
        except ImportError as exc:
            _warn(f"wandb is not installed ({exc}); nothing logged")
            return []
        session = _Session(wandb, mode, project, group, out_dir)
        try:
            _log_all(wandb, session, rows, plots)
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            _warn(f"logging stopped after {len(session.dirs)} runs ({_first_line(exc)})")
    session.report()
    return session.dirs


def log_run(*, mode: str | None, group: str, name: str, job_type: str, config: dict,
            tables: Mapping[str, tuple[Sequence[str], Sequence[Sequence]]] | None = None,
            images: Mapping[str, bytes] | None = None, summary: Mapping[str, object] | None = None,
            project: str = "pld-lab", out_dir: Path | None = None) -> list[str]:
    """Log one run of its own -- W&B tables (``key: (columns, rows)``), PNG images (``key: bytes``)
    and summary numbers -- in W&B group ``group``; return the local run folders written. ``mode``
    and ``out_dir`` as for :func:`log_comparison`; "off" logs nothing. Never raises for W&B
    trouble: it warns on stderr in one line."""
    mode = resolve_mode(mode)
    if mode == "off":
        return []
    if mode == "online" and not logged_in():  # wandb would prompt for a key (and block) on a terminal
        _warn("not logged in (no WANDB_API_KEY, no .netrc entry); logging offline instead")
        mode = "offline"
    with _quiet():
        try:
            import wandb
        except ImportError as exc:
            _warn(f"wandb is not installed ({exc}); nothing logged")
            return []
        session = _Session(wandb, mode, project, group, None if out_dir is None else Path(out_dir))
        try:
            with tempfile.TemporaryDirectory() as tmp:  # wandb.Image reads a file
                data = {key: wandb.Table(columns=list(columns), data=[list(row) for row in rows])
                        for key, (columns, rows) in (tables or {}).items()}
                for key, png in (images or {}).items():
                    path = Path(tmp) / f"{_safe(key) or 'image'}.png"
                    path.write_bytes(png)
                    data[key] = wandb.Image(str(path))
                session.log(name=name, job_type=job_type, config=config, data=data, summary=dict(summary or {}))
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - W&B trouble never breaks what logs
            _warn(f"logging {name} failed ({_first_line(exc)})")
    session.report()
    return session.dirs


def _log_all(wandb, session: _Session, rows: list[CaseResult], plots: Sequence[Path]) -> None:
    cells = by_method_and_group(rows)
    for method in method_order(rows):
        for group in group_order(rows):
            mine = cells.get((method, group))
            if not mine:
                continue
            data = {"prompts": prompt_table(wandb, mine)}
            histogram = accepted_histogram(wandb, mine)
            if histogram is not None:
                data["accepted_lengths"] = histogram
            session.log(name=f"{method}/{group}", job_type=group, config=run_config(method, group, mine),
                        data=data, summary=summary_metrics(mine))
    # the summary run: comparison table, plots, and headline numbers per method (over all groups)
    first = rows[0]
    config = {**first.config, "experiment": first.experiment, "methods": method_order(rows),
              "groups": group_order(rows), "git_sha": first.git_sha}
    data = {"comparison": comparison_table(wandb, rows)}
    for path in plots:
        path = Path(path)
        if path.is_file():
            data[f"plots/{path.stem}"] = wandb.Image(str(path), caption=path.stem)
    summary = {}
    for method in method_order(rows):
        for key, value in summary_metrics(cells[(method, ALL)]).items():
            if key in HEADLINE:
                summary[f"{key}/{method}"] = value
    session.log(name="summary", job_type="summary", config=config, data=data, summary=summary)
