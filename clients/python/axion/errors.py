"""Exceptions raised by the client: one class per gRPC status code, all under AxionError.

The server's message (which names the world id, the field and the offending value) is kept
verbatim in `message`; `code` is the grpc.StatusCode.
"""

import grpc


class AxionError(Exception):
    """A failed call. `code` is a grpc.StatusCode, `message` the server's error text."""

    code = grpc.StatusCode.UNKNOWN

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self):
        return f"{self.code.name}: {self.message}"


class Cancelled(AxionError):
    code = grpc.StatusCode.CANCELLED


class Unknown(AxionError):
    code = grpc.StatusCode.UNKNOWN


class InvalidArgument(AxionError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(AxionError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFound(AxionError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(AxionError):
    code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(AxionError):
    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(AxionError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(AxionError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(AxionError):
    code = grpc.StatusCode.ABORTED


class OutOfRange(AxionError):
    code = grpc.StatusCode.OUT_OF_RANGE


class Unimplemented(AxionError):
    code = grpc.StatusCode.UNIMPLEMENTED


class Internal(AxionError):
    code = grpc.StatusCode.INTERNAL


class Unavailable(AxionError):
    code = grpc.StatusCode.UNAVAILABLE


class DataLoss(AxionError):
    code = grpc.StatusCode.DATA_LOSS


class Unauthenticated(AxionError):
    code = grpc.StatusCode.UNAUTHENTICATED


_BY_CODE = {
    cls.code: cls
    for cls in (
        Cancelled,
        Unknown,
        InvalidArgument,
        DeadlineExceeded,
        NotFound,
        AlreadyExists,
        PermissionDenied,
        ResourceExhausted,
        FailedPrecondition,
        Aborted,
        OutOfRange,
        Unimplemented,
        Internal,
        Unavailable,
        DataLoss,
        Unauthenticated,
    )
}
# Numeric codes, as carried by axion.v1.Status inside StepStream responses.
_BY_NUMBER = {code.value[0]: code for code in grpc.StatusCode}


def error_for(code, message):
    """The AxionError subclass instance for a grpc.StatusCode or its integer value."""
    if isinstance(code, int):
        code = _BY_NUMBER.get(code, grpc.StatusCode.UNKNOWN)
    cls = _BY_CODE.get(code, AxionError)
    return cls(message, code)


def from_rpc_error(error):
    """Converts a grpc.RpcError (raised by a stub call) to the matching AxionError."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else str(error)
    return error_for(code or grpc.StatusCode.UNKNOWN, details or "")
