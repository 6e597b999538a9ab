# Revision 2 binary codec, derived mechanically from its siblings:
#
#   column (binary transport) -> r1_bin's source, executed in this module
#                                with "revision 1" relabelled "revision 2"
#   row (revision 2)          -> the revision byte of the magic is 2, and
#                                field names follow r2_text's rules (NFC,
#                                the reserved "__eof__", duplicates after NFC)
#
# Nothing else is added, so the binary layout stays r1_bin's.

import inspect as _inspect

from . import r1_bin as _r1_bin
from . import r2_text as _r2_text

exec(compile(_inspect.getsource(_r1_bin).replace("revision 1", "revision 2"), __file__, "exec"))

MAGIC = MAGIC[:-1] + b"\x02"          # noqa: F821  (defined by the exec above)
SENTINEL = _r2_text.SENTINEL

_bin_check = _check                  # noqa: F821
_bin_decode = decode                 # noqa: F821


def _revision2_names(pairs):
    out = {}
    for name, value in pairs:
        key = _r2_text._name(name)
        if key in out:
            raise ValueError("duplicate field %r" % key)
        out[key] = value
    return out


def _check(record):  # noqa: F811 - used by the exec'd encode()
    return _revision2_names(_bin_check(record).items())


def decode(frame):  # noqa: F811
    return _revision2_names(_bin_decode(frame).items())
