"""mindnet for agents: the vault's tools (`VaultTools`), served over MCP (`mindnet mcp`, `/mcp` in `mindnet serve`)
and as LlamaIndex tools (`mindnet_tools()`)."""

from mindnet.agents.llama import mindnet_tools
from mindnet.agents.specs import SPECS, ToolSpec
from mindnet.agents.tools import VaultTools

__all__ = ["SPECS", "ToolSpec", "VaultTools", "mindnet_tools"]
