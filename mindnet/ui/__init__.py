"""The Chainlit chat UI: wiring and rendering only.

`mount.mount_ui(app, mindnet)` mounts `app.py` (the module Chainlit loads; it imports `answer_view`,
`draft_editor` and `suggest`, whose callbacks register on import) into the FastAPI app of `mindnet serve`;
`render` and `escaping` build the Markdown it shows; `registry` hands the server's `Mindnet` to the app.
Importing this package does not import chainlit.
"""
