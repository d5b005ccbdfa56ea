"""The memory-bandwidth ceiling of plain batch-1 decode.

Every generated token streams the active weights from memory once, so

    bound_tps = usable bandwidth of the devices holding the weights / bytes of active weights

with bytes = active parameters x bits per weight / 8, the bandwidth the vendor's peak (no
efficiency factor: this is an upper bound), multiplied by the device count (tensor parallel).
With a CPU/GPU split the two parts are read one after the other:

    seconds per token = gpu bytes / gpu bandwidth + cpu bytes / cpu bandwidth
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from .data import Accelerator, Reference, load_reference
from .hardware import count_from_text, match_accelerator
from .params import resolve_params
from .quant import resolve_quant

ALWAYS = (
    "plain decode at batch 1 without speculation: every token reads all active weights once",
    "KV-cache and activation reads are ignored, so the real ceiling is lower, the more so at long context",
    "vendor peak memory bandwidth with no efficiency factor",
)


@dataclass
class Roofline:
    bound_tps: float | None
    inputs: dict[str, Any] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    version: str = ""

    def ratio(self, figure: float | None) -> float | None:
        """A claimed tok/s over the bound: above 1 the claim beats what memory can deliver."""
        if figure is None or not self.bound_tps:
            return None
        return float(figure) / self.bound_tps

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @cached_property
    def evidence(self) -> dict[str, Any]:
        """The parts of a finding's evidence that depend on the setup only (inputs with the bytes per token
        rounded, assumptions, version), built once per cached bound and shared by every finding of that
        setup: read-only."""
        inputs = dict(self.inputs)
        if "bytes_per_token_gb" in inputs:
            inputs["bytes_per_token_gb"] = round(inputs["bytes_per_token_gb"], 3)
        return {"inputs": inputs, "assumptions": list(self.assumptions), "reference_version": self.version}

    def inputs_copy(self) -> dict[str, Any]:
        """The inputs as a new dict (two levels: each input is a flat dict or a number), for an answer that
        may be changed; ``to_dict`` deep-copies the whole object, which costs 1 ms a call on a long page."""
        return {k: dict(v) if isinstance(v, dict) else v for k, v in self.inputs.items()}


# Name lookups against the shipped tables, cached per name (a long page repeats a few names in many
# combinations): only when no other ``ref`` is given.
@lru_cache(maxsize=2048)
def _default_accelerator(text: str | None) -> Accelerator | None:
    return match_accelerator(text, ref=load_reference())


@lru_cache(maxsize=2048)
def _default_params(model: str | None):
    return resolve_params(model, ref=load_reference())


@lru_cache(maxsize=2048)
def _default_quant(text: str | None):
    return resolve_quant(text, ref=load_reference())


def _device(row: Accelerator) -> dict[str, Any]:
    return {"key": row.key, "name": row.name, "kind": row.kind, "bandwidth_gbs": row.bandwidth_gbs,
            "memory_gb": row.memory_gb, "source": row.source}


def _count(hardware: str | None, gpu_count: int | None, assumptions: list[str]) -> int:
    if gpu_count is not None:
        if int(gpu_count) < 1:
            raise ValueError(f"gpu_count must be at least 1, got {gpu_count}")
        return int(gpu_count)
    stated = count_from_text(hardware)
    if stated:
        assumptions.append(f"device count {stated} read from the hardware text")
        return stated
    assumptions.append("device count not stated: taken as 1")
    return 1


def _offload_split(offload: dict[str, Any], missing: list[str], assumptions: list[str]) -> float | None:
    """The share of the active weights read from CPU memory, from -ngl layers or a stated fraction."""
    if offload.get("cpu_fraction") is not None:
        fraction = float(offload["cpu_fraction"])
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"cpu_fraction must be between 0 and 1, got {fraction}")
        assumptions.append(f"{fraction:.0%} of the active weights are read from CPU memory, as stated")
        return fraction
    gpu_layers, total_layers = offload.get("gpu_layers"), offload.get("total_layers")
    if gpu_layers is None:
        missing.append("offload split (gpu_layers or cpu_fraction)")
        return None
    if total_layers is None:
        missing.append("layer count (total_layers)")
        return None
    gpu_layers, total_layers = int(gpu_layers), int(total_layers)
    if total_layers < 1 or gpu_layers < 0:
        raise ValueError(f"layer counts must be positive, got {gpu_layers} of {total_layers}")
    on_gpu = min(gpu_layers, total_layers)
    assumptions.append(f"{on_gpu} of {total_layers} layers in GPU memory (-ngl), the rest read from CPU "
                       "memory; layers are taken to be the same size")
    return (total_layers - on_gpu) / total_layers


def _cpu_bandwidth(offload: dict[str, Any], ref: Reference, inputs: dict[str, Any],
                   missing: list[str]) -> float | None:
    if offload.get("cpu_bandwidth_gbs") is not None:
        inputs["cpu_memory"] = {"bandwidth_gbs": float(offload["cpu_bandwidth_gbs"]), "source": "stated"}
        return float(offload["cpu_bandwidth_gbs"])
    row = match_accelerator(offload.get("cpu"), kinds=("cpu",), ref=ref)
    if row is None:
        missing.append("CPU memory bandwidth")
        return None
    inputs["cpu_memory"] = _device(row)
    return row.bandwidth_gbs


def compute_bound(*, hardware: str | None, gpu_count: int | None, model: str | None,
                  quantization: str | None, cpu_offload: dict | None = None,
                  ref: Reference | None = None) -> Roofline:
    """The decode ceiling in tokens/s for a stated setup, with its inputs and assumptions.

    `cpu_offload` describes a llama.cpp-style split: {"gpu_layers": N (-ngl), "total_layers": M}
    or {"cpu_fraction": f}, plus {"cpu": "dual-channel DDR5-6000"} or {"cpu_bandwidth_gbs": 96}.
    Unknown inputs are listed in `missing` and leave `bound_tps` None; nothing is guessed (a
    model name that names no quantization does not mean BF16).
    """
    default = ref is None
    ref = ref or load_reference()
    find_device = _default_accelerator if default else (lambda t: match_accelerator(t, ref=ref))
    find_params = _default_params if default else (lambda t: resolve_params(t, ref=ref))
    find_quant = _default_quant if default else (lambda t: resolve_quant(t, ref=ref))
    inputs: dict[str, Any] = {}
    assumptions: list[str] = list(ALWAYS)
    missing: list[str] = []

    device = find_device(hardware)
    if device is None:
        missing.append("hardware")
        if hardware:
            assumptions.append(f"hardware {hardware!r} matches no row of accelerators.csv")
    else:
        inputs["accelerator"] = _device(device)
        if device.variant_unspecified:
            assumptions.append(f"{device.name}: {device.note}")
    count = _count(hardware, gpu_count, assumptions)
    inputs["gpu_count"] = count
    if count > 1:
        assumptions.append(f"tensor parallel over {count} devices: bandwidth x {count}; a layer "
                           f"(pipeline) split would read them one after another, for a bound {count} times lower")

    params = find_params(model)
    if params is not None and not params.active_b > 0:
        params = None     # "0B" in a name is no size
    if params is None:
        missing.append("model parameters")
    else:
        inputs["params"] = {"total_b": params.total_b, "active_b": params.active_b,
                            "embedding_b": params.embedding_b, "read_b": params.active_b - params.embedding_b,
                            "source": params.source, "row_key": params.row_key,
                            "approximate": params.approximate}
        assumptions.extend(params.notes)
        if params.embedding_b:
            assumptions.append(f"the input embedding table ({params.embedding_b:g}B parameters, models.csv) is "
                               "not streamed per token (a token reads one row of it); the output head is")
        elif params.active_b < 3:
            assumptions.append("every active parameter counts as read, the input embedding table included "
                               "(a token reads one row of it): for a small model this makes the bound low")

    quant = find_quant(quantization)
    if quant is None and quantization:
        assumptions.append(f"quantization {quantization!r} not recognised")
    if quant is None and model:
        quant = find_quant(model)
        if quant is not None:
            assumptions.append(f"quantization {quant.matched!r} read from the model name")
    if quant is None:
        missing.append("quantization")
    else:
        inputs["bits_per_weight"] = {"value": quant.bits_per_weight, "key": quant.key,
                                     "source": quant.source, "note": quant.note}

    cpu_fraction, cpu_bw = 0.0, None
    if cpu_offload:
        inputs["cpu_offload"] = dict(cpu_offload)
        split = _offload_split(cpu_offload, missing, assumptions)
        if split:
            cpu_fraction = split
            cpu_bw = _cpu_bandwidth(cpu_offload, ref, inputs, missing)

    version = ref.version
    if missing:
        return Roofline(None, inputs, assumptions, missing, version)

    gpu_bw = device.bandwidth_gbs * count
    bytes_per_token = _bytes_per_token(params, quant.bits_per_weight, assumptions)
    seconds = bytes_per_token * (1 - cpu_fraction) / (gpu_bw * 1e9)
    if cpu_fraction:
        seconds += bytes_per_token * cpu_fraction / (cpu_bw * 1e9)
    inputs["bandwidth_gbs"] = gpu_bw
    inputs["bytes_per_token_gb"] = bytes_per_token / 1e9
    _capacity_check(device, count, params.total_b, quant.bits_per_weight, cpu_fraction, assumptions)
    return Roofline(1.0 / seconds, inputs, assumptions, missing, version)


def _bytes_per_token(params, bits: float, assumptions: list[str]) -> float:
    """Bytes streamed per token: the active parameters but the input embedding, at the format's width, save
    those the release fixes at a narrower one (gpt-oss's MXFP4 experts in any GGUF)."""
    read_b = params.active_b - params.embedding_b
    fixed_b = params.fixed_bits_active_b if params.fixed_bits is not None and params.fixed_bits < bits else 0.0
    if fixed_b:
        assumptions.append(f"{fixed_b:g}B of the active parameters are stored at {params.fixed_bits:g} bits whatever "
                           f"the format's name says (models.csv), the rest at {bits:g}")
    return ((read_b - fixed_b) * bits + fixed_b * params.fixed_bits if fixed_b else read_b * bits) * 1e9 / 8


def _capacity_check(device: Accelerator, count: int, total_b: float | None, bits: float,
                    cpu_fraction: float, assumptions: list[str]) -> None:
    """Say so when the weights cannot all sit in the memory whose bandwidth the bound uses."""
    if total_b is None or device.memory_gb is None:
        return
    weights_gb = total_b * bits / 8 * (1 - cpu_fraction)
    capacity = device.memory_gb * count
    if weights_gb > capacity:
        assumptions.append(
            f"the weights held on the devices ({weights_gb:.1f} GB) exceed their memory ({capacity:g} GB): "
            "part must be read from somewhere slower, so this bound is optimistic")
