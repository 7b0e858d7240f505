"""An OpenAI-style token stream served by aiohttp (an implementation no one here wrote), for tests/events.rs and
tests/llm.rs.

Usage: sse_server.py [--tls CERT KEY]. It listens on 127.0.0.1 on a port the kernel picks and prints "port N".
GET or POST /v1/chat/completions?tokens=N&first=MS&gap=MS&pause=MS streams N tokens as chat-completion chunks
(the first FIRST ms after the request, then one every GAP ms), then `data: [DONE]`, then, PAUSE ms later, the
body's end (with &buffered=1 the tokens in one write when the last is due, as a server or proxy that buffers its
stream sends them): aiohttp's write_eof() writes the chunked body's last chunk in a write of its own, as every aiohttp and
uvicorn server ends a stream (vLLM and SGLang are served so). &finish=REASON puts that finish_reason on the last
token. A JSON body's max_tokens, when given, is the tokens
sent; its prompt (or first message's content) and model are kept; with stream_options.include_usage the stream ends
with a usage chunk (prompt_tokens: the prompt's words). /v1/completions answers the same with `text` chunks.
Each line "count" on stdin is answered with "count " and JSON: the requests answered, the connections they came on
(distinct client ports), and the prompts, models and max_tokens of the JSON bodies.
"""

import asyncio
import json
import ssl
import sys
import threading

from aiohttp import web

counts = {"requests": 0, "connections": 0, "prompts": [], "models": [], "max_tokens": []}
peers = set()
lock = threading.Lock()


def chunk(text, completions=False, finish=None):
    if completions:
        body = {"id": "t", "object": "text_completion", "choices": [{"index": 0, "text": text}]}
    else:
        body = {"id": "t", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}
    if finish:
        body["choices"][0]["finish_reason"] = finish
    return ("data: " + json.dumps(body) + "\n\n").encode()


def prompt_of(body):
    if "prompt" in body:
        return body["prompt"]
    messages = body.get("messages") or [{}]
    return messages[0].get("content", "")


async def completions(request):
    q = request.query
    tokens, first, gap, pause = (int(q.get(k, d)) for k, d in (("tokens", 5), ("first", 0), ("gap", 0), ("pause", 0)))
    body = None
    if request.can_read_body:
        try:
            body = json.loads(await request.read())
        except ValueError:
            body = None
    usage = None
    if isinstance(body, dict):
        if "max_tokens" in body:
            tokens = int(body["max_tokens"])
        prompt = prompt_of(body)
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = len(str(prompt).split())
        with lock:
            counts["prompts"].append(prompt)
            counts["models"].append(body.get("model"))
            counts["max_tokens"].append(body.get("max_tokens"))
    completions = request.path == "/v1/completions"
    with lock:
        counts["requests"] += 1
        peer = request.transport.get_extra_info("peername") if request.transport else None
        if peer not in peers:
            peers.add(peer)
            counts["connections"] += 1
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    loop = asyncio.get_running_loop()
    start = loop.time()
    buffered = q.get("buffered") == "1"
    held = b""
    for i in range(tokens):
        # Each token at its own instant from the start, so gaps do not drift.
        await asyncio.sleep(max(0.0, start + (first + gap * i) / 1000 - loop.time()))
        # The last token says why the answer ended (&finish=stop: before its max_tokens), as vLLM's do.
        finish = q.get("finish") if i == tokens - 1 else None
        if buffered:
            held += chunk(f"tok{i} ", completions, finish)
        else:
            await resp.write(chunk(f"tok{i} ", completions, finish))
    if held:
        await resp.write(held)
    if usage is not None:
        u = {"prompt_tokens": usage, "completion_tokens": tokens, "total_tokens": usage + tokens}
        await resp.write(("data: " + json.dumps({"id": "t", "choices": [], "usage": u}) + "\n\n").encode())
    await resp.write(b"data: [DONE]\n\n")
    if pause:
        await asyncio.sleep(pause / 1000)
    await resp.write_eof()
    return resp


def stdin_commands():
    for line in sys.stdin:
        if line.strip() == "count":
            with lock:
                print("count " + json.dumps(counts), flush=True)


async def main():
    context = None
    if len(sys.argv) == 4 and sys.argv[1] == "--tls":
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
    app = web.Application()
    app.router.add_route("*", "/v1/chat/completions", completions)
    app.router.add_route("*", "/v1/completions", completions)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print(f"port {port}", flush=True)
    reader = threading.Thread(target=stdin_commands, daemon=True)
    reader.start()
    while reader.is_alive():
        await asyncio.sleep(0.1)


asyncio.run(main())
