//! memtier-style workloads: a mix of GET and SET, or arbitrary command templates (`SET __key__ __data__`), each
//! with its share and key pattern, keys drawn as the run goes (no key list is prepared).

use std::sync::Arc;

use rand::RngExt as _;
use rand_chacha::ChaCha8Rng;

use super::keys::{KeyChooser, KeyPattern, ZIPF_THETA, Zipfian};
use super::{Expect, Op, Request};
use crate::protocol::{Protocol, resp};

/// A piece of one argument of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(Vec<u8>),
    /// `__key__`: the key drawn for this request.
    Key,
    /// `__data__`: a value of the size drawn for this request.
    Data,
}

/// One command of the workload: its arguments as templates, its share and key pattern.
#[derive(Clone, Debug)]
pub struct Command {
    /// The name its figures go under (`GET`, or the template as given).
    pub name: String,
    args: Vec<Vec<Piece>>,
    pattern: KeyPattern,
    /// memcached storage commands take the data as a block after the line, with its length on the line.
    storage: bool,
    idempotent: bool,
}

/// memcached's storage commands: their line ends in the data's length, the data follows.
const STORAGE: [&str; 5] = ["set", "add", "replace", "append", "prepend"];

impl Command {
    /// Reads a template: words split at spaces (double quotes keep spaces), `__key__` and `__data__` wherever they
    /// stand in a word, `__sha__` replaced by the loaded script's SHA1.
    pub fn parse(
        template: &str,
        protocol: Protocol,
        pattern: KeyPattern,
        sha: Option<&str>,
    ) -> Result<Command, String> {
        let mut words = Vec::new();
        let (mut word, mut quoted, mut any) = (String::new(), false, false);
        for c in template.chars() {
            match c {
                '"' => {
                    quoted = !quoted;
                    any = true;
                }
                c if c.is_whitespace() && !quoted => {
                    if any || !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                    any = false;
                }
                c => word.push(c),
            }
        }
        if quoted {
            return Err("a double quote is not closed".into());
        }
        if any || !word.is_empty() {
            words.push(word);
        }
        if words.is_empty() {
            return Err("no command".into());
        }
        if words.iter().any(|w| w.contains("__sha__")) && sha.is_none() {
            return Err("__sha__ needs a script: give --script FILE".into());
        }
        let args: Vec<Vec<Piece>> = words.iter().map(|w| pieces(&w.replace("__sha__", sha.unwrap_or("")))).collect();
        let verb = words[0].to_ascii_lowercase();
        let storage = protocol == Protocol::Memcache && STORAGE.contains(&verb.as_str());
        if storage && !args.iter().any(|a| a.contains(&Piece::Data)) {
            return Err(format!("memcached's {verb} stores data: write it like '{verb} __key__ __data__'"));
        }
        if protocol == Protocol::Memcache && words.iter().any(|w| w.len() > 250) {
            return Err("a memcached word longer than 250 bytes".into());
        }
        let idempotent = matches!(verb.as_str(), "get" | "gets" | "mget" | "exists" | "hgetall" | "hget" | "ttl");
        // The name is printed and stored: a password in the template (`AUTH pw`) stays out of it.
        let name = crate::secrets::redact_command(&words).unwrap_or_else(|| template.trim().to_string());
        Ok(Command { name, args, pattern, storage, idempotent })
    }

    /// It may change the data (anything but a known read): the run then checks what it would overwrite.
    pub fn writes(&self) -> bool {
        !self.idempotent
    }

    /// Whether it deletes data wholesale (`FLUSHDB`, `FLUSHALL`, `flush_all`, `SWAPDB`, `SCRIPT FLUSH`, `FUNCTION
    /// FLUSH`): only with `--flush`.
    pub fn clears(&self) -> bool {
        let word = |i: usize| {
            self.args.get(i).map(|a| {
                a.iter()
                    .map(|p| match p {
                        Piece::Text(t) => String::from_utf8_lossy(t).to_ascii_lowercase(),
                        _ => String::new(),
                    })
                    .collect::<String>()
            })
        };
        match word(0).as_deref() {
            Some("flushdb" | "flushall" | "flush_all" | "swapdb") => true,
            Some("script" | "function") => word(1).as_deref() == Some("flush"),
            _ => false,
        }
    }

    /// The text around `__key__` in the argument that holds it (`user:__key__` -> `user:`, ``): the key the command
    /// touches is that text around `--key-prefix` and the key's number. None when no argument holds exactly one
    /// `__key__` (a fixed key, or a key the template builds otherwise).
    pub fn key_word(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let arg = self.args.iter().find(|a| a.contains(&Piece::Key))?;
        if arg.iter().filter(|p| **p == Piece::Key).count() != 1 || arg.contains(&Piece::Data) {
            return None;
        }
        let at = arg.iter().position(|p| *p == Piece::Key)?;
        let text = |pieces: &[Piece]| -> Vec<u8> {
            pieces.iter().flat_map(|p| if let Piece::Text(t) = p { t.clone() } else { Vec::new() }).collect()
        };
        Some((text(&arg[..at]), text(&arg[at + 1..])))
    }

    /// The built-in `get` and `set` of `--mix`.
    pub fn builtin(op: &str, protocol: Protocol, pattern: KeyPattern) -> Command {
        // memcached's commands are lower case; Redis takes either.
        let template = if op == "set" { "set __key__ __data__" } else { "get __key__" };
        let mut c = Command::parse(template, protocol, pattern, None).expect("a valid template");
        c.name = op.to_ascii_uppercase();
        c
    }

    /// Writes the request for `key` and `data` in the protocol's encoding.
    fn encode(&self, protocol: Protocol, key: &[u8], data: &[u8], out: &mut Vec<u8>) {
        let render = |arg: &[Piece], out: &mut Vec<u8>| {
            for p in arg {
                match p {
                    Piece::Text(t) => out.extend_from_slice(t),
                    Piece::Key => out.extend_from_slice(key),
                    Piece::Data => out.extend_from_slice(data),
                }
            }
        };
        match protocol {
            Protocol::Resp => {
                // Straight into `out`, each argument's length added up from its pieces: no copy per argument.
                resp::header(out, b'*', self.args.len());
                for a in &self.args {
                    let len = a
                        .iter()
                        .map(|p| match p {
                            Piece::Text(t) => t.len(),
                            Piece::Key => key.len(),
                            Piece::Data => data.len(),
                        })
                        .sum();
                    resp::header(out, b'$', len);
                    render(a, out);
                    out.extend_from_slice(b"\r\n");
                }
            }
            Protocol::Memcache if self.storage => {
                // `set KEY [FLAGS EXPTIME]`, the data's length, then the data block.
                let line: Vec<&Vec<Piece>> = self.args.iter().filter(|a| !a.contains(&Piece::Data)).collect();
                for (i, a) in line.iter().enumerate() {
                    if i > 0 {
                        out.push(b' ');
                    }
                    render(a, out);
                }
                if line.len() < 4 {
                    out.extend_from_slice(b" 0 0");
                }
                out.push(b' ');
                out.extend_from_slice(itoa::Buffer::new().format(data.len()).as_bytes());
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(data);
                out.extend_from_slice(b"\r\n");
            }
            Protocol::Memcache | Protocol::Http | Protocol::Http2 => {
                for (i, a) in self.args.iter().enumerate() {
                    if i > 0 {
                        out.push(b' ');
                    }
                    render(a, out);
                }
                out.extend_from_slice(b"\r\n");
            }
        }
    }
}

fn pieces(word: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut rest = word;
    while !rest.is_empty() {
        let next = [("__key__", Piece::Key), ("__data__", Piece::Data)]
            .into_iter()
            .filter_map(|(m, p)| rest.find(m).map(|i| (i, m.len(), p)))
            .min_by_key(|(i, _, _)| *i);
        match next {
            Some((i, len, p)) => {
                if i > 0 {
                    out.push(Piece::Text(rest.as_bytes()[..i].to_vec()));
                }
                out.push(p);
                rest = &rest[i + len..];
            }
            None => {
                out.push(Piece::Text(rest.as_bytes().to_vec()));
                rest = "";
            }
        }
    }
    if out.is_empty() {
        out.push(Piece::Text(Vec::new()));
    }
    out
}

/// The planned mix, shared by every client.
#[derive(Debug)]
pub struct Mix {
    pub protocol: Protocol,
    pub commands: Vec<Command>,
    /// Running sums of the commands' shares, for drawing one.
    cumulative: Vec<f64>,
    pub keys: u64,
    pub key_prefix: String,
    /// Value sizes drawn uniformly from this range (one size when min = max).
    pub value_min: usize,
    pub value_max: usize,
    zipf: Option<Arc<Zipfian>>,
    /// Bytes every value is cut from.
    filler: Vec<u8>,
}

impl Mix {
    pub fn new(
        protocol: Protocol,
        commands: Vec<(Command, f64)>,
        keys: u64,
        key_prefix: String,
        value_min: usize,
        value_max: usize,
    ) -> Mix {
        let mut total = 0.0;
        let cumulative = commands
            .iter()
            .map(|(_, s)| {
                total += s;
                total
            })
            .collect();
        let zipf = commands
            .iter()
            .any(|(c, _)| c.pattern == KeyPattern::Zipf)
            .then(|| Arc::new(Zipfian::new(keys, ZIPF_THETA)));
        // Printable and not all one byte, so a value read back shows where it was cut.
        let filler = (0..value_max).map(|i| b'a' + (i % 26) as u8).collect();
        Mix {
            protocol,
            commands: commands.into_iter().map(|(c, _)| c).collect(),
            cumulative,
            keys,
            key_prefix,
            value_min,
            value_max,
            zipf,
            filler,
        }
    }

    pub fn client(self: &Arc<Self>, client: usize, clients: usize, rng: ChaCha8Rng) -> Client {
        let choosers = self
            .commands
            .iter()
            .map(|c| KeyChooser::new(c.pattern, self.keys, client, clients, self.zipf.clone()))
            .collect();
        Client { mix: Arc::clone(self), choosers, rng, key: Vec::new() }
    }
}

/// One client's draw of commands, keys and value sizes.
pub struct Client {
    mix: Arc<Mix>,
    choosers: Vec<KeyChooser>,
    rng: ChaCha8Rng,
    key: Vec<u8>,
}

impl Client {
    pub fn next_op(&mut self) -> Op {
        let mut bytes = Vec::new();
        let mut op = self.next_op_into(&mut bytes);
        op.request.bytes = bytes;
        op
    }

    /// The next op, its bytes appended to `out` (the op's own are left empty).
    pub fn next_op_into(&mut self, out: &mut Vec<u8>) -> Op {
        let mix = &*self.mix;
        let total = mix.cumulative.last().copied().unwrap_or(1.0);
        let r = self.rng.random::<f64>() * total;
        let c = mix.cumulative.partition_point(|x| *x <= r).min(mix.commands.len() - 1);
        let k = self.choosers[c].next(&mut self.rng);
        self.key.clear();
        self.key.extend_from_slice(mix.key_prefix.as_bytes());
        self.key.extend_from_slice(itoa::Buffer::new().format(k).as_bytes());
        let size = if mix.value_max > mix.value_min {
            self.rng.random_range(mix.value_min..=mix.value_max)
        } else {
            mix.value_max
        };
        let command = &mix.commands[c];
        command.encode(mix.protocol, &self.key, &mix.filler[..size], out);
        Op { spec: c, request: Request::new(Vec::new(), command.idempotent), expect: Expect::Any { tolerated: &[] } }
    }
}
