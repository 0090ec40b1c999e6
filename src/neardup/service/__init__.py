"""The HTTP service around :class:`neardup.store.SeenIndex` (needs ``pip install 'neardup[service]'``).

    from neardup.service import create_app
    app = create_app(SeenIndex("seen.db"), token="s3cret")   # any ASGI server runs it

``neardup serve --db seen.db`` runs it with uvicorn. See :mod:`neardup.service.app`.
"""

__all__ = ["create_app"]


def __getattr__(name: str):
    # (create_app needs fastapi: imported when asked for, so that neardup.service.settings, whose
    # definitions make the options of neardup serve, imports without it)
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
