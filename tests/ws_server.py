"""WebSocket servers for tests/websocket.rs, on Python's websockets (an implementation no one here wrote).

Usage: ws_server.py MODE. It listens on 127.0.0.1 on a port the kernel picks and prints "port N"; each line
"count" on stdin is answered with "count " and JSON: the messages received (and how many were distinct), the
connections opened (and those whose upgrade carried Authorization: Bearer s3cret), the closes by code as the server saw them, and the pongs it got to its pings. Modes:
  echo     every message sent back as it came.
  ping     before each echo, a ping (answered or not, the echo follows).
  close    the first message answered with a close, code 1011.
  push     from the upgrade on, "tick N" pushed 100 times a second on each connection (on a schedule, so the rate
           does not drift); messages received (a subscription) are counted, not answered.
  stamped  as push, but "hello" first, then {"n": N, "sent_ms": T} with T the time of sending in milliseconds
           since the epoch less 30: each message arrives at least 30 ms after the time it carries.
  scramble each message (JSON with a number at "n") answered out of order: echoed after a random 0-20 ms, except
           when n % 25 == 0 (never answered: "dropped"); when an answered one has n % 7 == 1, two messages of no
           one's go before it, one with an id no message had ({"n": -1}, "unknown") and one without ("no_id").
           "max_pending": the most messages a connection had received and not yet answered (or dropped).
"""

import asyncio
import json
import random
import resource
import sys
import threading
import time

import websockets

MODE = sys.argv[1] if len(sys.argv) > 1 else "echo"
counts = {"messages": 0, "distinct": 0, "connections": 0, "with_header": 0, "closes": {}, "pongs": 0,
          "answered": 0, "dropped": 0, "unknown": 0, "no_id": 0, "max_pending": 0,
          "users": {}}
seen = set()
lock = threading.Lock()


def add(key, n=1):
    with lock:
        counts[key] += n


async def push(ws):
    start = time.monotonic()
    n = 0
    while True:
        n += 1
        await ws.send("tick %d" % n)
        await asyncio.sleep(max(0.0, start + n * 0.01 - time.monotonic()))


async def push_stamped(ws):
    await ws.send("hello")
    start = time.monotonic()
    n = 0
    while True:
        n += 1
        await ws.send(json.dumps({"n": n, "sent_ms": int(time.time() * 1000) - 30}))
        await asyncio.sleep(max(0.0, start + n * 0.01 - time.monotonic()))


async def count_received(ws):
    async for message in ws:
        add("messages")


async def scrambled(ws, message, pending):
    n = json.loads(message)["n"]
    if n % 25 == 0:
        add("dropped")
        pending[0] -= 1
        return
    await asyncio.sleep(random.random() * 0.02)
    pending[0] -= 1
    try:
        if n % 7 == 1:
            await ws.send(json.dumps({"n": -1}))
            await ws.send(json.dumps({"note": "no id"}))
            add("unknown")
            add("no_id")
        await ws.send(message)
        add("answered")
    except websockets.ConnectionClosed:
        pass


async def handler(ws, path=None):
    add("connections")
    if ws.request_headers.get("Authorization") == "Bearer s3cret":
        add("with_header")
    user = ws.request_headers.get("X-User")
    if user is not None:
        with lock:
            counts["users"][user] = counts["users"].get(user, 0) + 1
    pending = [0]
    try:
        if MODE in ("push", "stamped"):
            pusher = asyncio.ensure_future(push(ws) if MODE == "push" else push_stamped(ws))
            try:
                await count_received(ws)
            finally:
                pusher.cancel()
            return
        async for message in ws:
            add("messages")
            with lock:
                if message not in seen:
                    seen.add(message)
                    counts["distinct"] += 1
            if MODE == "close":
                await ws.close(code=1011, reason="server fault")
                return
            if MODE == "scramble":
                pending[0] += 1
                with lock:
                    counts["max_pending"] = max(counts["max_pending"], pending[0])
                asyncio.ensure_future(scrambled(ws, message, pending))
                continue
            if MODE == "ping":
                pong = await ws.ping()
                await asyncio.wait_for(pong, timeout=60)
                add("pongs")
            await ws.send(message)
    except websockets.ConnectionClosed:
        pass
    finally:
        code = str(ws.close_code)
        with lock:
            counts["closes"][code] = counts["closes"].get(code, 0) + 1


def stdin_commands():
    for line in sys.stdin:
        if line.strip() == "count":
            with lock:
                print("count " + json.dumps(counts), flush=True)


async def main():
    # Thousands of connections at once (a sweep to 5,000 clients): descriptors and a listen queue for them.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    serving = websockets.serve(handler, "127.0.0.1", 0, max_size=None, ping_interval=None, backlog=4096)
    async with serving as server:
        port = server.sockets[0].getsockname()[1]
        print("port %d" % port, flush=True)
        loop = asyncio.get_running_loop()
        # The server ends when its stdin closes (the test dropped it).
        await loop.run_in_executor(None, stdin_commands)


asyncio.run(main())
