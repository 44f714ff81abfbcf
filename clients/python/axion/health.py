"""The standard gRPC health check (grpc.health.v1.Health/Check) without extra packages.

grpcio-health-checking is not a dependency, so the two tiny messages are encoded by hand:
  HealthCheckRequest  { string service = 1; }
  HealthCheckResponse { ServingStatus status = 1; }  // 0 UNKNOWN, 1 SERVING, 2 NOT_SERVING,
                                                      // 3 SERVICE_UNKNOWN
"""

CHECK_METHOD = "/grpc.health.v1.Health/Check"
STATUS_NAMES = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data, pos):
    result, shift = 0, 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint in health response")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def encode_request(service=""):
    """Serialized HealthCheckRequest; the empty service means the whole server."""
    name = service.encode("utf-8")
    if not name:
        return b""
    return b"\x0a" + _varint(len(name)) + name


def decode_response(data):
    """ServingStatus name ('SERVING', ...) from a serialized HealthCheckResponse."""
    status, pos = 0, 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        field, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _read_varint(data, pos)
            if field == 1:
                status = value
        elif wire_type == 2:
            length, pos = _read_varint(data, pos)
            pos += length
        elif wire_type == 1:
            pos += 8
        elif wire_type == 5:
            pos += 4
        else:
            raise ValueError(f"unexpected wire type {wire_type} in health response")
    return STATUS_NAMES.get(status, f"UNKNOWN({status})")


def check_callable(channel):
    """A unary callable for Health/Check that takes and returns raw bytes."""
    return channel.unary_unary(CHECK_METHOD, request_serializer=None, response_deserializer=None)
