"""Smoke tests: every codec round-trips a plain record. Do not edit."""

import pytest

from wire import r1_bin, r1_text, r2_bin, r2_text

RECORD = {"id": "42", "name": "widget", "note": "two\nlines"}


@pytest.mark.parametrize("codec", [r1_text, r1_bin, r2_text, r2_bin], ids=lambda m: m.__name__)
def test_round_trip(codec):
    frame = codec.encode(RECORD)
    assert isinstance(frame, bytes)
    assert codec.decode(frame) == RECORD


@pytest.mark.parametrize("codec", [r1_text, r1_bin, r2_text, r2_bin], ids=lambda m: m.__name__)
def test_garbage_is_rejected(codec):
    with pytest.raises(ValueError):
        codec.decode(b"\xff\xfe garbage")
