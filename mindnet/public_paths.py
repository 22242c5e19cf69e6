"""What a server says about its own folders: absolute paths made vault-relative, other folders named.

Shared by the HTTP API (`mindnet.api`) and the MCP server (`mindnet.agents.mcp_server`), which both show
error text to a client that should not learn where the server keeps its files.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mindnet.settings import Settings

__all__ = ["public_text"]


def public_text(text: str, settings: Settings) -> str:
    """`text` with absolute paths made vault-relative (and other server folders named, not shown)."""
    vault = Path(settings.vault_root)
    for root in dict.fromkeys([str(vault.resolve()), str(vault.absolute())]):
        text = text.replace(root + "/", "").replace(root, "<vault>")
    for label, folder in (("config", settings.config_dir or Path("config")), ("prompts", settings.prompts_dir),
                          ("cache", settings.cache_dir), ("logs", settings.log_dir),
                          ("qdrant", settings.qdrant_path)):
        for root in dict.fromkeys([str(Path(folder).resolve()), str(Path(folder).absolute())]):
            text = text.replace(root, f"<{label}>")
    return text
