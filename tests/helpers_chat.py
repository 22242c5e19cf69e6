"""Helpers for the chat tests: a small vault and a `Mindnet` importing it with the fake Ollama."""

from __future__ import annotations

from pathlib import Path

from helpers_vault import write_vault

from mindnet.service import Mindnet
from mindnet.settings import Settings

CHAT_VAULT: dict[str, str] = {
    "concepts/qdrant.md": "---\ntitle: Qdrant\ntype: concept\n---\n# Qdrant\n\n"
                          "Qdrant ist eine lokale Vektordatenbank für dichte und dünnbesetzte Vektoren. "
                          "Die [[Hybride Suche]] hängt von Qdrant ab.\n",
    "concepts/hybride-suche.md": "---\ntitle: Hybride Suche\ntype: concept\n---\n# Hybride Suche\n\n"
                                 "Hybride Suche kombiniert dichte Vektoren mit BM25 und hängt von [[Qdrant]] ab.\n",
    "values/einfachheit.md": "---\ntitle: Einfachheit\ntype: value\n---\n# Einfachheit\n\n"
                             "Einfachheit vor Vollständigkeit: lieber ein System als zwei Datenbanken.\n",
    "decisions/qdrant-statt-chroma.md": "---\ntitle: Qdrant statt Chroma\ntype: decision\n---\n"
                                        "# Qdrant statt Chroma\n\nIch nehme Qdrant statt Chroma, "
                                        "weil es hybride Suche ohne zweites System kann.\n",
    "journal/2025-03-14 Training.md": "---\ntitle: Training\ntype: experience\n---\n# Training\n\n"
                                      "Erstes Karate-Training nach der Pause, müde aber froh.\n",
}


def chat_mindnet(tmp_path: Path, ollama_url: str, **overrides: object) -> Mindnet:
    """A Mindnet over a fresh copy of CHAT_VAULT, already imported."""
    vault = write_vault(tmp_path / "vault", CHAT_VAULT)
    values: dict[str, object] = {
        "embedding": "ollama", "ollama_url": ollama_url, "llm_model": "phi3:mini", "qdrant_path": tmp_path / "q",
        "cache_dir": tmp_path / "c", "log_dir": tmp_path / "logs", "vault_root": vault, "llm_timeout": 5,
    }
    values.update(overrides)
    m = Mindnet(Settings(**values))
    m.ingest()
    return m
