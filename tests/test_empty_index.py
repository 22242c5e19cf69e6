"""Searching or chatting before anything was imported gets a clear message, never a traceback."""

from __future__ import annotations

from fastapi.testclient import TestClient
from helpers_vault import fake_settings

from mindnet.api import create_app
from mindnet.cli import main
from mindnet.service import Mindnet

HINT = "holds no collection t_chunks; import your vault first"


def test_cli_query_without_an_index_names_the_folder_and_says_to_ingest(tmp_path, fake_ollama, monkeypatch,
                                                                        capsys) -> None:
    for key, value in {"MINDNET_EMBEDDING": "ollama", "MINDNET_OLLAMA_URL": fake_ollama.url,
                       "MINDNET_QDRANT_PATH": str(tmp_path / "q"), "MINDNET_COLLECTION_PREFIX": "t",
                       "MINDNET_CACHE_DIR": str(tmp_path / "c"), "MINDNET_LOG_DIR": str(tmp_path / "logs"),
                       "MINDNET_VAULT_ROOT": str(tmp_path / "my vault")}.items():
        monkeypatch.setenv(key, value)
    for command in (["query", "Qdrant"], ["check"]):
        assert main(command) == 2 if command[0] == "query" else main(command) != 0
        err = " ".join(capsys.readouterr().err.split())
        assert f"no index at {(tmp_path / 'q').resolve()}: the folder does not exist" in err, command
        # the vault the index would be built from, named: a command run from the wrong folder shows it at once
        assert f"`mindnet ingest` imports {(tmp_path / 'my vault').resolve()} (MINDNET_VAULT_ROOT)" in err, command
        assert not (tmp_path / "q").exists()


def test_api_query_and_chat_on_an_empty_index_answer_409(tmp_path, fake_ollama) -> None:
    app = Mindnet(fake_settings(tmp_path, fake_ollama.url, log_dir=tmp_path / "logs"))
    with TestClient(create_app(app)) as client:
        for path, body in (("/query", {"query": "Qdrant"}), ("/chat", {"message": "Was ist Qdrant?"})):
            response = client.post(path, json=body)
            assert response.status_code == 409, path
            assert HINT in response.json()["detail"]      # (the API names no folder of the machine)
    app.close()
