"""The reference tables behind the roofline: accelerators, quantization formats, models.

Each table is a CSV file in `data/` (next to this module) and every row names the page its
figures come from (`source`, an http(s) URL). A row without one is refused: `load_reference`
raises ValueError naming the file and the row. `data/VERSION` holds the tables' version; bump
it whenever a figure changes, so that a stored bound can say which figures it used.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"

ACCELERATOR_COLUMNS = ("key", "name", "aliases", "vendor", "kind", "memory_gb", "bandwidth_gbs", "source", "note")
QUANT_COLUMNS = ("key", "aliases", "bits_per_weight", "source", "note")
MODEL_COLUMNS = ("key", "aliases", "total_params_b", "active_params_b", "source", "note", "embedding_params_b",
                 "fixed_bits_active_b", "fixed_bits")

#: gpu: a discrete card or module; accelerator: a non-GPU AI chip; unified: CPU and GPU share
#: one memory (Apple, Strix Halo, Jetson, GB10); cpu: a CPU memory configuration.
KINDS = ("gpu", "accelerator", "unified", "cpu")

_URL = re.compile(r"^https?://[^\s/]+\.[^\s]+$")


@dataclass(frozen=True)
class Accelerator:
    key: str
    name: str
    aliases: tuple[str, ...]
    vendor: str
    kind: str
    memory_gb: float | None
    bandwidth_gbs: float
    source: str
    note: str

    @property
    def variant_unspecified(self) -> bool:
        """True for the rows that stand in for a product whose variant the text did not state."""
        return self.key.endswith("-unspecified")


@dataclass(frozen=True)
class QuantFormat:
    key: str
    aliases: tuple[str, ...]
    bits_per_weight: float
    source: str
    note: str


@dataclass(frozen=True)
class ModelRow:
    key: str
    aliases: tuple[str, ...]
    total_params_b: float
    active_params_b: float
    source: str
    note: str
    #: the input embedding table inside the counts above, which a token does not stream (it reads one
    #: row); 0 when untied-ness or size is not known, or the table is tied to the output head (read)
    embedding_params_b: float = 0.0
    #: active parameters the release fixes at a width whatever a file's format says (gpt-oss's MoE
    #: experts ship as MXFP4 and every GGUF of it keeps them so), and that width in bits
    fixed_bits_active_b: float = 0.0
    fixed_bits: float | None = None


@dataclass(frozen=True)
class Reference:
    version: str
    accelerators: tuple[Accelerator, ...]
    quant_formats: tuple[QuantFormat, ...]
    models: tuple[ModelRow, ...]
    data_dir: str

    def accelerator(self, key: str) -> Accelerator | None:
        return next((row for row in self.accelerators if row.key == key), None)

    def quant_format(self, key: str) -> QuantFormat | None:
        return next((row for row in self.quant_formats if row.key == key), None)

    def model(self, key: str) -> ModelRow | None:
        return next((row for row in self.models if row.key == key), None)


def _read(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """The rows of one CSV with their line numbers; the header must be exactly `columns`."""
    if not path.is_file():
        raise ValueError(f"{path.name}: file missing from {path.parent}")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != columns:
            raise ValueError(f"{path.name}: header must be {','.join(columns)}, got {reader.fieldnames}")
        rows = []
        for row in reader:
            if None in row or any(value is None for value in row.values()):
                raise ValueError(f"{path.name}: row at line {reader.line_num} has the wrong number of columns")
            rows.append((reader.line_num, {k: (v or "").strip() for k, v in row.items()}))
    return rows


def _where(path: Path, line: int, row: dict[str, str]) -> str:
    return f"{path.name}: row at line {line} ({row.get('key') or 'no key'})"


def _number(path: Path, line: int, row: dict[str, str], column: str, *, optional: bool = False) -> float | None:
    text = row[column]
    if not text and optional:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{_where(path, line, row)}: {column} {text!r} is not a number") from None
    if value <= 0:
        raise ValueError(f"{_where(path, line, row)}: {column} must be positive, got {text}")
    return value


def _checked(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """Rows with the checks every table shares: a key, unique keys, an http(s) source, aliases."""
    rows = _read(path, columns)
    seen: set[str] = set()
    for line, row in rows:
        if not row["key"]:
            raise ValueError(f"{_where(path, line, row)}: no key")
        if row["key"] in seen:
            raise ValueError(f"{_where(path, line, row)}: duplicate key")
        seen.add(row["key"])
        if not row["source"]:
            raise ValueError(f"{_where(path, line, row)}: no source URL")
        if not _URL.match(row["source"]):
            raise ValueError(f"{_where(path, line, row)}: source {row['source']!r} is not an http(s) URL")
        if not _aliases(row["aliases"]):
            raise ValueError(f"{_where(path, line, row)}: no aliases")
    return rows


def _aliases(text: str) -> tuple[str, ...]:
    return tuple(alias.strip() for alias in text.split("|") if alias.strip())


def _accelerators(path: Path) -> tuple[Accelerator, ...]:
    out = []
    for line, row in _checked(path, ACCELERATOR_COLUMNS):
        if row["kind"] not in KINDS:
            raise ValueError(f"{_where(path, line, row)}: kind {row['kind']!r} is not one of {', '.join(KINDS)}")
        memory = _number(path, line, row, "memory_gb", optional=row["kind"] == "cpu")
        out.append(Accelerator(
            key=row["key"], name=row["name"] or row["key"], aliases=_aliases(row["aliases"]),
            vendor=row["vendor"], kind=row["kind"], memory_gb=memory,
            bandwidth_gbs=_number(path, line, row, "bandwidth_gbs"), source=row["source"], note=row["note"],
        ))
    return tuple(out)


def _quant_formats(path: Path) -> tuple[QuantFormat, ...]:
    return tuple(
        QuantFormat(key=row["key"], aliases=_aliases(row["aliases"]),
                    bits_per_weight=_number(path, line, row, "bits_per_weight"),
                    source=row["source"], note=row["note"])
        for line, row in _checked(path, QUANT_COLUMNS)
    )


def _models(path: Path) -> tuple[ModelRow, ...]:
    out = []
    for line, row in _checked(path, MODEL_COLUMNS):
        total = _number(path, line, row, "total_params_b")
        active = _number(path, line, row, "active_params_b")
        if active > total:
            raise ValueError(f"{_where(path, line, row)}: active_params_b exceeds total_params_b")
        embedding = _number(path, line, row, "embedding_params_b", optional=True) or 0.0
        fixed_b = _number(path, line, row, "fixed_bits_active_b", optional=True) or 0.0
        fixed_bits = _number(path, line, row, "fixed_bits", optional=True)
        if embedding + fixed_b > active:
            raise ValueError(f"{_where(path, line, row)}: embedding_params_b and fixed_bits_active_b exceed "
                             "active_params_b")
        if bool(fixed_b) != (fixed_bits is not None):
            raise ValueError(f"{_where(path, line, row)}: fixed_bits_active_b and fixed_bits go together")
        out.append(ModelRow(key=row["key"], aliases=_aliases(row["aliases"]), total_params_b=total,
                            active_params_b=active, source=row["source"], note=row["note"],
                            embedding_params_b=embedding, fixed_bits_active_b=fixed_b, fixed_bits=fixed_bits))
    return tuple(out)


def _version(path: Path) -> str:
    if not path.is_file():
        raise ValueError(f"{path.name}: file missing from {path.parent}")
    version = path.read_text(encoding="utf-8").strip()
    if not re.fullmatch(r"\d{4}\.\d{1,2}\.\d+", version):
        raise ValueError(f"{path.name}: {version!r} is not a YYYY.MM.N version")
    return version


@lru_cache(maxsize=8)
def _load(directory: str) -> Reference:
    base = Path(directory)
    return Reference(
        version=_version(base / "VERSION"),
        accelerators=_accelerators(base / "accelerators.csv"),
        quant_formats=_quant_formats(base / "quant_formats.csv"),
        models=_models(base / "models.csv"),
        data_dir=str(base),
    )


def load_reference(data_dir: str | Path | None = None) -> Reference:
    """The three tables and their version, read once per directory and cached.

    `data_dir` defaults to the `data/` folder shipped with this package; tests pass another.
    Raises ValueError for a malformed file, naming the file and the row.
    """
    return _load(str(Path(data_dir).resolve() if data_dir is not None else DATA_DIR))


load_reference.cache_clear = _load.cache_clear  # type: ignore[attr-defined]
