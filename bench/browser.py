"""Browser capture speed: the fixture JavaScript board, Caveat against Chromium driven through warcprox.

Ours: ``capture_browser_urls`` (as ``caveat capture --browser`` runs it) on a fresh SQLite database:
Chromium started inside the timed part, every request answered by Caveat's guarded fetcher, then the
page's responses, the rendered DOM, a full-page PNG and the page-info record written, fsynced and
indexed. Peer: warcprox (PyPI, a WARC-writing recording proxy; its own venv, `make warcprox`) already
listening, and the same Chromium (same flags) started inside the timed part with warcprox as its
proxy, loading the same page to network idle plus the same settle time; warcprox is stopped at the
end of the timed part so its records are on disk. The peer writes no DOM, screenshot or index.

Both load each page ``--pages`` times (distinct URLs ``/board?n=i``, the same rows) in one browser,
one new context per page, ``--rounds`` rounds (who goes first alternates); the best round of each
and the median of the per-round ratios are reported. Both
WARCs are checked with ``warcio check`` at the end.

    .venv/bin/python bench/browser.py
    .venv/bin/python bench/browser.py --pages 10 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser_site import Site  # noqa: E402 - the same fixture site the tests capture

WARCPROX = Path(os.environ.get("CAVEAT_WARCPROX", ROOT / ".venv-warcprox" / "bin" / "warcprox"))
WARCIO = Path(os.environ.get("CAVEAT_REF_BIN", ROOT / ".venv-ref" / "bin")) / "warcio"
CHROMIUM = os.environ.get("CAVEAT_CHROMIUM", "/usr/bin/chromium")
SETTLE = 1.0
IDLE = 0.5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ours(site: Site, urls: list[str], tmp: Path) -> tuple[float, list[Path]]:
    from app.config import Settings
    from app.db import Database
    from app.capture.browser import capture_browser_urls

    data = tmp / "caveat"
    settings = Settings(data_dir=data, allow_private_hosts=site.allow, browser_executable=CHROMIUM,
                        browser_settle=SETTLE, browser_idle_time=IDLE, secret_key="bench")
    db = Database(settings)
    db.upgrade()
    started = time.perf_counter()
    results = capture_browser_urls(db, urls)
    took = time.perf_counter() - started
    bad = [r for r in results if r.error]
    if bad:
        raise SystemExit(f"caveat failed: {bad[0].url}: {bad[0].error}")
    db.dispose()
    return took, sorted(settings.warc_dir.glob("*.warc.gz"))


async def _peer_pages(urls: list[str], port: int) -> None:
    from playwright.async_api import async_playwright

    from archive.browser import FLAGS

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS + [
            f"--proxy-server=http://127.0.0.1:{port}", "--proxy-bypass-list=<-loopback>"])
        try:
            for url in urls:
                context = await browser.new_context(ignore_https_errors=True, service_workers="block")
                page = await context.new_page()
                await page.goto(url, wait_until="networkidle", timeout=60000)  # 500 ms without requests
                await asyncio.sleep(SETTLE)
                await context.close()
        finally:
            await browser.close()


def peer(urls: list[str], tmp: Path) -> tuple[float, list[Path]]:
    work = tmp / "warcprox"
    work.mkdir()
    port = free_port()
    # warcprox refuses to fetch from 127.0.0.1 unless its handler's allow_localhost is set (no option for it);
    # the fixture site lives there, so its own Python starts it with that one attribute changed.
    launcher = ("import sys, warcprox.main, warcprox.warcproxy as w; w.WarcProxyHandler.allow_localhost = True; "
                "warcprox.main.main(['warcprox'] + sys.argv[1:])")
    proc = subprocess.Popen([str(WARCPROX.parent / "python"), "-c", launcher, "-b", "127.0.0.1", "-p", str(port), "-z", "-d", str(work / "warcs"),
                             "--base32", "-g", "sha256", "-q"], cwd=work, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"warcprox exited: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.1)
    started = time.perf_counter()
    try:
        asyncio.run(_peer_pages(urls, port))
    finally:
        proc.send_signal(signal.SIGTERM)  # warcprox writes what it has queued, then exits
        proc.wait(120)
    took = time.perf_counter() - started
    return took, sorted((work / "warcs").glob("*.warc.gz"))


def warcio_check(files: list[Path]) -> str:
    if not files:
        return "no WARC file"
    out = subprocess.run([str(WARCIO), "check", *map(str, files)], capture_output=True, text=True)
    return "pass" if out.returncode == 0 else f"FAIL: {(out.stdout + out.stderr)[-500:]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    if not WARCPROX.exists():
        raise SystemExit(f"{WARCPROX} not found: run `make warcprox` (or set CAVEAT_WARCPROX)")
    site = Site()
    best_ours = best_peer = float("inf")
    checks = {}
    ratios: list[float] = []
    try:
        for r in range(args.rounds):
            urls = [site.url(f"/board?r={r}&n={i}") for i in range(args.pages)]
            tmp = Path(tempfile.mkdtemp(prefix="caveat-bench-browser-"))
            try:
                if r % 2 == 0:  # alternate who goes first, so a busy machine does not favour one side
                    t_ours, f_ours = ours(site, urls, tmp)
                    t_peer, f_peer = peer(urls, tmp)
                else:
                    t_peer, f_peer = peer(urls, tmp)
                    t_ours, f_ours = ours(site, urls, tmp)
                checks = {"caveat": warcio_check(f_ours), "warcprox": warcio_check(f_peer)}
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            best_ours, best_peer = min(best_ours, t_ours), min(best_peer, t_peer)
            ratios.append(t_peer / t_ours)
            print(f"round {r + 1}: caveat {t_ours / args.pages:.3f} s/page, warcprox+chromium "
                  f"{t_peer / args.pages:.3f} s/page", flush=True)
    finally:
        site.stop()
    print(f"caveat --browser:   {best_ours / args.pages:.3f} s per page (best of {args.rounds} rounds of {args.pages})")
    print(f"chromium+warcprox:  {best_peer / args.pages:.3f} s per page")
    ratios.sort()
    print(f"per-round ratios (warcprox / caveat): {', '.join(f'{x:.2f}' for x in ratios)}; "
          f"median {ratios[len(ratios) // 2]:.2f}x")
    print(f"ratio of the best rounds (warcprox / caveat): {best_peer / best_ours:.2f}x ({'goal met' if best_ours <= best_peer else 'goal NOT met'}:"
          " caveat at least as fast per page)")
    print(f"warcio check: caveat {checks.get('caveat')}, warcprox {checks.get('warcprox')}")


if __name__ == "__main__":
    main()
