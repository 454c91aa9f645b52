"""``bench/files.py``: the one way every bench writes its results -- the directory made, CSV with its header row,
JSON indented and ended by a newline (or on one line), text as given."""

import csv
import json

from scatterx.bench.files import write_csv, write_json, write_text


def test_each_writer_makes_the_directory_and_writes_what_it_is_given(tmp_path):
    out = str(tmp_path / "a" / "b")  # (neither exists yet)
    path = write_csv(out, "rows.csv", ["name", "ms"], [["sum", "1.5000"], ["amax", 2]])
    with open(path, newline="") as f:
        assert list(csv.reader(f)) == [["name", "ms"], ["sum", "1.5000"], ["amax", "2"]]
    data = {"rows": [1, 2], "env": {"cpu": "x"}}
    path = write_json(out, "report.json", data)
    text = path.read_text()
    assert json.loads(text) == data and text.endswith("}\n") and "\n " in text  # indented
    path = write_json(out, "big.json", {"when": tmp_path}, default=str, indent=None)
    assert path.read_text() == json.dumps({"when": str(tmp_path)}) + "\n"  # one line; default= applied
    path = write_text(out, "page.md", "# a page\n")
    assert path.read_text() == "# a page\n" and path.parent == tmp_path / "a" / "b"
