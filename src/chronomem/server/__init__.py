"""The REST service: chronomem's Python API over HTTP (FastAPI, OpenAPI at /docs)."""

from .app import create_app

__all__ = ["create_app"]
