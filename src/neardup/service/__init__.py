"""The HTTP service around :class:`neardup.store.SeenIndex` (needs ``pip install 'neardup[service]'``).

    from neardup.service import create_app
    app = create_app(SeenIndex("seen.db"), token="s3cret")   # any ASGI server runs it

``neardup serve --db seen.db`` runs it with uvicorn. See :mod:`neardup.service.app`.
"""

from .app import create_app

__all__ = ["create_app"]
