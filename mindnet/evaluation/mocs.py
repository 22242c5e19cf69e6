"""Maps of Content for the robustness test: index notes that link to many random documents.

Real vaults have them (MOCs, "Start here" pages, daily notes listing everything touched); a graph score that
trusts every link would push them, or whatever they link to, into every result list. `inject_mocs` writes
`count` such notes into an eval vault, each linking 50-200 random documents by id, reproducibly from `seed`.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import yaml

from mindnet.evaluation.beir import BeirDataset

MOC_PREFIX = "moc-"
_UNSAFE = re.compile(r"[\[\]|#^\n]")


def moc_id(i: int) -> str:
    return f"{MOC_PREFIX}{i:02d}"


def is_moc(note_id: str) -> bool:
    return note_id.startswith(MOC_PREFIX)


def inject_mocs(dataset: BeirDataset, folder: str | Path, *, count: int, seed: int = 1, smallest: int = 50,
                largest: int = 200) -> dict[str, list[str]]:
    """Write `count` index notes into `folder`; returns MOC id -> linked document ids."""
    rng = random.Random(seed)
    doc_ids = sorted(dataset.corpus)
    root = Path(folder)
    out: dict[str, list[str]] = {}
    for i in range(1, count + 1):
        size = rng.randint(min(smallest, len(doc_ids)), min(largest, len(doc_ids)))
        linked = rng.sample(doc_ids, size)
        lines = [f"- [[{d}|{_UNSAFE.sub(' ', dataset.corpus[d].title or d).strip() or d}]]" for d in linked]
        meta = yaml.safe_dump({"id": moc_id(i), "title": f"Index {i:02d}"}, sort_keys=False)
        body = f"# Index {i:02d}\n\nOverview of related documents:\n\n" + "\n".join(lines) + "\n"
        (root / f"{moc_id(i)}.md").write_text(f"---\n{meta}---\n\n{body}", encoding="utf-8")
        out[moc_id(i)] = linked
    return out
