"""The commands of mindnet's command line, one module per group (mindnet/cli.py parses the arguments and
dispatches to the `cmd_*` functions here): index (ingest, dry-run, check, watch), query, eval, suggest, serve,
mcp, feedback (feedback-report), init. Shared by all of them: common.py."""
