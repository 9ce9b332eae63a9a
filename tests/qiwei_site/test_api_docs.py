"""/api/docs/ works offline: Swagger UI comes from the installed sidecar, never from a CDN (issue 11)."""

from __future__ import annotations

import re


def test_api_docs_load_swagger_ui_from_local_static_files(staff_client):
    body = staff_client.get("/api/docs/").content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', body)
    assert any("drf_spectacular_sidecar/swagger-ui-dist" in url for url in assets), assets
    assert not [url for url in assets if url.startswith(("http://", "https://", "//"))]
