//! One load thread's Lua state, as the engine calls it: `request()` for each request's bytes, `response()` with
//! each answer when the script defines it, `delay()` before each request, and `thread:stop()` heard.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mlua::{Function, Lua, Value};

use super::lua::{ThreadShared, one_line};
use super::wire::Shape;

/// The longest `delay()` taken, so that a script's mistake (a delay in seconds, not milliseconds) cannot hold a
/// client for days; wrk takes any. A longer one is a script error.
const MOST_DELAY: Duration = Duration::from_secs(3600);

/// "a table", "an integer", "nil": a Lua value's type as a sentence says it.
fn a_type(v: &Value) -> String {
    match v.type_name() {
        "nil" => "nil".into(),
        // Lua's own type() says number for both.
        "integer" => "a number".into(),
        t if t.starts_with(['a', 'e', 'i', 'o', 'u']) => format!("an {t}"),
        t => format!("a {t}"),
    }
}

/// A load thread's script.
pub struct ThreadScript {
    lua: Lua,
    file: Arc<str>,
    /// `request()`; None when the script defines none: the request is built once (wrk's static case).
    request: Option<Function>,
    response: Option<Function>,
    delay: Option<Function>,
    /// The last request text and what it holds: a script that returns the same string again is not read again.
    last: Vec<u8>,
    shape: Shape,
    /// `--http2`: the `:scheme` (true for https) and the `:authority` when the text has no `Host`; the last
    /// request's frames.
    http2: Option<(bool, String)>,
    frames: Vec<u8>,
    /// A WebSocket run: each string `request()` returns is a message, taken as it is.
    messages: bool,
    /// `--http3`: a string holds one request (each goes as a stream of its own), as with `--http2`.
    pub one_a_call: bool,
    /// HTTP/2 and HTTP/3: the metatable of `response()`'s headers, which finds `headers["X-Token"]` under their lower-case
    /// `x-token` (made on the first answer).
    lower_case: Option<mlua::Table>,
    pub shared: Arc<ThreadShared>,
    /// Time spent in the script's functions (wall time of calls that never wait: the CPU they take).
    pub busy: Duration,
}

impl ThreadScript {
    /// `http2`: the scheme (true for https) and authority of `--http2`'s frames.
    pub(super) fn new(
        lua: Lua,
        file: Arc<str>,
        shared: Arc<ThreadShared>,
        http2: Option<(bool, String)>,
        messages: Option<Vec<u8>>,
    ) -> Result<ThreadScript, String> {
        let hook = |name: &str| -> Result<Option<Function>, String> {
            match lua.globals().get::<Value>(name) {
                Ok(Value::Nil) => Ok(None),
                Ok(Value::Function(f)) => Ok(Some(f)),
                Ok(other) => Err(format!("{file}: global '{name}' is a {}, not a function", other.type_name())),
                Err(e) => Err(one_line(&file, &e)),
            }
        };
        let (request, response, delay) = (hook("request")?, hook("response")?, hook("delay")?);
        let mut s = ThreadScript {
            lua: lua.clone(),
            file,
            request,
            response,
            delay,
            last: Vec::new(),
            shape: Shape::default(),
            http2,
            frames: Vec::new(),
            messages: messages.is_some(),
            one_a_call: false,
            lower_case: None,
            shared,
            busy: Duration::ZERO,
        };
        if let (None, Some(message)) = (&s.request, messages) {
            // A WebSocket run without request(): every message is --message's.
            s.last = message;
            s.shape = Shape::message();
        } else if s.request.is_none() {
            // wrk's static case: the request wrk.init built, taken once.
            let fixed: Function = lua
                .globals()
                .get::<mlua::Table>("wrk")
                .and_then(|w| w.get("request"))
                .map_err(|e| format!("{}: wrk.request is gone ({})", s.file, one_line(&s.file, &e)))?;
            s.take(fixed.call::<Value>(()), "wrk.request()")?;
        }
        Ok(s)
    }

    pub fn wants_response(&self) -> bool {
        self.response.is_some()
    }

    pub fn has_delay(&self) -> bool {
        self.delay.is_some()
    }

    /// `thread:stop()` was called.
    pub fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    /// The next request's bytes into `wire`, and what they hold. An error is one line: file, line and message.
    pub fn next_request(&mut self, wire: &mut Vec<u8>) -> Result<&Shape, String> {
        if let Some(f) = &self.request {
            let t = Instant::now();
            let out = f.call::<Value>(());
            self.busy += t.elapsed();
            self.take(out, "request()")?;
        }
        wire.clear();
        wire.extend_from_slice(if self.http2.is_some() { &self.frames } else { &self.last });
        Ok(&self.shape)
    }

    /// Keeps what a request function returned, read once per new string.
    fn take(&mut self, out: mlua::Result<Value>, what: &str) -> Result<(), String> {
        let value = out.map_err(|e| format!("{} (in {what})", one_line(&self.file, &e)))?;
        let Value::String(s) = value else {
            return Err(format!(
                "{}: {what} returned {}, not a string (return wrk.format(...) or a request's text)",
                self.where_defined(what),
                a_type(&value)
            ));
        };
        let bytes = s.as_bytes();
        if self.messages {
            // A WebSocket message: its bytes as they are, whatever they hold.
            self.last.clear();
            self.last.extend_from_slice(&bytes);
            self.shape = Shape::message();
            return Ok(());
        }
        if *bytes != *self.last || self.shape.heads.is_empty() {
            let shape =
                Shape::read(&bytes).map_err(|why| format!("{}: {what} returned {why}", self.where_defined(what)))?;
            // Each request is a stream of its own; a string of several has no one stream to go in.
            if (self.http2.is_some() || self.one_a_call) && shape.heads.len() > 1 {
                let flag = if self.one_a_call { "--http3" } else { "--http2" };
                return Err(format!(
                    "{}: {what} returned {} requests in one string; with {flag} return one a call (each goes as its \
                     own stream)",
                    self.where_defined(what),
                    shape.heads.len()
                ));
            }
            if let Some((https, authority)) = &self.http2 {
                super::wire::http2_frames(&bytes, *https, authority, &mut self.frames)
                    .map_err(|why| format!("{}: {what} returned {why}", self.where_defined(what)))?;
            }
            self.last.clear();
            self.last.extend_from_slice(&bytes);
            self.shape = shape;
        }
        Ok(())
    }

    /// `FILE line N` where the script defines `what` (a function of the script), else the file.
    fn where_defined(&self, what: &str) -> String {
        let name = what.trim_end_matches("()");
        let line = self.lua.globals().get::<Function>(name).ok().and_then(|f| f.info().line_defined);
        match line {
            Some(l) => format!("{} line {l}", self.file),
            None => self.file.to_string(),
        }
    }

    /// `delay()`: how long to wait before the next request.
    pub fn delay(&mut self) -> Result<Option<Duration>, String> {
        let Some(f) = &self.delay else { return Ok(None) };
        let t = Instant::now();
        let out = f.call::<Option<f64>>(());
        self.busy += t.elapsed();
        let ms = out.map_err(|e| format!("{} (in delay())", one_line(&self.file, &e)))?.unwrap_or(0.0);
        // Checked before it becomes a Duration, which panics on a value it cannot hold (1e300).
        let most = MOST_DELAY.as_millis() as f64;
        if !(0.0..=most).contains(&ms) {
            let shown = if ms.abs() < 1e9 { ms.to_string() } else { format!("{ms:e}") };
            return Err(format!(
                "{}: delay() returned {shown}; return milliseconds, from 0 to {most} (one hour)",
                self.where_defined("delay")
            ));
        }
        Ok(Some(Duration::from_secs_f64(ms / 1000.0)))
    }

    /// `response(status, headers, body)` with one answer.
    pub fn response(&mut self, status: u16, headers: &[(String, Vec<u8>)], body: &[u8]) -> Result<(), String> {
        let Some(f) = &self.response else { return Ok(()) };
        let t = Instant::now();
        let out = (|| {
            let h = self.lua.create_table_with_capacity(0, headers.len())?;
            for (name, value) in headers {
                h.raw_set(name.as_str(), self.lua.create_string(value)?)?;
            }
            if self.http2.is_some() || self.one_a_call {
                if self.lower_case.is_none() {
                    let chunk = "return { __index = function(t, k) \
                                 if type(k) == 'string' then return rawget(t, k:lower()) end end }";
                    self.lower_case = Some(self.lua.load(chunk).set_name("=hakaru").eval()?);
                }
                h.set_metatable(self.lower_case.clone())?;
            }
            f.call::<()>((status, h, self.lua.create_string(body)?))
        })();
        self.busy += t.elapsed();
        out.map_err(|e| format!("{} (in response())", one_line(&self.file, &e)))
    }
}
