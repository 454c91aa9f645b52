"""What every bench writes to disk: its results as files in the directory the user names (``--out-dir``, made if
need be) -- rows as CSV, a document as JSON, a page of text -- each through one function here, so that every
bench's files are written alike (UTF-8; CSV with a header row; JSON indented by one space and ended by a newline)
and a reader who knows one knows them all. The figures are drawn from these files afterwards (``figures.py``)."""

from __future__ import annotations

import csv
import json
import pathlib
from typing import Any, Iterable, Sequence


def _path(out_dir: str, name: str) -> pathlib.Path:
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return out / name


def write_csv(out_dir: str, name: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> pathlib.Path:
    """``out_dir/name``: the ``header`` row, then ``rows`` (values written as ``str`` writes them: format numbers
    before, to the digits they deserve)."""
    path = _path(out_dir, name)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_json(out_dir: str, name: str, data: Any, default=None, indent: int | None = 1) -> pathlib.Path:
    """``out_dir/name``: ``data`` as JSON (``default``: what ``json.dumps`` calls on a value it cannot write;
    ``indent=None``: one line, for large files no one reads by eye)."""
    path = _path(out_dir, name)
    path.write_text(json.dumps(data, indent=indent, default=default) + "\n", encoding="utf-8")
    return path


def write_text(out_dir: str, name: str, text: str) -> pathlib.Path:
    """``out_dir/name``: ``text`` (a Markdown page, a table as printed)."""
    path = _path(out_dir, name)
    path.write_text(text, encoding="utf-8")
    return path
