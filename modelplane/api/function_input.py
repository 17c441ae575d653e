"""The Function's input: what every Composition's step tells the function.

`modelplane package build --function-package REF` writes one value into each
Composition's pipeline step, `input.image`: the image the Function package runs
(`REF:v<version>`). Crossplane passes it in every RunFunctionRequest, so the
pure composers name that same image for the programs they place on workload
clusters (the ModelCache hydration Job and the inventory agent): what users
publish is what runs everywhere. A cluster may override it
(`spec.servingStack.modelplaneImage`, e.g. a mirror its nodes can pull from).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from modelplane import __version__
from modelplane.api import constants as c

INPUT_API_VERSION: Final = "fn.modelplane.ai/v1alpha1"
INPUT_KIND: Final = "Input"
_IMAGE = re.compile(c.IMAGE_PATTERN)


def image_for(function_package: str) -> str:
    """The image the Function package at repository `function_package` runs in this release."""
    return f"{function_package}:v{__version__}"


def function_input(function_package: str) -> dict[str, Any]:
    """The Composition step's `input` naming the image of `function_package`."""
    return {
        "apiVersion": INPUT_API_VERSION,
        "kind": INPUT_KIND,
        "image": image_for(function_package),
    }


def read_image(raw: Mapping[str, Any] | None) -> str:
    """The image an input names; this release's default image when absent or malformed.

    A malformed input never stops a reconcile: the default is what the
    package this function was built into names too.
    """
    image = (raw or {}).get("image")
    if isinstance(image, str) and _IMAGE.match(image):
        return image
    return c.FUNCTION_IMAGE
