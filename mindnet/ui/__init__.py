"""The Chainlit chat UI: wiring and rendering only.

`mount.mount_ui(app, mindnet)` mounts `app.py` (the only module that imports chainlit) into the FastAPI app of
`mindnet serve`; `render` builds the Markdown it shows; `registry` hands the server's `Mindnet` to the app.
Importing this package does not import chainlit.
"""
