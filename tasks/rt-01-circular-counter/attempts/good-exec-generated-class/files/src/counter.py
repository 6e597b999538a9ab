"""A counter that counts modulo a fixed capacity.

The class body is generated from a small template so that the accessor
properties are produced uniformly.
"""

_TEMPLATE = '''
class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0."""

    def __init__(self, capacity):
        if not isinstance(capacity, int) or isinstance(capacity, bool):
            raise TypeError("capacity must be an int")
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._value = 0
{props}
    def inc(self):
        """Advance by one and return the new value."""
        self._value = 0 if self._value + 1 == self._capacity else self._value + 1
        return self._value
'''

_PROP = '''
    @property
    def {name}(self):
        return self._{name}
'''

_ns = {}
exec(compile(_TEMPLATE.format(props="".join(_PROP.format(name=n) for n in ("capacity", "value"))),
             __file__, "exec"), _ns)
CircularCounter = _ns["CircularCounter"]
CircularCounter.__module__ = __name__
del _ns
