"""The uid the embedded control plane gives a created object is uuid5 of its key's path."""

from __future__ import annotations

import random
import uuid

from modelplane.local.apply import UID_NAMESPACE, uid_of
from modelplane.local.store import Key

ALPHABET = "abcXYZ019-./: _é\u00df\u4e2d\U0001f600"


def test_uid_of_is_uuid5_of_the_keys_path() -> None:
    rng = random.Random(27)
    for _ in range(5000):
        parts = ("".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12))) for _ in "abcd")
        key = Key(*parts)
        assert uid_of(key) == str(uuid.uuid5(UID_NAMESPACE, "/".join(key)))


def test_uid_of_a_known_key() -> None:
    # Computed once with the standard library: uuid5 of the namespace and "v1/ConfigMap/ns/cm".
    key = Key("v1", "ConfigMap", "ns", "cm")
    assert uid_of(key) == str(
        uuid.uuid5(uuid.UUID("8a0e5d8c-4a7e-4bd6-9a3c-6d6f64656c70"), "v1/ConfigMap/ns/cm")
    )
    assert uuid.UUID(uid_of(key)).version == 5
