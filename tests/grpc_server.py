"""A gRPC server for tests/grpc.rs, on Python's grpcio (a gRPC implementation no one here wrote).

helloworld.Greeter/SayHello answers "Hello NAME" (and counts the calls that carried the metadata x-hakaru: 1, and
a deadline of 5 s at most, and the calls of each name and times); helloworld.Greeter/Fail answers the status its request's name names (UNAVAILABLE,
NOT_FOUND ...); Lots (server streaming) answers `times` messages (for the name "slow": headers at once, the first message 50 ms later, then 10 ms apart); Collect (client streaming) answers once all its
messages came (and keeps the shortest time from a call's first message to its last); Chat (bidirectional) answers each message. Messages are read and written as raw bytes through
generic handlers, so no protoc is needed: the server decodes only field 1 (a string) and field 2 (an integer). It
listens on 127.0.0.1 on a port the kernel picks and prints "port N"; each line "count" on stdin is answered with
"count " and the calls (and streamed messages) seen by method, as JSON.

Options: `--nap MS` makes helloworld.Greeter/Nap answer after MS milliseconds; `--compress` compresses answers (gzip); `--tls DIR` listens with TLS (DIR/cert.pem, DIR/key.pem); `--reflect FILE` adds the files of the
FileDescriptorSet FILE to the descriptor pool and turns server reflection on (grpcio-reflection's v1alpha, or
under v1's name with `--reflect-as v1`, under both with `--reflect-as v1,v1alpha`).
"""

import json
import sys
import threading
import time
from concurrent import futures

import grpc

counts = {}
lock = threading.Lock()


def counted(method):
    with lock:
        counts[method] = counts.get(method, 0) + 1


def least(key, value):
    """Keeps the least `value` seen under `key` (a figure the test reads back, not a count)."""
    with lock:
        counts[key] = min(counts.get(key, value), value)


def varint(data, at):
    value, shift = 0, 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, at


def fields(request):
    """Field 1 (a string) and field 2 (an integer) of the request message, skipping the other fields."""
    name, times = "", 0
    at = 0
    while at < len(request):
        key, at = varint(request, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(request, at)
            if field == 2:
                times = value
        elif wire == 2:
            n, at = varint(request, at)
            if field == 1:
                name = request[at:at + n].decode()
            at += n
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        else:
            raise ValueError("wire type %d" % wire)
    return name, times


def name_of(request):
    return fields(request)[0]


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
    name, times = fields(request)
    # Each distinct message (a --data row's) counted apart: "SayHello name=ann times=3".
    counted("SayHello name=%s times=%d" % (name, times))
    # What the test asks of the client besides the message: its metadata, and a deadline (grpc-timeout).
    if ("x-hakaru", "1") in [(m.key, m.value) for m in context.invocation_metadata()]:
        counted("SayHello with metadata")
    # (Without one grpcio gives no time or a time far away: hakaru's --timeout is 5 s.)
    left = context.time_remaining()
    if left is not None and left <= 5.0:
        counted("SayHello with a deadline")
    return reply("Hello " + name)


def nap(request, context):
    # `--nap MS`: a method as slow as the server was told, for comparisons of a fast and a slow server.
    counted("Nap")
    time.sleep(float(option("--nap") or "0") / 1000)
    return reply("rested")


def fail(request, context):
    counted("Fail")
    code = getattr(grpc.StatusCode, name_of(request), grpc.StatusCode.UNKNOWN)
    # As a careless server does: the credentials it refused, echoed in its message.
    auth = dict(context.invocation_metadata()).get("authorization")
    context.abort(code, "chosen by the test" + ("; invalid token " + auth if auth else ""))


def lots(request, context):
    counted("Lots")
    name, times = fields(request)
    if name == "slow":
        # The headers at once, the first message 50 ms later, then 10 ms between messages: the time to first
        # message is neither the headers' nor the call's end.
        context.send_initial_metadata(())
        time.sleep(0.05)
    for i in range(times):
        if name == "slow" and i > 0:
            time.sleep(0.01)
        counted("Lots messages")
        yield reply("Hello %s %d" % (name, i))


def collect(requests, context):
    counted("Collect")
    n = 0
    first = last = None
    for _ in requests:
        counted("Collect messages")
        n += 1
        last = time.monotonic()
        first = first or last
    # The shortest time over all calls from a call's first message to its last, as this server saw them
    # (--stream-interval spaces them).
    if first is not None:
        least("Collect shortest span ms", int((last - first) * 1000))
    return reply("got %d" % n)


def chat(requests, context):
    counted("Chat")
    for request in requests:
        counted("Chat messages")
        yield reply("Hello " + name_of(request))


def option(name):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def main():
    # `--compress`: answers compressed with gzip (to a client that accepts it; its requests are decoded either way).
    compression = grpc.Compression.Gzip if "--compress" in sys.argv else None
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), compression=compression)
    handlers = {
        "SayHello": grpc.unary_unary_rpc_method_handler(say_hello),
        "Fail": grpc.unary_unary_rpc_method_handler(fail),
        "Nap": grpc.unary_unary_rpc_method_handler(nap),
        "Lots": grpc.unary_stream_rpc_method_handler(lots),
        "Collect": grpc.stream_unary_rpc_method_handler(collect),
        "Chat": grpc.stream_stream_rpc_method_handler(chat),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("helloworld.Greeter", handlers),))
    reflect = option("--reflect")
    if reflect:
        from google.protobuf import descriptor_pb2, descriptor_pool
        from grpc_reflection.v1alpha import reflection

        with open(reflect, "rb") as f:
            files = descriptor_pb2.FileDescriptorSet.FromString(f.read()).file
        pool = descriptor_pool.DescriptorPool()
        for file in files:
            pool.AddSerializedFile(file.SerializeToString())
        from grpc_reflection.v1alpha import reflection_pb2

        # grpcio-reflection serves v1alpha only; v1's messages are the same on the wire, so "--reflect-as v1"
        # serves the same servicer under v1's name instead ("v1,v1alpha": under both). Each call is counted.
        services = ["grpc.reflection.%s.ServerReflection" % v for v in (option("--reflect-as") or "v1alpha").split(",")]
        servicer = reflection.ReflectionServicer(["helloworld.Greeter"] + services, pool=pool)

        def counting(service):
            def info(requests, context):
                counted("reflection " + service)
                if ("x-hakaru", "1") in [(m.key, m.value) for m in context.invocation_metadata()]:
                    counted("reflection with metadata")
                yield from servicer.ServerReflectionInfo(requests, context)

            return grpc.stream_stream_rpc_method_handler(
                info,
                request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
                response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
            )

        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler(s, {"ServerReflectionInfo": counting(s)}) for s in services])
    tls = option("--tls")
    if tls:
        with open(tls + "/key.pem", "rb") as k, open(tls + "/cert.pem", "rb") as c:
            credentials = grpc.ssl_server_credentials(((k.read(), c.read()),))
        port = server.add_secure_port("127.0.0.1:0", credentials)
    else:
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
