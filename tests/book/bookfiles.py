"""What the tests know about the book's files: the toc, the config, the chapter notebooks."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "chapters"


def load_extension(name: str) -> ModuleType:
    """The book build's Sphinx extension ``_ext/<name>.py``, imported as a module (``_ext`` is no package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "_ext" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def toc_files() -> list[str]:
    """Every file named in _toc.yml (root first), as paths relative to the repository root, no suffix."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    found = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                found.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    return found


def resolve(entry: str) -> Path:
    """The file a toc entry names (entries may omit the suffix)."""
    for suffix in ("", ".ipynb", ".md"):
        path = ROOT / f"{entry}{suffix}"
        if path.is_file():
            return path
    raise FileNotFoundError(f"_toc.yml names {entry!r} but no such .ipynb or .md file exists")


def notebooks() -> list[Path]:
    return sorted(p for p in CHAPTERS.glob("*.ipynb"))


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])
