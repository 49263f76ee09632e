"""The torch serving engine. Import submodules directly; `api` needs no torch."""
