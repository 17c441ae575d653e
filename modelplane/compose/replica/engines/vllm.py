"""vLLM: recognising it and the flags Modelplane adds.

A vLLM engine that names no model and has a cache mounted gets
`--model=<cache mount>`; every other argument is the user's, untouched.
"""

from __future__ import annotations

from typing import Any

from modelplane.api import constants as c

# The vLLM OpenAI server image's ENTRYPOINT; used when a wrapped engine
# container sets no command of its own.
VLLM_ENTRYPOINT = ("python3", "-m", "vllm.entrypoints.openai.api_server")


def is_vllm(container: dict[str, Any]) -> bool:
    """Whether the engine container runs vLLM (by image or command)."""
    image = str(container.get("image", "")).lower()
    command = " ".join(str(x) for x in (container.get("command") or [])).lower()
    return "vllm" in image or "vllm" in command


def names_model(argv: list[str]) -> bool:
    """Whether an engine argv already says which model to serve."""
    for i, arg in enumerate(argv):
        if arg == "--model" or arg.startswith("--model="):
            return True
        if arg == "serve" and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            return True
    return False


def point_at_cache(engine: dict[str, Any], cache: str | None) -> None:
    """Serve the mounted cache when a vLLM engine names no model of its own."""
    command = [str(x) for x in engine.get("command") or []]
    args = [str(x) for x in engine.get("args") or []]
    if cache and is_vllm(engine) and not names_model(command + args):
        engine["args"] = [*args, f"--model={c.CACHE_MOUNT_PATH}"]
