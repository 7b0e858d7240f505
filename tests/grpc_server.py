"""A gRPC server for tests/grpc.rs, on Python's grpcio (a gRPC implementation no one here wrote).

helloworld.Greeter/SayHello answers "Hello NAME" (and counts the calls that carried the metadata x-hakaru: 1, and
a deadline of 5 s at most); helloworld.Greeter/Fail answers the status its request's name names (UNAVAILABLE, NOT_FOUND ...). Messages are read and written as raw bytes through generic handlers, so no
protoc is needed: the server decodes only field 1 (a string). It listens on 127.0.0.1 on a port the kernel picks
and prints "port N"; each line "count" on stdin is answered with "count " and the calls seen by method, as JSON.
"""

import json
import sys
import threading
from concurrent import futures

import grpc

counts = {}
lock = threading.Lock()


def counted(method):
    with lock:
        counts[method] = counts.get(method, 0) + 1


def varint(data, at):
    value, shift = 0, 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, at


def name_of(request):
    """Field 1 (a string) of the request message, skipping the other fields."""
    at = 0
    while at < len(request):
        key, at = varint(request, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, at = varint(request, at)
        elif wire == 2:
            n, at = varint(request, at)
            if field == 1:
                return request[at:at + n].decode()
            at += n
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        else:
            raise ValueError("wire type %d" % wire)
    return ""


def reply(text):
    data = text.encode()
    out = bytearray([0x0A])
    n = len(data)
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + data


def say_hello(request, context):
    counted("SayHello")
    # What the test asks of the client besides the message: its metadata, and a deadline (grpc-timeout).
    if ("x-hakaru", "1") in [(m.key, m.value) for m in context.invocation_metadata()]:
        counted("SayHello with metadata")
    # (Without one grpcio gives no time or a time far away: hakaru's --timeout is 5 s.)
    left = context.time_remaining()
    if left is not None and left <= 5.0:
        counted("SayHello with a deadline")
    return reply("Hello " + name_of(request))


def fail(request, context):
    counted("Fail")
    code = getattr(grpc.StatusCode, name_of(request), grpc.StatusCode.UNKNOWN)
    context.abort(code, "chosen by the test")


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    handlers = {
        "SayHello": grpc.unary_unary_rpc_method_handler(say_hello),
        "Fail": grpc.unary_unary_rpc_method_handler(fail),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("helloworld.Greeter", handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print("port %d" % port, flush=True)
    for line in sys.stdin:
        if line.strip() == "count":
            with lock:
                print("count " + json.dumps(counts), flush=True)
    # stdin closed: the test is done.
    server.stop(0)


if __name__ == "__main__":
    main()
