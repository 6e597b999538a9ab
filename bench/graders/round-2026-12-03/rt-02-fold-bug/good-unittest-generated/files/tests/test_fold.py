"""Tests for impl.fold.fold_ws, unittest style with generated methods."""

import unicodedata
import unittest

from impl.fold import fold_ws


class FoldWs(unittest.TestCase):
    def test_examples(self):
        self.assertEqual(fold_ws("  a \t b\n"), "a b")
        self.assertEqual(fold_ws(""), "")

    def test_rejects_non_str(self):
        for bad in (b"a b", None, 1.5, ("a",)):
            with self.assertRaises(TypeError):
                fold_ws(bad)

    def test_inner_runs_become_one_ascii_space(self):
        self.assertEqual(fold_ws("a\r\n\r\nb\t\tc"), "a b c")

    def test_non_whitespace_unchanged(self):
        s = "Ünïcödé\u200b\u2060-ok"
        self.assertEqual(fold_ws(s), s)


def _make(ch):
    def test(self):
        self.assertTrue(ch.isspace())
        self.assertEqual(fold_ws("L" + ch + ch + "R"), "L R")
        self.assertEqual(fold_ws(ch + "mid" + ch), "mid")
    return test


# One generated method per whitespace code point (incl. the Unicode spaces).
for _cp in range(0x110000):
    _ch = chr(_cp)
    if _ch.isspace():
        _name = unicodedata.name(_ch, "U%04X" % _cp).lower().replace(" ", "_").replace("-", "_")
        setattr(FoldWs, "test_ws_%04x_%s" % (_cp, _name), _make(_ch))
del _cp, _ch
