"""Every router the application serves. Each module in ``app/api`` and ``app/views`` exposes ``router``."""

from __future__ import annotations

import importlib
import pkgutil

from fastapi import FastAPI

ROUTER_PACKAGES = ("app.api", "app.views")


def include_all(application: FastAPI) -> None:
    for pkg_name in ROUTER_PACKAGES:
        pkg = importlib.import_module(pkg_name)
        for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
            module = importlib.import_module(f"{pkg_name}.{mod.name}")
            router = getattr(module, "router", None)
            if router is not None:
                application.include_router(router)
