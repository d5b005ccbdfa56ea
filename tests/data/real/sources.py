"""Print SOURCES.md: the origin of every page of the real corpus, from its label's ``origin``."""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    print("# Sources of the real corpus\n")
    print("Every page in `pages/` is a real public page nobody on this project wrote, stored byte for byte as the")
    print("search tool returned it. Its origin is also in its label (`labels/<page>.json`, key `origin`); this")
    print("table is generated from those labels (`python3 tests/data/real/sources.py > tests/data/real/SOURCES.md`).\n")
    print("| page | format | kind of source | repository | URL | commit | retrieved |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for f in sorted((HERE / "labels").glob("*.json")):
        d = json.loads(f.read_text())
        o = d.get("origin") or {}
        cells = [d["page"], d.get("format", ""), o.get("source", ""), o.get("repo") or "", o.get("url") or "",
                 o.get("commit") or "", o.get("retrieved") or ""]
        print("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")


if __name__ == "__main__":
    main()
