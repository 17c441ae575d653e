"""The composer registry names each composer by its module and imports it on first use."""

from __future__ import annotations

import subprocess
import sys

from modelplane.compose.registry import COMPOSERS, SPEC_CHECKS, composer_for


def _modules_after(code: str) -> set[str]:
    """The modelplane.compose modules a fresh interpreter has imported after `code`."""
    probe = (
        f"{code}\nimport sys\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith('modelplane.compose.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    return set(out.split())


def test_importing_the_registry_imports_no_composer() -> None:
    loaded = _modules_after("import modelplane.compose.registry")
    wings = {m.split(".")[2] for m in loaded}
    assert wings <= {"types", "registry"}, sorted(loaded)


def test_a_composer_is_imported_when_first_asked_for() -> None:
    loaded = _modules_after(
        "from modelplane.api.kinds import MODEL_CACHE\n"
        "from modelplane.compose.registry import composer_for\n"
        "composer_for(MODEL_CACHE.api_version, MODEL_CACHE.kind)"
    )
    assert "modelplane.compose.caches.model_cache" in loaded
    assert "modelplane.compose.routing.model_service" not in loaded


def test_every_kind_resolves_to_its_modules_compose_function() -> None:
    for (api_version, kind), (_, (module, attribute)) in COMPOSERS.items():
        composer = composer_for(api_version, kind)
        assert callable(composer), kind
        found = sys.modules[module]
        for name in attribute.split("."):
            found = getattr(found, name)
        assert composer is found
    for kind, (module, attribute) in SPEC_CHECKS.items():
        __import__(module)
        assert callable(getattr(sys.modules[module], attribute)), kind


def test_an_unknown_kind_has_no_composer() -> None:
    assert composer_for("modelplane.ai/v1alpha1", "NoSuchKind") is None
