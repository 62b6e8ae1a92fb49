"""Prompts from the user's own files: MT-bench / Spec-Bench question files and dataset records.

:func:`load_jsonl_questions` reads question files (``question_id``, ``category``, ``turns``);
:func:`load_dataset_file` fills a ``str.format`` template from each record of a ``.jsonl``,
``.json`` or ``.parquet`` file. Every problem with a file raises :class:`PLDError` naming the
file and, where there is one, the line or record.
"""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

from experiments.benchmarks.prompts import Prompt, take
from pldcore.errors import PLDError

__all__ = ["load_dataset_file", "load_jsonl_questions"]


# --------------------------------------------------------------------------- question files


def _read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """(line number, parsed value) for each non-blank line; bad JSON names its line."""
    rows = []
    lineno = 0
    with _open_text(path) as f:
        try:
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    rows.append((lineno, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise PLDError(f"{path}:{lineno}: invalid JSON: {exc.msg}") from None
        except UnicodeDecodeError:
            raise PLDError(f"{path}:{lineno + 1}: not UTF-8 text") from None
    return rows


def _open_text(path: Path) -> TextIO:
    if not path.is_file():
        raise PLDError(f"no such file: {path}")
    return path.open(encoding="utf-8")


def _question_prompt(path: Path, lineno: int, record: Any, category: str | None) -> Prompt:
    where = f"{path}:{lineno}"
    if not isinstance(record, dict):
        raise PLDError(f"{where}: expected a JSON object, got {type(record).__name__}")
    required = ("question_id", "turns") if category else ("question_id", "category", "turns")
    missing = [k for k in required if k not in record]
    if missing:
        raise PLDError(f"{where}: missing field(s) {', '.join(missing)}; "
                       f"the record has: {', '.join(record) or 'nothing'}")
    turns = record["turns"]
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
        raise PLDError(f"{where}: 'turns' must be a non-empty list of strings")
    own_category = category or str(record["category"])
    meta = {k: v for k, v in record.items() if k != "turns"}
    return Prompt(id=f"{own_category}/{record['question_id']}", category=own_category,
                  turns=tuple(turns), meta=meta)


def load_jsonl_questions(path: str | Path, category: str | None = None) -> list[Prompt]:
    """Prompts from a JSONL file in the MT-bench / Spec-Bench question format.

    Each line is an object with ``question_id``, ``category`` and ``turns`` (a list of user
    messages). ``category`` given here overrides the records' own (which stays in ``meta``);
    otherwise each prompt's category is its record's, so results can be split by it.
    Ids are ``"{category}/{question_id}"`` and must be unique.
    """
    path = Path(path)
    prompts = [_question_prompt(path, lineno, rec, category) for lineno, rec in _read_jsonl(path)]
    if not prompts:
        raise PLDError(f"{path}: no questions in the file")
    _check_unique_ids(prompts, path)
    return prompts


def _check_unique_ids(prompts: Sequence[Prompt], path: Path) -> None:
    seen: set[str] = set()
    for p in prompts:
        if p.id in seen:
            raise PLDError(f"{path}: duplicate prompt id {p.id!r}")
        seen.add(p.id)


# --------------------------------------------------------------------------- dataset files


def _records_jsonl(path: Path) -> list[Any]:
    return [rec for _, rec in _read_jsonl(path)]


def _records_json(path: Path) -> list[Any]:
    with _open_text(path) as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as exc:
            raise PLDError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
        except UnicodeDecodeError:
            raise PLDError(f"{path}: not UTF-8 text") from None
    if not isinstance(data, list):
        raise PLDError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
    return data


_PARQUET_HINT = "reading .parquet files needs pyarrow (or pandas with a parquet engine): pip install pyarrow"


def _parquet_reader() -> Callable[[Path], list[Any]]:
    """pyarrow's reader if installed (the lighter dependency), else pandas'."""
    try:
        import pyarrow.parquet as pq

        return lambda path: pq.read_table(path).to_pylist()
    except ImportError:
        pass
    try:
        import pandas as pd

        return lambda path: pd.read_parquet(path).to_dict(orient="records")
    except ImportError:
        raise PLDError(_PARQUET_HINT) from None


def _records_parquet(path: Path) -> list[Any]:
    if not path.is_file():
        raise PLDError(f"no such file: {path}")
    read = _parquet_reader()
    try:
        return read(path)
    except ImportError as exc:  # pandas without an engine fails only when reading
        raise PLDError(f"{_PARQUET_HINT} ({exc})") from None
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise PLDError(f"{path}: cannot read parquet: {exc}") from None


_READERS: dict[str, Callable[[Path], list[Any]]] = {
    ".jsonl": _records_jsonl,
    ".json": _records_json,
    ".parquet": _records_parquet,
}


def _template_fields(template: str) -> set[str]:
    """The record fields a ``str.format`` template names; positional or malformed templates are errors."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise PLDError(f"bad template {template!r}: {exc}") from None
    fields = set()
    for _, name, _, _ in parsed:
        if name is None:
            continue
        root = re.split(r"[.\[]", name, maxsplit=1)[0]
        if root == "" or root.isdigit():
            raise PLDError(f"template {template!r} has a positional field; name a record field, e.g. {{article}}")
        fields.add(root)
    return fields


def _render(template: str, fields: set[str], record: Any, where: str) -> str:
    if not isinstance(record, dict):
        raise PLDError(f"{where}: expected a record (object), got {type(record).__name__}")
    missing = sorted(fields - record.keys())
    if missing:
        raise PLDError(f"{where}: template field(s) {', '.join(missing)} not in the record; "
                       f"its fields are: {', '.join(map(str, record)) or 'none'}")
    try:
        return template.format(**record)
    except (KeyError, IndexError, AttributeError, TypeError, ValueError) as exc:
        raise PLDError(f"{where}: cannot fill template {template!r}: {exc!r}") from None


def load_dataset_file(
    path: str | Path,
    template: str,
    category: str = "custom",
    id_field: str | None = None,
    limit: int | None = None,
) -> list[Prompt]:
    """Single-turn prompts from a local ``.jsonl``, ``.json`` (a list of records) or ``.parquet`` file.

    Each record fills ``template`` with ``str.format``, e.g. ``"Summarize:\\n{article}"`` for
    CNN/DailyMail. Ids are ``"{category}/{record[id_field]}"``, or ``"{category}/{index:03d}"``
    without ``id_field``. ``limit`` keeps the first records.
    """
    path = Path(path)
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        raise PLDError(f"{path}: unsupported file type {path.suffix!r}; use one of {', '.join(_READERS)}")
    fields = _template_fields(template)
    records = take(reader(path), limit)
    prompts = []
    for i, record in enumerate(records):
        where = f"{path} record {i}"
        text = _render(template, fields, record, where)
        if id_field is not None and id_field not in record:
            raise PLDError(f"{where}: no id field {id_field!r}; its fields are: {', '.join(map(str, record))}")
        key = str(record[id_field]) if id_field is not None else f"{i:03d}"
        meta = {"source": str(path), "index": i}
        prompts.append(Prompt(id=f"{category}/{key}", category=category, turns=(text,), meta=meta))
    _check_unique_ids(prompts, path)
    return prompts
