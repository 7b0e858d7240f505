"""An HTTP/3 server on aioquic (a QUIC and HTTP/3 implementation no one here wrote) for tests/http3.rs's hostile
cases, on a loopback UDP port its kernel picks: it says "port N" once it listens, answers each line of stdin
("count") with "count N", the requests it has seen (or "closed N", the connections ended by their
client or idle), or "early" with "early [A, R]" (handshakes whose 0-RTT early data it accepted, and those that
resumed a session: it keeps the session tickets it gives, so a client's next connection can resume and send early
data), and stops when stdin closes.

By path: / answers 200 "hello"; /reject resets the request's stream with H3_REQUEST_REJECTED; /malformed sends a
DATA frame before any HEADERS (RFC 9114 4.1: a message error, H3_FRAME_UNEXPECTED); /stall never answers;
/goaway answers 200, and after a connection's 20th request sends GOAWAY, answering the requests below its stream
and rejecting (H3_REQUEST_REJECTED: never processed) those the client sent before it read the GOAWAY; /sse streams
five server-sent events ("data: 1" ... "data: 5"), the first 30 ms after the request and then one every 20 ms,
and ends the stream; /sse-cut sends two of them, then resets the stream (H3_INTERNAL_ERROR). The paths of HOSTILE
send a frame's head and 24 MiB of its payload: an unknown frame on the request stream (then the answer) or on the
control stream announcing 2^61 bytes (then the answer, 2 s later), a HEADERS or HTTP/2 PRIORITY frame of 2^61 bytes, a
SETTINGS frame of 2^61 bytes on the control stream, or 24 MiB on the QPACK encoder stream (then the answer, 2 s later).
Usage: h3_server.py CERT KEY [ALPN] [refuse-early] (ALPN "h3" unless given: another one is a server that offers
no HTTP/3; refuse-early: it gives session tickets but never resumes one, so it refuses every 0-RTT early data).
"""

import asyncio
import sys

from aioquic.asyncio import serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.buffer import encode_uint_var
from aioquic.h3.connection import FrameType, H3Connection, encode_frame
from aioquic.h3.events import HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, HandshakeCompleted, ProtocolNegotiated

H3_REQUEST_REJECTED = 0x10B
H3_INTERNAL_ERROR = 0x102
# The hostile answers (the trust issue's HTTP/3 attacks): path -> (stream, frame type or None for raw bytes,
# the length its head announces, whether "hello" is answered after it). FLOOD bytes follow each head.
FLOOD = 24 << 20
HOSTILE = {
    b"/unknown-frame": ("request", 0x21, FLOOD, True),
    b"/headers-huge": ("request", 0x01, 1 << 61, False),
    b"/reserved-frame": ("request", 0x02, 1 << 61, False),
    b"/control-unknown": ("control", 0x21, 1 << 61, True),
    b"/settings-huge": ("control", 0x04, 1 << 61, False),
    b"/qpack-flood": ("encoder", None, 0, True),
}
seen = 0
closed = 0
early_accepted = 0
resumed = 0
tickets = {}


class Hostile(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.requests = 0
        self.goaway = None

    def quic_event_received(self, event):
        global seen, closed, early_accepted, resumed
        if isinstance(event, ConnectionTerminated):
            closed += 1
        if isinstance(event, HandshakeCompleted):
            early_accepted += event.early_data_accepted
            resumed += event.session_resumed
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol == "h3":
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for e in self.h3.handle_event(event):
            if not isinstance(e, HeadersReceived):
                continue
            seen += 1
            self.requests += 1
            path = dict(e.headers).get(b":path", b"/")
            sid = e.stream_id
            if self.goaway is not None and sid >= self.goaway:
                self._quic.reset_stream(sid, H3_REQUEST_REJECTED)
            elif path == b"/goaway" and self.requests == 20:
                self.goaway = sid + 4
                self.h3.send_headers(sid, [(b":status", b"200"), (b"content-length", b"5")])
                self.h3.send_data(sid, b"hello", end_stream=True)
                frame = encode_frame(FrameType.GOAWAY, encode_uint_var(self.goaway))
                self._quic.send_stream_data(self.h3._local_control_stream_id, frame)
            elif path == b"/reject":
                self._quic.reset_stream(sid, H3_REQUEST_REJECTED)
            elif path == b"/malformed":
                # A DATA frame (type 0, length 5) where the answer's HEADERS must come first.
                self._quic.send_stream_data(sid, b"\x00\x05hello", end_stream=True)
            elif path == b"/stall":
                pass
            elif path in HOSTILE:
                self.hostile(sid, path)
            elif path == b"/late-fin":
                # The end event at once, the stream's end 300 ms later: a client done at [DONE] stops a stream
                # whose read is still under way.
                self.h3.send_headers(sid, [(b":status", b"200"), (b"content-type", b"text/event-stream")])
                self.h3.send_data(sid, b"data: 1\n\ndata: [DONE]\n\n", end_stream=False)
                def fin(sid=sid):
                    self.h3.send_data(sid, b"", end_stream=True)
                    self.transmit()
                asyncio.get_running_loop().call_later(0.3, fin)
            elif path in (b"/sse", b"/sse-cut"):
                self.h3.send_headers(sid, [(b":status", b"200"), (b"content-type", b"text/event-stream")])
                self.stream_events(sid, 5 if path == b"/sse" else 2, path == b"/sse-cut")
            else:
                self.h3.send_headers(sid, [(b":status", b"200"), (b"content-length", b"5")])
                self.h3.send_data(sid, b"hello", end_stream=True)
        self.transmit()


    def hostile(self, sid, path):
        """The attacks of HOSTILE: a frame head, then FLOOD bytes of its payload, on the request stream or one of
        the server's own streams; the answer "hello" after it where the frame could end."""
        where, ty, length, answer = HOSTILE[path]
        stream = {"request": sid, "control": self.h3._local_control_stream_id,
                  "encoder": self.h3._local_encoder_stream_id}[where]
        if where == "request" and ty != 0x01:
            self.h3.send_headers(sid, [(b":status", b"200"), (b"content-length", b"5")])
        head = b"" if ty is None else encode_uint_var(ty) + encode_uint_var(length)
        self._quic.send_stream_data(stream, head + bytes(FLOOD))
        if answer and where == "request":
            self.h3.send_data(sid, b"hello", end_stream=True)
        elif answer:
            # Two seconds later, so the flood is under way on the client's side while it waits.
            def later():
                self.h3.send_headers(sid, [(b":status", b"200"), (b"content-length", b"5")])
                self.h3.send_data(sid, b"hello", end_stream=True)
                self.transmit()
            asyncio.get_running_loop().call_later(2.0, later)

    def stream_events(self, sid, n, cut):
        loop = asyncio.get_running_loop()
        for k in range(1, n + 1):
            def send(k=k):
                last = k == n
                if last and cut:
                    self.h3.send_data(sid, b"data: %d\n\n" % k, end_stream=False)
                    self._quic.reset_stream(sid, H3_INTERNAL_ERROR)
                else:
                    self.h3.send_data(sid, b"data: %d\n\n" % k, end_stream=last)
                self.transmit()
            loop.call_later(0.030 + 0.020 * (k - 1), send)


async def main():
    cert, key = sys.argv[1], sys.argv[2]
    alpn = sys.argv[3] if len(sys.argv) > 3 else "h3"
    refuse_early = len(sys.argv) > 4 and sys.argv[4] == "refuse-early"
    config = QuicConfiguration(is_client=False, alpn_protocols=[alpn], max_datagram_frame_size=None)
    config.load_cert_chain(cert, key)
    server = await serve("127.0.0.1", 0, configuration=config, create_protocol=Hostile,
                         session_ticket_handler=lambda t: tickets.__setitem__(t.ticket, t),
                         session_ticket_fetcher=lambda label: None if refuse_early else tickets.pop(label, None))
    port = server._transport.get_extra_info("sockname")[1]
    print(f"port {port}", flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        if line.strip() == b"count":
            print(f"count {seen}", flush=True)
        elif line.strip() == b"closed":
            print(f"closed {closed}", flush=True)
        elif line.strip() == b"early":
            print(f"early [{early_accepted}, {resumed}]", flush=True)
    server.close()


asyncio.run(main())
