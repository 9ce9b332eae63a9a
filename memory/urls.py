"""Memory API paths, split by sub-domain so each module owns its own routes."""

from django.urls import include, path

urlpatterns = [
    path("", include("memory.capture.urls")),
    path("", include("memory.governance.urls")),
    path("", include("memory.providers.urls")),
]
