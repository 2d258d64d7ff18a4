"""The exceptions torchbridge raises.

One base class, so a caller can catch everything this package refuses with one `except`, and one
class per stage (making a model file, starting the host), because the two fail for different
reasons and are fixed in different places: an `ExportError` in the Python model, a `ServeError`
in what the host was asked to serve or where.
"""

_MAX_CAUSE_CHARS = 2000  # torch.export's messages carry whole guides; the cause keeps all of it


class TorchbridgeError(RuntimeError):
    """Something torchbridge could not do (no binary, a model the host cannot describe, ...)."""


class ExportError(TorchbridgeError):
    """A module could not be written as a TorchScript module or an AOTInductor package.

    `model` is the model's name (from `serve`) or the target path (from `export`); `cause` the
    exception torch raised, also chained as `__cause__`.
    """

    def __init__(self, model, cause):
        self.model = model
        self.cause = cause
        text = f"{type(cause).__name__}: {cause}" if isinstance(cause, BaseException) else str(cause)
        if len(text) > _MAX_CAUSE_CHARS:
            text = text[:_MAX_CAUSE_CHARS] + " ... (the whole message is this error's .cause)"
        super().__init__(f"cannot export model {model!r}: {text}")


class ServeError(TorchbridgeError):
    """`torchbridge serve` stopped (or never answered) before it printed its address.

    `returncode` is the host's exit code (None when it was still running at the start-up
    timeout and was stopped); `output` the last lines it wrote. The host writes its log, and so
    its reason for exiting, to stdout: `output` holds both streams.
    """

    def __init__(self, message, returncode=None, output=""):
        self.returncode = returncode
        self.output = output
        super().__init__(message)
