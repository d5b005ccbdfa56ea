"""`caveat --help` is fast because the command group is lazy: a command's module is imported only when
that command runs (issue 29, item 12). Behaviour, not time: what `--help` loads, in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from app.cli import main
from app.cli.group import COMMANDS

REPO = Path(__file__).resolve().parent.parent
HEAVY = ["sqlalchemy", "fastapi", "starlette", "pydantic_settings", "app.config", "app.db", "app.models",
         "app.cli.context", "app.cli.core", "app.cli.claims", "archive", "scrapers"]


def _modules_after(*argv: str) -> tuple[int, list[str], str]:
    code = ("import sys, json\nfrom app.cli import main\n"
            "try:\n    main(sys.argv[1:], prog_name='caveat')\nexcept SystemExit as e:\n    code = e.code\n"
            "print('\\n@@' + json.dumps(sorted(sys.modules)), end='')\n")
    proc = subprocess.run([sys.executable, "-c", code, *argv], cwd=REPO, capture_output=True, text=True, timeout=120)
    out, _, mods = proc.stdout.rpartition("\n@@")
    return proc.returncode, json.loads(mods), out


def test_top_level_help_and_version_import_no_command_module():
    for argv in (["--help"], ["--version"], []):
        _, mods, out = _modules_after(*argv)
        loaded = [m for m in HEAVY if m in mods or any(x.startswith(m + ".") for x in mods)]
        assert loaded == [], (argv, loaded)
    _, _, out = _modules_after("--help")
    for name in COMMANDS:  # every command still listed, with its summary
        assert f"\n  {name} " in out, name
    assert "Reviewer accounts (they sign in to confirm or dismiss flags)." in out


def test_a_command_imports_only_its_own_module():
    _, mods, out = _modules_after("source", "--help")
    assert "caveat source add" in out or "add " in out
    assert "app.cli.claims" in mods and "app.cli.measure" not in mods and "app.cli.accounts" not in mods


def test_unknown_command_is_a_clear_error():
    r = CliRunner().invoke(main, ["no-such-command"])
    assert r.exit_code == 2 and "No such command 'no-such-command'" in r.output


def test_summaries_match_the_commands_help():
    commands = main.load_all()
    assert set(commands) == set(COMMANDS), "a command module added a command COMMANDS does not name"
    for name, cmd in commands.items():
        module, summary = COMMANDS[name]
        assert cmd.callback.__module__ == module, name
        for limit in (45, 70, 10_000):
            assert click.Command(name, help=summary).get_short_help_str(limit) == cmd.get_short_help_str(limit), name


def test_every_subcommand_of_a_group_is_found_in_a_fresh_process():
    """A group's subcommands must be reachable when only that group's module is loaded (`caveat source
    set` once lived in another module, and a fresh `caveat source set` did not find it)."""
    import subprocess
    import sys
    from app.cli.group import main
    main.load_all()
    for name, cmd in main.commands.items():
        for sub in getattr(cmd, "commands", {}):
            r = subprocess.run([sys.executable, "-m", "app.cli", name, sub, "--help"], capture_output=True, text=True,
                               timeout=60)
            assert r.returncode == 0, (name, sub, r.stdout[-500:], r.stderr[-500:])
