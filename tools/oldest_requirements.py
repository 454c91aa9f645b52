"""The requirements of the oldest set-up pyproject.toml promises: each dependency with a lower bound pinned to the
last release of that bound's minor version (``torch>=2.4`` -> ``torch~=2.4.0``: 2.4.1), the others as they are.

    python3 tools/oldest_requirements.py [extra ...]     # one requirement a line, for pip install

It reads ``[project] dependencies`` and the named extras, so the versions are stated once, in pyproject.toml.
"""

import pathlib
import re
import sys

PYPROJECT = pathlib.Path(__file__).resolve().parent.parent / "pyproject.toml"


def _list(text: str, key: str) -> list:
    """The strings of the TOML array ``key = [...]`` (one of ours: strings only, maybe over several lines)."""
    match = re.search(rf"^{re.escape(key)}\s*=\s*\[(.*?)\]", text, re.M | re.S)
    if match is None:
        raise SystemExit(f"{PYPROJECT} has no {key} = [...]")
    return re.findall(r'"([^"]+)"', re.sub(r"#[^\n]*", "", match.group(1)))


def oldest(requirement: str) -> str:
    """``name>=X.Y[.Z]`` as ``name~=X.Y.0`` (the newest patch release of the oldest minor); others unchanged."""
    match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*>=\s*(\d+)\.(\d+)(?:\.\d+)?", requirement.strip())
    if match is None:
        return requirement
    name, major, minor = match.groups()
    return f"{name}~={major}.{minor}.0"


def requirements(extras) -> list:
    text = PYPROJECT.read_text()
    found = _list(text, "dependencies")
    for extra in extras:
        found += _list(text, extra)
    seen, result = set(), []
    for req in found:
        name = re.split(r"[<>=~!\[ ;]", req, maxsplit=1)[0].lower().replace("_", "-")
        if name not in seen:
            seen.add(name)
            result.append(oldest(req))
    return result


if __name__ == "__main__":
    print("\n".join(requirements(sys.argv[1:])))
