"""unittest-style tests for fold_ws, collected by pytest."""

import unicodedata
import unittest

from impl.fold import fold_ws

# Unicode White_Space characters by category (identical to str.isspace()).
SPACE_SEPARATORS = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Zs"]
OTHER_WHITESPACE = list("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\u2028\u2029")


class FoldWsTest(unittest.TestCase):
    def test_examples(self):
        self.assertEqual(fold_ws("  a \t b\n"), "a b")
        self.assertEqual(fold_ws(""), "")

    def test_table_is_whitespace(self):
        for ch in SPACE_SEPARATORS + OTHER_WHITESPACE:
            with self.subTest(ch=hex(ord(ch))):
                self.assertTrue(ch.isspace())

    def test_space_separators(self):
        for ch in SPACE_SEPARATORS:
            with self.subTest(ch=unicodedata.name(ch)):
                self.assertEqual(fold_ws(ch + "a" + ch + ch + "b" + ch), "a b")

    def test_other_whitespace(self):
        for ch in OTHER_WHITESPACE:
            with self.subTest(ch=hex(ord(ch))):
                self.assertEqual(fold_ws("a" + ch + "b"), "a b")

    def test_output_is_str(self):
        self.assertIsInstance(fold_ws(" x "), str)

    def test_type_error(self):
        for bad in (None, 0, b"", bytearray()):
            with self.subTest(bad=bad):
                with self.assertRaises(TypeError):
                    fold_ws(bad)


if __name__ == "__main__":
    unittest.main()
