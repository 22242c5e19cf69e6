"""The API's reference pages, `/docs` (Swagger UI) and `/redoc`, served from this machine.

Off by default: FastAPI's own pages load their JavaScript, CSS and fonts from public CDNs. `MINDNET_API_DOCS=true`
turns them on with the files of the `fastapi-offline` package (`pip install 'mindnet[docs]'`) under `/docs/assets/`:
no inline script, nothing from another machine, so they work under the server's Content-Security-Policy.
`/openapi.json` (the schema itself) is always there.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

from mindnet.errors import ConfigError

ASSETS = "/docs/assets"
INIT = "/docs/swagger-init.js"
PATHS = ("/docs", "/redoc", INIT)       # with everything under ASSETS: open without the token, like /openapi.json
SWAGGER_INIT = """window.ui = SwaggerUIBundle({
  url: "/openapi.json", dom_id: "#swagger-ui", layout: "BaseLayout", deepLinking: true,
  showExtensions: true, showCommonExtensions: true, validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
"""


def asset_folder() -> Path:
    """The Swagger UI and ReDoc files of `fastapi-offline`; ConfigError naming the fix when it is missing."""
    try:
        import fastapi_offline
    except ImportError as exc:
        raise ConfigError("MINDNET_API_DOCS=true, but the API docs' files are not installed: pip install "
                          "'mindnet[docs]' (or unset MINDNET_API_DOCS: /openapi.json is there anyway)") from exc
    return Path(fastapi_offline.__file__).resolve().parent / "static"


def add_api_docs(app: FastAPI) -> None:
    """`/docs` and `/redoc` with their files under ASSETS."""
    folder = asset_folder()
    title = escape(app.title)
    app.mount(ASSETS, StaticFiles(directory=folder), name="api-docs-assets")

    @app.get(INIT, include_in_schema=False)
    async def swagger_init() -> Response:
        return Response(SWAGGER_INIT, media_type="text/javascript")

    @app.get("/docs", include_in_schema=False)
    async def swagger() -> HTMLResponse:
        return HTMLResponse(f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{title} - API</title>
<link rel="icon" href="{ASSETS}/favicon.png"><link rel="stylesheet" href="{ASSETS}/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="{ASSETS}/swagger-ui-bundle.js"></script><script src="{INIT}"></script>
</body></html>""")

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return HTMLResponse(f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{title} - API (ReDoc)</title>
<link rel="icon" href="{ASSETS}/favicon.png"></head>
<body><redoc spec-url="/openapi.json"></redoc><script src="{ASSETS}/redoc.standalone.js"></script>
</body></html>""")
