"""``python -m app.cli``: the ``caveat`` command."""

from app.cli.group import main

main(prog_name="caveat")
