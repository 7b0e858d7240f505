//! A Lua state as a wrk script sees it: the `wrk` table (target fields, `format`, `lookup`, `connect`), address and
//! thread objects, values copied between states (`thread:get/set`), and Lua errors said in one line.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mlua::{AnyUserData, Lua, MetaMethod, UserData, UserDataFields, UserDataMethods, Value, WeakLua};

/// Tables nested deeper than this do not pass between states (a table holding itself would never end).
const MOST_DEPTH: usize = 32;

/// The target as the script's `wrk` table shows it.
#[derive(Clone, Debug)]
pub struct Target {
    pub scheme: String,
    pub host: String,
    pub port: u16,
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// Where requests go unless `setup` gives a thread another address.
    pub addr: SocketAddr,
    /// How long `wrk.connect` waits.
    pub connect_timeout: Duration,
    /// `--http2`, with the `:authority` of requests without a `Host`: each request the script returns goes as
    /// HTTP/2 frames, one stream each.
    pub http2: Option<String>,
    /// `--http3`: each request the script returns goes as an HTTP/3 request of its own (one a string).
    pub http3: bool,
    /// A WebSocket run: what `request()` returns is each message as it is (no HTTP text), and without `request()`
    /// every message is this one (`--message`).
    pub messages: Option<Vec<u8>>,
}

/// A server address, as `wrk.lookup` returns them and `thread.addr` takes them.
#[derive(Clone, Copy, Debug)]
pub struct Addr(pub SocketAddr);

impl UserData for Addr {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_meta_method(MetaMethod::ToString, |_, a, ()| Ok(a.0.to_string()));
        m.add_meta_method(MetaMethod::Eq, |_, a, b: AnyUserData| Ok(b.borrow::<Addr>().is_ok_and(|b| b.0 == a.0)));
    }
}

/// What a load thread and the setup state share about it.
#[derive(Debug)]
pub struct ThreadShared {
    pub addr: Mutex<SocketAddr>,
    /// `thread:stop()` was called: the thread's clients end.
    pub stop: AtomicBool,
    /// How long the thread's calls may run (the step's end during the load).
    pub budget: Arc<super::budget::Budget>,
}

/// The state a thread object speaks to: the setup state holds its threads' states; a thread's own `wrk.thread`
/// holds its state weakly (a state holding itself would never be freed).
#[derive(Clone)]
enum StateRef {
    Strong(Lua),
    Weak(WeakLua),
}

/// `thread` in `setup(thread)` and `wrk.thread` in a load thread.
#[derive(Clone)]
pub struct ThreadHandle {
    state: StateRef,
    pub shared: Arc<ThreadShared>,
}

impl ThreadHandle {
    pub fn of(lua: &Lua, shared: Arc<ThreadShared>) -> ThreadHandle {
        ThreadHandle { state: StateRef::Strong(lua.clone()), shared }
    }

    pub fn own(lua: &Lua, shared: Arc<ThreadShared>) -> ThreadHandle {
        ThreadHandle { state: StateRef::Weak(lua.weak()), shared }
    }

    fn lua(&self) -> mlua::Result<Lua> {
        match &self.state {
            StateRef::Strong(l) => Ok(l.clone()),
            StateRef::Weak(w) => w.try_upgrade().ok_or_else(|| mlua::Error::runtime("the thread's state has ended")),
        }
    }
}

impl UserData for ThreadHandle {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("addr", |_, t| Ok(Addr(*t.shared.addr.lock().expect("never poisoned"))));
        f.add_field_method_set("addr", |_, t, v: Value| {
            let addr = match &v {
                Value::UserData(ud) => ud.borrow::<Addr>().map(|a| a.0).ok(),
                Value::String(s) => s.to_str().ok().and_then(|s| s.parse().ok()),
                _ => None,
            };
            let addr = addr.ok_or_else(|| {
                mlua::Error::runtime("thread.addr takes an address from wrk.lookup() (or \"ip:port\")")
            })?;
            *t.shared.addr.lock().expect("never poisoned") = addr;
            Ok(())
        });
    }

    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("get", |lua, t, name: String| {
            let v: Value = t.lua()?.globals().get(name.as_str())?;
            copy(v, lua, 0)
        });
        m.add_method("set", |_, t, (name, v): (String, Value)| {
            let there = t.lua()?;
            let v = copy(v, &there, 0)?;
            there.globals().set(name, v)
        });
        m.add_method("stop", |_, t, ()| {
            t.shared.stop.store(true, Ordering::Relaxed);
            Ok(())
        });
    }
}

/// `v` made in `to`: nil, booleans, numbers, strings and tables of them, as wrk allows between states.
pub fn copy(v: Value, to: &Lua, depth: usize) -> mlua::Result<Value> {
    Ok(match v {
        Value::Nil | Value::Boolean(_) | Value::Integer(_) | Value::Number(_) => v,
        Value::String(s) => Value::String(to.create_string(s.as_bytes())?),
        Value::Table(t) if depth < MOST_DEPTH => {
            let out = to.create_table()?;
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair?;
                out.raw_set(copy(k, to, depth + 1)?, copy(v, to, depth + 1)?)?;
            }
            Value::Table(out)
        }
        Value::Table(_) => return Err(mlua::Error::runtime(format!("tables nested deeper than {MOST_DEPTH}"))),
        other => {
            return Err(mlua::Error::runtime(format!(
                "a {} cannot pass between threads (only nil, booleans, numbers, strings and tables of them)",
                other.type_name()
            )));
        }
    })
}

/// A new state with the `wrk` table of `target`, its calls under `budget` (text chunks only; with `sandbox`,
/// without what reaches beyond the load: `sandbox.lua`), then the script's own code run (its top level).
pub fn new_state(
    target: &Target,
    file: &str,
    source: &str,
    sandbox: bool,
    budget: Arc<super::budget::Budget>,
) -> mlua::Result<Lua> {
    let lua = Lua::new();
    super::budget::watch(&lua, budget)?;
    let wrk = lua.create_table()?;
    wrk.set(
        "lookup",
        lua.create_function(|lua, (host, service): (String, Value)| {
            let port = match &service {
                Value::Integer(p) => u16::try_from(*p).ok(),
                Value::Number(p) => Some(*p as u16),
                Value::String(s) => match s.to_str()?.as_ref() {
                    "http" => Some(80),
                    "https" => Some(443),
                    other => other.parse().ok(),
                },
                Value::Nil => Some(80),
                _ => None,
            }
            .ok_or_else(|| mlua::Error::runtime("wrk.lookup: the service is a port number, \"http\" or \"https\""))?;
            let addrs: Vec<Addr> = (host.as_str(), port)
                .to_socket_addrs()
                .map_err(|e| mlua::Error::runtime(format!("wrk.lookup: cannot resolve {host}:{port} ({e})")))?
                .map(Addr)
                .collect();
            lua.create_sequence_from(addrs)
        })?,
    )?;
    let limit = target.connect_timeout;
    wrk.set(
        "connect",
        lua.create_function(move |_, a: AnyUserData| {
            let a = a.borrow::<Addr>()?.0;
            Ok(std::net::TcpStream::connect_timeout(&a, limit).is_ok())
        })?,
    )?;
    lua.globals().set("wrk", wrk)?;
    let names: Vec<&str> = target.headers.iter().map(|(n, _)| n.as_str()).collect();
    let values: Vec<&str> = target.headers.iter().map(|(_, v)| v.as_str()).collect();
    let body = target.body.as_ref().map(|b| lua.create_string(b)).transpose()?;
    lua.load(include_str!("prelude.lua")).set_name("=hakaru").call::<()>((
        target.scheme.as_str(),
        target.host.as_str(),
        target.port,
        target.method.as_str(),
        target.path.as_str(),
        body,
        names,
        values,
    ))?;
    if sandbox {
        lua.load(include_str!("sandbox.lua")).set_name("=hakaru").exec()?;
    }
    // Text only: LuaJIT does not check bytecode, and crafted bytecode can crash the process.
    lua.load(source).set_name(format!("@{file}")).set_mode(mlua::chunk::ChunkMode::Text).exec()?;
    Ok(lua)
}

/// A Lua error in one line: `FILE line N: message` when Lua says where, else the message. A traceback is left out.
pub fn one_line(file: &str, e: &mlua::Error) -> String {
    let mut e = e;
    while let mlua::Error::CallbackError { cause, .. } = e {
        e = cause;
    }
    let text = match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::FromLuaConversionError { from, to, message } => {
            format!(
                "a {from} where a {to} was wanted{}",
                message.as_ref().map(|m| format!(": {m}")).unwrap_or_default()
            )
        }
        other => other.to_string(),
    };
    let first = text.lines().next().unwrap_or("").trim();
    // "FILE:LINE: message", as Lua says it (a long name may be cut at its start by Lua: "...e/counter.lua:7:").
    if let Some(rest) = first.strip_prefix(file).or_else(|| first.split_once(".lua").map(|(_, r)| r))
        && let Some((line, msg)) = rest.strip_prefix(':').and_then(|r| r.split_once(':'))
        && line.bytes().all(|b| b.is_ascii_digit())
        && !line.is_empty()
    {
        return format!("{file} line {line}: {}", msg.trim());
    }
    format!("{file}: {first}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target {
            scheme: "http".into(),
            host: "127.0.0.1".into(),
            port: 8080,
            method: "GET".into(),
            path: "/".into(),
            headers: vec![("X-A".into(), "1".into())],
            body: None,
            addr: "127.0.0.1:8080".parse().unwrap(),
            connect_timeout: Duration::from_secs(1),
            http2: None,
            http3: false,
            messages: None,
        }
    }

    #[test]
    fn format_builds_wrks_request_with_host_and_length() {
        let lua = new_state(&target(), "t.lua", "", false, Default::default()).unwrap();
        lua.load("wrk.init({})").exec().unwrap();
        let r: String = lua.load("return wrk.format('POST', '/p', nil, 'abc')").eval().unwrap();
        assert!(r.starts_with("POST /p HTTP/1.1\r\n"), "{r}");
        assert!(r.contains("host: 127.0.0.1:8080\r\n") && r.contains("x-a: 1\r\n"), "{r}");
        assert!(r.ends_with("Content-Length: 3\r\n\r\nabc"), "{r}");
        let fixed: String = lua.load("return wrk.request()").eval().unwrap();
        assert_eq!(fixed.lines().next(), Some("GET / HTTP/1.1"));
    }

    #[test]
    fn errors_say_file_line_and_message() {
        let e = new_state(&target(), "bad.lua", "x = 1\nfunction f(\n", false, Default::default()).unwrap_err();
        let line = one_line("bad.lua", &e);
        assert!(line.starts_with("bad.lua line 3:"), "{line}");
        let lua =
            new_state(&target(), "run.lua", "function request()\n  return nil + 1\nend", false, Default::default())
                .unwrap();
        let f: mlua::Function = lua.globals().get("request").unwrap();
        let line = one_line("run.lua", &f.call::<Value>(()).unwrap_err());
        assert!(line.starts_with("run.lua line 2: attempt to perform arithmetic"), "{line}");
        assert!(!line.contains('\n'));
    }

    #[test]
    fn values_cross_states_but_functions_do_not() {
        let (a, b) = (Lua::new(), Lua::new());
        let t: Value = a.load("return {1, 'x', {y = true}}").eval().unwrap();
        let c = copy(t, &b, 0).unwrap();
        b.globals().set("c", c).unwrap();
        assert!(b.load("return c[2] == 'x' and c[3].y").eval::<bool>().unwrap());
        let f: Value = a.load("return print").eval().unwrap();
        assert!(copy(f, &b, 0).is_err());
    }
}
