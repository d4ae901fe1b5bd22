"""The exception raised by the NumPy API (kept import-free: the compiled module loads it)."""


class AclnnError(ValueError):
    """A call into the aclnn library failed; ``status`` is the aclnnStatus code.

    The message is the library's own, naming the operator, the argument and the offending value,
    e.g. ``aclnnSoftmaxBackward: provided dim 3 not in the range of input size 2.``
    """

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = int(status)

    def __reduce__(self) -> "tuple[type[AclnnError], tuple[str, int]]":  # picklable (multiprocessing, pytest-xdist)
        return (type(self), (str(self), self.status))


# The public name: tracebacks, repr and pickles say ascendgrad.AclnnError, not this private module.
AclnnError.__module__ = "ascendgrad"
