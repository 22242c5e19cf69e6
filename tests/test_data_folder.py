"""The data folder holds every note's text (index, embedding cache, manifest, search history, conversations,
Chainlit's uploads): with the common umask 022 nothing in it may be readable by another local user."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from helpers_vault import fake_settings, write_vault

from mindnet.retrieval.query import QueryRequest
from mindnet.service import Mindnet
from mindnet.ui.mount import prepare_app_root
from mindnet.ui.threads import create_schema, threads_path


def reachable_by_others(root: Path) -> list[str]:
    """Files under `root` another user can read: the file is readable by others and every folder from `root`
    down to it lets others in."""
    found = []
    for folder, _, files in os.walk(root):
        chain = [Path(folder), *Path(folder).relative_to(root).parents]
        if any(not (root / p).stat().st_mode & stat.S_IXOTH for p in chain):
            continue
        found += [str(Path(folder, f).relative_to(root)) for f in files
                  if os.stat(Path(folder, f)).st_mode & stat.S_IROTH]
    return found


def test_nothing_in_the_data_folder_is_readable_by_other_users(tmp_path: Path, fake_ollama) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    write_vault(tmp_path / "vault", {"a.md": "# Alpha\n\nGeheim: [[Beta]].", "b.md": "# Beta\n\nAuch geheim."})
    settings = fake_settings(data, fake_ollama.url, vault_root=tmp_path / "vault", log_dir=data / "logs")
    old = os.umask(0o022)
    try:
        app = Mindnet(settings)
        try:
            app.ingest()
            result = app.query(  # the search history and a rating, as the API writes them
                QueryRequest(query="geheim", mode="hybrid"))
            app.logs.record_feedback(result["query_id"], 5)
        finally:
            app.close()
        create_schema(threads_path(settings.cache_dir))
        prepare_app_root(settings.cache_dir / "chainlit")
    finally:
        os.umask(old)
    assert sorted(p.name for p in data.iterdir()) == ["cache", "logs", "qdrant", "threads.sqlite"]
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in [*data.iterdir(), settings.cache_dir / "chainlit"]}
    assert modes == {"cache": "0o700", "logs": "0o700", "qdrant": "0o700", "threads.sqlite": "0o600",
                     "chainlit": "0o700"}
    own = [*(settings.cache_dir).glob("*.sqlite*"), *(settings.cache_dir).glob("*.json"),
           *(data / "logs").iterdir(), *(data / "qdrant").glob("mindnet.*")]
    assert own and {oct(p.stat().st_mode & 0o777) for p in own} == {"0o600"}, own
    os.chmod(data, 0o755)        # even with the parent open to all, no file below it is
    assert reachable_by_others(data) == []
