"""`caveat user add|list|remove|password|sessions` and `caveat token create|list|revoke`: reviewer
accounts and API tokens."""

from __future__ import annotations

import sys

import click

from app.cli.group import emit, json_mode, main
from app.cli.context import CliContext
from app.accounts import auth
from app.errors import NotFound
from app.models import utcnow


def _read_password(password_stdin: bool) -> str:
    if password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    return click.prompt("Password", hide_input=True, confirmation_prompt=True)


@main.group()
def user() -> None:
    """Reviewer accounts (they sign in to confirm or dismiss flags).

    \b
    Example:
      caveat user add alice
    """


@user.command("add")
@click.argument("username")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of standard input.")
@click.pass_obj
def user_add(obj: CliContext, username: str, password_stdin: bool) -> None:
    """Create a reviewer account; asks for the password twice unless --password-stdin is given.

    \b
    Example:
      caveat user add alice
      echo 's3cret-passphrase' | caveat user add bob --password-stdin
    """
    password = _read_password(password_stdin)
    with obj.session() as s:
        u = auth.create_user(s, username, password)
        click.echo(f"created user {u.username} (id {u.id})")


@user.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, count, users}.")
@click.pass_obj
def user_list(obj: CliContext, as_json: bool) -> None:
    """List reviewer accounts: name, state, live tokens, decisions. Exit code 1 when there are none (with --json: an empty list, ok, exit 0).

    \b
    Example:
      caveat user list
    """
    json_mode(as_json)
    with obj.session() as s:
        rows = auth.list_users(s)
    if as_json:
        emit({"count": len(rows), "users": rows})     # an empty list is a success (set -e scripts)
        return
    if not rows:
        raise NotFound("No reviewer accounts yet; create one with `caveat user add NAME`.")
    for u in rows:
        state = "active" if u["active"] else "deactivated"
        click.echo(f"{u['username']:20s} {state:12s} {u['live_tokens']} live token(s)  {u['decisions']} decision(s)  "
                   f"created {u['created_at']:%Y-%m-%d}")


@user.command("remove")
@click.argument("username")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, removed}.")
@click.pass_obj
def user_remove(obj: CliContext, username: str, as_json: bool) -> None:
    """Remove an account: its sessions and tokens stop working now. An account named in the audit log
    (decisions, measurements) is deactivated rather than deleted, so the log keeps saying who decided.

    \b
    Example:
      caveat user remove alice
    """
    json_mode(as_json)
    with obj.session() as s:
        done = auth.remove_user(s, username)
    if as_json:
        emit({"removed": done})
        return
    click.echo(f"{done['removed']} user {username} ({done['reason']}); {done['tokens_revoked']} token(s) revoked, "
               "sessions ended")


@user.command("password")
@click.argument("username")
@click.option("--password-stdin", is_flag=True, help="Read the new password from standard input.")
@click.pass_obj
def user_password(obj: CliContext, username: str, password_stdin: bool) -> None:
    """Set a new password; every open session of that user ends.

    \b
    Example:
      caveat user password alice
    """
    password = _read_password(password_stdin)
    with obj.session() as s:
        auth.set_password(s, username, password)
    click.echo(f"password changed for {username}")


@user.command("sessions")
@click.argument("username")
@click.option("--revoke", is_flag=True, help="End every live session of the user (they must sign in again).")
@click.pass_obj
def user_sessions(obj: CliContext, username: str, revoke: bool) -> None:
    """List a user's sign-in sessions (when, from where, live or ended), or end them all with --revoke.

    \b
    Example:
      caveat user sessions alice
      caveat user sessions alice --revoke
    """
    with obj.session() as s:
        rows = auth.list_sessions(s, username)
        now = utcnow()

        def live(r) -> bool:
            exp = r.expires_at if r.expires_at.tzinfo else r.expires_at.replace(tzinfo=now.tzinfo)
            return r.revoked_at is None and exp > now

        for r in rows:
            state = "live" if live(r) else ("revoked" if r.revoked_at else "expired")
            click.echo(f"{r.id:6d}  {r.created_at.isoformat(timespec='seconds')}  {state:8s} {r.client or ''}")
        n_live = sum(1 for r in rows if live(r))
        if revoke:
            user_row = auth.get_user(s, username)
            click.echo(f"revoked {auth.revoke_sessions(s, user_row)} live session(s) of {username}")
        else:
            click.echo(f"{n_live} live session(s) of {username}")


@main.group()
def token() -> None:
    """API tokens for programs (sent as 'Authorization: Bearer <token>').

    \b
    Example:
      caveat token create alice --name importer
    """


@token.command("create")
@click.argument("username")
@click.option("--name", required=True, help="What the token is for (shown in listings, used to revoke it).")
@click.option("--scope", "scopes", default="read,decide,measure", show_default=True,
              help="Comma-separated scopes: read, decide (flag decisions), measure (record measurements), "
                   "admin (mint tokens through the API, never wider or longer-lived than the admin token).")
@click.option("--days", type=int, default=90, show_default=True, help="Days until the token expires (1-366).")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, user, name, scopes, days, token} (the token once).")
@click.pass_obj
def token_create(obj: CliContext, username: str, name: str, scopes: str, days: int, as_json: bool = False) -> None:
    """Create an API token for USERNAME and print it once; only its hash is stored.

    \b
    Example:
      caveat token create alice --name importer --scope read,measure --days 30
    """
    json_mode(as_json)
    with obj.session() as s:
        plaintext = auth.create_token(s, username, name, scopes, days)
    if as_json:
        emit({"user": username, "name": name, "scopes": scopes.split(","), "days": days, "token": plaintext})
        click.echo("(shown once; store it now)", err=True)
        return
    click.echo(plaintext)
    click.echo("(shown once; store it now)", err=True)


@token.command("list")
@click.argument("username", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print {ok, count, tokens} (never the tokens themselves).")
@click.pass_obj
def token_list(obj: CliContext, username: str | None, as_json: bool) -> None:
    """List API tokens (all users, or USERNAME's): name, scopes, created, expires, last used, state.
    Tokens themselves are never shown again.

    \b
    Example:
      caveat token list alice
    """
    def when(d) -> str:
        return d.isoformat(timespec="minutes") if d else "-"


    json_mode(as_json)
    with obj.session() as s:
        rows = auth.list_tokens(s, username)
        names = {t.id: t.name for t, _ in auth.list_tokens(s)}  # a parent's name, whoever is listed
        if as_json:
            emit({"count": len(rows), "tokens": [
                {"id": t.id, "user": u, "name": t.name, "scopes": t.scopes.split(","), "created_at": t.created_at,
                 "expires_at": t.expires_at, "last_used_at": t.last_used_at, "state": auth.token_state(t),
                 "parent": names.get(t.parent_id)}
                for t, u in rows]})
            return
        if not rows:
            raise NotFound("No API tokens" + (f" for {username}" if username else "") +
                           "; create one with `caveat token create USER --name NAME`.")
        for t, user in rows:
            minted = f"  minted by {names[t.parent_id]}" if t.parent_id in names else ""
            click.echo(f"{user:16s} {t.name:20s} {t.scopes:24s} created {when(t.created_at)}  expires "
                       f"{when(t.expires_at)}  used {when(t.last_used_at)}  {auth.token_state(t)}{minted}")
        click.echo(f"{len(rows)} token(s)", err=True)


@token.command("revoke")
@click.argument("username")
@click.option("--name", required=True, help="Name the token was created with.")
@click.pass_obj
def token_revoke(obj: CliContext, username: str, name: str) -> None:
    """Revoke USERNAME's live tokens with this name, and every token minted with them through the API.

    \b
    Example:
      caveat token revoke alice --name importer
    """
    with obj.session() as s:
        n = auth.revoke_token(s, username, name)
    click.echo(f"revoked {n} token(s) (the token named {name} and the tokens minted from it)")
