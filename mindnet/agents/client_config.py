"""The snippet a desktop client needs to start `mindnet mcp` (`mindnet mcp --print-config claude|cursor|vscode`).

A client starts the server in a folder of its own choosing, so the snippet names everything absolutely: the
`mindnet` program of this installation and the vault, index, cache and log folders these settings use. With
`url`, the snippet points the client at a running `mindnet serve` (`<url>/mcp`) instead.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from mindnet.settings import Settings

CLIENTS = ("claude", "cursor", "vscode")
WHERE = {
    "claude": "Claude Desktop: Settings > Developer > Edit Config (claude_desktop_config.json), under mcpServers",
    "cursor": "Cursor: ~/.cursor/mcp.json (all projects) or .cursor/mcp.json (this project)",
    "vscode": "VS Code: .vscode/mcp.json in the workspace (or 'MCP: Open User Configuration')",
}


def server_env(settings: Settings) -> dict[str, str]:
    """The MINDNET_* variables that make a server started elsewhere open this index of this vault."""
    env = {"MINDNET_VAULT_ROOT": str(Path(settings.vault_root).resolve()),
           "MINDNET_EMBEDDING": settings.embedding}
    if settings.qdrant_url:
        env["MINDNET_QDRANT_URL"] = settings.qdrant_url
    else:
        env["MINDNET_QDRANT_PATH"] = str(Path(settings.qdrant_path).resolve())
    env["MINDNET_CACHE_DIR"] = str(Path(settings.cache_dir).resolve())
    env["MINDNET_LOG_DIR"] = str(Path(settings.log_dir).resolve())
    if settings.embedding_model:
        env["MINDNET_EMBEDDING_MODEL"] = settings.embedding_model
    if settings.embedding == "ollama" or settings.ollama_url != "http://127.0.0.1:11434":
        env["MINDNET_OLLAMA_URL"] = settings.ollama_url
    if settings.config_dir:
        env["MINDNET_CONFIG_DIR"] = str(Path(settings.config_dir).resolve())
    if settings.collection_prefix != "mindnet":
        env["MINDNET_COLLECTION_PREFIX"] = settings.collection_prefix
    if settings.mcp_read_only:
        env["MINDNET_MCP_READ_ONLY"] = "1"
    return env


def mindnet_command() -> list[str]:
    """How to start this installation's mindnet: its `mindnet` script, else this Python with `-m mindnet.cli`."""
    script = Path(sys.executable).with_name("mindnet")
    found = str(script) if script.is_file() else shutil.which("mindnet")
    return [found] if found else [sys.executable, "-m", "mindnet.cli"]


def client_config(client: str, settings: Settings, *, url: str | None = None) -> dict[str, Any]:
    """The JSON a client's MCP configuration takes for mindnet."""
    if client not in CLIENTS:
        raise ValueError(f"unknown client {client!r}; use one of {', '.join(CLIENTS)}")
    if url and client == "claude":
        raise ValueError("Claude Desktop's config file starts local (stdio) servers only; leave out --url (the "
                         "snippet starts `mindnet mcp`), or add the URL as a custom connector in its settings")
    if url:
        endpoint = url.rstrip("/") + "/mcp"
        entry: dict[str, Any] = {"url": endpoint}
        if settings.api_token:
            entry["headers"] = {"Authorization": "Bearer <MINDNET_API_TOKEN>"}
        if client == "vscode":
            entry = {"type": "http", **entry}
    else:
        command = mindnet_command()
        entry = {"command": command[0], "args": [*command[1:], "mcp"], "env": server_env(settings)}
        if client == "vscode":
            entry = {"type": "stdio", **entry}
    return {"servers": {"mindnet": entry}} if client == "vscode" else {"mcpServers": {"mindnet": entry}}
