//! memtier-style workloads: a mix of GET and SET, or arbitrary command templates (`SET __key__ __data__`), each
//! with its share and key pattern, keys drawn as the run goes (no key list is prepared). A template's words may
//! also hold `{{column}}` holes filled from `--data`'s rows and the built-ins (`{{seq}}`, `{{uuid}}`, ...), as
//! `run`'s URL and body do ([`crate::template`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::RngExt as _;
use rand_chacha::ChaCha8Rng;

use super::keys::{KeyChooser, KeyPattern, ZIPF_THETA, Zipfian};
use super::{Expect, Op, Request};
use crate::protocol::{Protocol, resp};
use crate::template::text::{Hole, Part, Text};
use crate::template::{Feed, Fill};

/// A piece of one argument of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(Vec<u8>),
    /// `__key__`: the key drawn for this request.
    Key,
    /// `__data__`: a value of the size drawn for this request.
    Data,
    /// `{{...}}`: a data file's column or a built-in, filled per request.
    Hole(Hole),
}

/// One command of the workload: its arguments as templates, its share and key pattern.
#[derive(Clone, Debug)]
pub struct Command {
    /// The name its figures go under (`GET`, or the template as given).
    pub name: String,
    args: Vec<Vec<Piece>>,
    pattern: KeyPattern,
    /// memcached storage commands take the data as a block after the line, with its length on the line: the
    /// argument sent as the block (the one holding `__data__`, else a template's last word).
    block: Option<usize>,
    /// Some word holds a `{{...}}` hole: each request's words are filled first, then framed.
    holes: bool,
    idempotent: bool,
}

/// memcached's storage commands: their line ends in the data's length, the data follows.
const STORAGE: [&str; 5] = ["set", "add", "replace", "append", "prepend"];

impl Command {
    /// Reads a template: words split at spaces (double quotes keep spaces, and so does a `{{rand 1 9}}`),
    /// `__key__` and `__data__` wherever they stand in a word, `__sha__` replaced by the loaded script's SHA1,
    /// `{{...}}` holes as [`Text::parse`] reads them (`columns`: the data file's, none without one).
    pub fn parse(
        template: &str,
        protocol: Protocol,
        pattern: KeyPattern,
        sha: Option<&str>,
        columns: Option<&[String]>,
    ) -> Result<Command, String> {
        let mut words = Vec::new();
        let (mut word, mut quoted, mut any) = (String::new(), false, false);
        let mut skip_to = 0;
        for (i, c) in template.char_indices() {
            if i < skip_to {
                continue;
            }
            if template[i..].starts_with("{{")
                && let Some(end) = template[i + 2..].find("}}")
            {
                // A hole is one piece of a word, spaces and all.
                skip_to = i + 2 + end + 2;
                word.push_str(&template[i..skip_to]);
                continue;
            }
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
        let mut args = Vec::new();
        for w in &words {
            args.push(pieces(&w.replace("__sha__", sha.unwrap_or("")), columns)?);
        }
        let holes = args.iter().flatten().any(|p| matches!(p, Piece::Hole(_)));
        let verb = words[0].to_ascii_lowercase();
        let storage = protocol == Protocol::Memcache && STORAGE.contains(&verb.as_str());
        let block = if !storage {
            None
        } else if let Some(at) = args.iter().position(|a| a.contains(&Piece::Data)) {
            Some(at)
        } else if args.len() >= 3 && args.last().is_some_and(|a| a.iter().any(|p| matches!(p, Piece::Hole(_)))) {
            Some(args.len() - 1)
        } else {
            return Err(format!(
                "memcached's {verb} stores data: write it like '{verb} __key__ __data__' or '{verb} {{{{id}}}} {{{{value}}}}'"
            ));
        };
        if protocol == Protocol::Memcache && words.iter().any(|w| w.len() > 250) {
            return Err("a memcached word longer than 250 bytes".into());
        }
        let idempotent = matches!(verb.as_str(), "get" | "gets" | "mget" | "exists" | "hgetall" | "hget" | "ttl");
        // The name is printed and stored: a password in the template (`AUTH pw`) stays out of it.
        let name = crate::base::secrets::redact_command(&words).unwrap_or_else(|| template.trim().to_string());
        Ok(Command { name, args, pattern, block, holes, idempotent })
    }

    /// It may change the data (anything but a known read): the run then checks what it would overwrite.
    pub fn writes(&self) -> bool {
        !self.idempotent
    }

    /// Whether a word holds a `{{...}}` hole, and whether one of them is a data file's column.
    pub fn holes(&self) -> (bool, bool) {
        let column = self.args.iter().flatten().any(|p| matches!(p, Piece::Hole(Hole::Column(_))));
        (self.holes, column)
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

    /// How many words the template has, its verb first.
    pub fn words(&self) -> usize {
        self.args.len()
    }

    /// What key word `i` names, were it a key: the guard looks up those the server (or its table) says are written.
    pub fn word_key(&self, i: usize) -> WordKey {
        let Some(arg) = self.args.get(i) else { return WordKey::Unknown };
        let text = |pieces: &[Piece]| -> Vec<u8> {
            pieces.iter().flat_map(|p| if let Piece::Text(t) = p { t.clone() } else { Vec::new() }).collect()
        };
        let column = |p: &Piece| matches!(p, Piece::Hole(Hole::Column(_)));
        let keys = arg.iter().filter(|p| **p == Piece::Key).count();
        if arg.iter().all(|p| matches!(p, Piece::Text(_))) {
            WordKey::Fixed(text(arg))
        } else if keys == 1 && arg.iter().all(|p| matches!(p, Piece::Text(_) | Piece::Key)) {
            let at = arg.iter().position(|p| *p == Piece::Key).expect("one __key__");
            WordKey::Numbered { before: text(&arg[..at]), after: text(&arg[at + 1..]) }
        } else if keys == 0 && arg.iter().all(|p| matches!(p, Piece::Text(_)) || column(p)) {
            WordKey::Row(RowKey(arg.clone()))
        } else {
            WordKey::Unknown
        }
    }

    /// The words as one request could send them, for asking the server which of them are keys it writes:
    /// `__key__` as `key`, `__data__` as `data`, a column from `row`, a built-in hole as `0`.
    pub fn sample(&self, key: &[u8], data: &[u8], row: Option<crate::template::data::Row<'_>>) -> Vec<Vec<u8>> {
        self.args
            .iter()
            .map(|arg| {
                let mut w = Vec::new();
                for p in arg {
                    match p {
                        Piece::Text(t) => w.extend_from_slice(t),
                        Piece::Key => w.extend_from_slice(key),
                        Piece::Data => w.extend_from_slice(data),
                        Piece::Hole(Hole::Column(c)) => {
                            w.extend_from_slice(row.and_then(|r| r.get(*c)).map_or(&b"0"[..], |v| v.as_bytes()))
                        }
                        Piece::Hole(_) => w.push(b'0'),
                    }
                }
                w
            })
            .collect()
    }

    /// memcached reads its command line as words: every row must fill each word of it with no space or control
    /// byte (one would end the word, or the command) and within 250 bytes. The error names the row and column.
    pub fn check_rows(&self, protocol: Protocol, rows: &crate::template::data::Rows) -> Result<(), String> {
        if protocol != Protocol::Memcache || !self.holes {
            return Ok(());
        }
        for (a, arg) in self.args.iter().enumerate().filter(|(a, _)| Some(*a) != self.block) {
            for (r, row) in rows.iter().enumerate() {
                let mut len = 0;
                for p in arg {
                    len += match p {
                        Piece::Text(t) => t.len(),
                        Piece::Hole(Hole::Column(c)) => {
                            let v = &row[*c];
                            if v.is_empty() || v.bytes().any(|b| b <= b' ' || b == 0x7f) {
                                return Err(format!(
                                    "row {}, column '{}': '{}' in a memcached command line; give values without \
                                     spaces or control characters, or put it in the stored value",
                                    r + 1,
                                    rows.columns[*c],
                                    v.escape_debug()
                                ));
                            }
                            v.len()
                        }
                        // The longest a built-in gives: a UUID, or a 64-bit number.
                        Piece::Hole(Hole::Uuid) => 36,
                        Piece::Hole(_) | Piece::Key | Piece::Data => 20,
                    };
                }
                if len > 250 {
                    return Err(format!(
                        "row {}: makes word {} of the command {len} bytes long; memcached takes at most 250",
                        r + 1,
                        a + 1
                    ));
                }
            }
        }
        Ok(())
    }

    /// The built-in `get` and `set` of `--mix`.
    pub fn builtin(op: &str, protocol: Protocol, pattern: KeyPattern) -> Command {
        // memcached's commands are lower case; Redis takes either.
        let template = if op == "set" { "set __key__ __data__" } else { "get __key__" };
        let mut c = Command::parse(template, protocol, pattern, None, None).expect("a valid template");
        c.name = op.to_ascii_uppercase();
        c
    }

    /// Writes the request of a template with holes: each word filled into `words` (reused from op to op), then
    /// framed as the protocol frames arguments.
    fn encode_filled(
        &self,
        protocol: Protocol,
        key: &[u8],
        data: &[u8],
        fill: &mut Fill<'_>,
        words: &mut Vec<Vec<u8>>,
        out: &mut Vec<u8>,
    ) {
        words.resize_with(self.args.len(), Vec::new);
        for (arg, word) in self.args.iter().zip(words.iter_mut()) {
            word.clear();
            for p in arg {
                match p {
                    Piece::Text(t) => word.extend_from_slice(t),
                    Piece::Key => word.extend_from_slice(key),
                    Piece::Data => word.extend_from_slice(data),
                    Piece::Hole(h) => fill.hole(h, word),
                }
            }
        }
        let words = &words[..self.args.len()];
        match protocol {
            Protocol::Resp => {
                resp::header(out, b'*', words.len());
                for w in words {
                    resp::header(out, b'$', w.len());
                    out.extend_from_slice(w);
                    out.extend_from_slice(b"\r\n");
                }
            }
            Protocol::Memcache if self.block.is_some() => {
                let block = self.block.expect("a storage command");
                let line: Vec<&Vec<u8>> =
                    words.iter().enumerate().filter(|(i, _)| *i != block).map(|(_, w)| w).collect();
                memcache_storage(&line, line.len(), &words[block], out);
            }
            Protocol::Memcache
            | Protocol::Http
            | Protocol::Http2
            | Protocol::Http3
            | Protocol::Grpc
            | Protocol::WebSocket => {
                for (i, w) in words.iter().enumerate() {
                    if i > 0 {
                        out.push(b' ');
                    }
                    out.extend_from_slice(w);
                }
                out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// Writes the request for `key` and `data` in the protocol's encoding.
    fn encode(&self, protocol: Protocol, key: &[u8], data: &[u8], out: &mut Vec<u8>) {
        let render = |arg: &[Piece], out: &mut Vec<u8>| {
            for p in arg {
                match p {
                    Piece::Text(t) => out.extend_from_slice(t),
                    Piece::Key => out.extend_from_slice(key),
                    Piece::Data => out.extend_from_slice(data),
                    Piece::Hole(_) => unreachable!("a template with holes is encoded by encode_filled"),
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
                            Piece::Hole(_) => 0,
                        })
                        .sum();
                    resp::header(out, b'$', len);
                    render(a, out);
                    out.extend_from_slice(b"\r\n");
                }
            }
            Protocol::Memcache if self.block.is_some() => {
                let line: Vec<&Vec<Piece>> = self.args.iter().filter(|a| !a.contains(&Piece::Data)).collect();
                for (i, a) in line.iter().enumerate() {
                    if i > 0 {
                        out.push(b' ');
                    }
                    render(a, out);
                }
                memcache_storage(&[], line.len(), data, out);
            }
            Protocol::Memcache
            | Protocol::Http
            | Protocol::Http2
            | Protocol::Http3
            | Protocol::Grpc
            | Protocol::WebSocket => {
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

/// The end of a memcached storage command: `line` (`set KEY [FLAGS EXPTIME]`, `words` long, written here unless
/// already written), `0 0` when flags and expiry are left out, the data's length, then the data block.
fn memcache_storage(line: &[&Vec<u8>], words: usize, data: &[u8], out: &mut Vec<u8>) {
    for (i, w) in line.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        out.extend_from_slice(w);
    }
    if words < 4 {
        out.extend_from_slice(b" 0 0");
    }
    out.push(b' ');
    out.extend_from_slice(itoa::Buffer::new().format(data.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// What keys one word of a template names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WordKey {
    /// One `__key__` with text around it: `before` + the key (`--key-prefix` and a number) + `after`.
    Numbered { before: Vec<u8>, after: Vec<u8> },
    /// No hole: the same key in every request.
    Fixed(Vec<u8>),
    /// Text and a data file's columns: a key per row.
    Row(RowKey),
    /// Anything else (`__data__`, a built-in hole, two `__key__`s): keys the run cannot know before it runs.
    Unknown,
}

/// The key a [`WordKey::Row`] word names for one row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowKey(Vec<Piece>);

impl RowKey {
    pub fn of(&self, row: crate::template::data::Row<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        for p in &self.0 {
            match p {
                Piece::Text(t) => out.extend_from_slice(t),
                Piece::Hole(Hole::Column(c)) => out.extend_from_slice(row[*c].as_bytes()),
                _ => {}
            }
        }
        out
    }
}

/// One word's pieces: its `{{...}}` holes, and `__key__` and `__data__` in the text between them.
fn pieces(word: &str, columns: Option<&[String]>) -> Result<Vec<Piece>, String> {
    let mut out = Vec::new();
    for part in Text::parse(word, columns)?.parts {
        match part {
            Part::Hole(h) => out.push(Piece::Hole(h)),
            Part::Literal(l) => out.extend(markers(&String::from_utf8_lossy(&l))),
        }
    }
    if out.is_empty() {
        out.push(Piece::Text(Vec::new()));
    }
    Ok(out)
}

/// `__key__` and `__data__` in a text without holes.
fn markers(word: &str) -> Vec<Piece> {
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
    /// The rows and counters of the templates' holes (`--data`, `{{seq}}`), when a template has any.
    pub feed: Option<Feed>,
}

impl Mix {
    pub fn new(
        protocol: Protocol,
        commands: Vec<(Command, f64)>,
        keys: u64,
        key_prefix: String,
        value_min: usize,
        value_max: usize,
        feed: Option<Feed>,
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
            feed,
        }
    }

    pub fn client(self: &Arc<Self>, client: usize, clients: usize, rng: ChaCha8Rng) -> Client {
        let choosers = self
            .commands
            .iter()
            .map(|c| KeyChooser::new(c.pattern, self.keys, client, clients, self.zipf.clone()))
            .collect();
        Client { mix: Arc::clone(self), choosers, rng, key: Vec::new(), words: Vec::new(), busy: Duration::ZERO }
    }
}

/// One client's draw of commands, keys and value sizes.
pub struct Client {
    mix: Arc<Mix>,
    choosers: Vec<KeyChooser>,
    rng: ChaCha8Rng,
    key: Vec<u8>,
    /// A template's words as filled for the current op.
    words: Vec<Vec<u8>>,
    /// Time spent filling templates' holes, since the engine last took it.
    busy: Duration,
}

impl Client {
    pub fn next_op(&mut self) -> Option<Op> {
        let mut bytes = Vec::new();
        let mut op = self.next_op_into(&mut bytes)?;
        op.request.bytes = bytes;
        Some(op)
    }

    /// The next op, its bytes appended to `out` (the op's own are left empty); None when `--data-order unique`
    /// has used every row.
    pub fn next_op_into(&mut self, out: &mut Vec<u8>) -> Option<Op> {
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
        match mix.feed.as_ref().filter(|_| command.holes) {
            None => command.encode(mix.protocol, &self.key, &mix.filler[..size], out),
            Some(feed) => {
                let t0 = Instant::now();
                let row = feed.row(&mut self.rng)?;
                let mut fill = feed.fill(row, &mut self.rng);
                command.encode_filled(mix.protocol, &self.key, &mix.filler[..size], &mut fill, &mut self.words, out);
                self.busy += t0.elapsed();
            }
        }
        Some(Op {
            spec: c,
            request: Request::new(Vec::new(), command.idempotent),
            expect: Expect::Any { tolerated: &[] },
        })
    }

    /// A unique order has used every row.
    pub fn exhausted(&self) -> bool {
        self.mix.feed.as_ref().is_some_and(Feed::exhausted)
    }

    /// The time spent filling holes since the last call; None when no template has holes.
    pub fn take_busy(&mut self) -> Option<Duration> {
        self.mix.feed.as_ref().map(|_| std::mem::take(&mut self.busy))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Order;
    use crate::template::data::Rows;
    use rand::SeedableRng;

    fn mix(template: &str, protocol: Protocol, rows: Rows, order: Order) -> Arc<Mix> {
        let cols = rows.columns.clone();
        let c = Command::parse(template, protocol, KeyPattern::Sequential, None, Some(&cols)).unwrap();
        Arc::new(Mix::new(protocol, vec![(c, 1.0)], 10, "hakaru:".into(), 4, 4, Some(Feed::new(Some(rows), order))))
    }

    fn rows() -> Rows {
        let rows = vec![vec!["k1".into(), "a b".into()], vec!["k2".into(), "c".into()]];
        Rows::new(vec!["id".into(), "name".into()], rows)
    }

    fn ops(m: &Arc<Mix>, n: usize) -> Vec<String> {
        let mut c = m.client(0, 1, ChaCha8Rng::seed_from_u64(1));
        (0..n).map_while(|_| c.next_op().map(|op| String::from_utf8(op.request.bytes).unwrap())).collect()
    }

    #[test]
    fn redis_words_are_filled_from_rows_and_framed_by_length() {
        let m = mix("SET user:{{id}} \"{{name}} {{rand 7 7}}\"", Protocol::Resp, rows(), Order::Unique);
        let sent = ops(&m, 5);
        assert_eq!(
            sent,
            [
                "*3\r\n$3\r\nSET\r\n$7\r\nuser:k1\r\n$5\r\na b 7\r\n",
                "*3\r\n$3\r\nSET\r\n$7\r\nuser:k2\r\n$3\r\nc 7\r\n"
            ]
        );
        let WordKey::Row(key) = m.commands[0].word_key(1) else { panic!("a row's key") };
        assert_eq!(key.of(m.feed.as_ref().unwrap().rows.as_ref().unwrap().row(1)), b"user:k2");
    }

    #[test]
    fn memcached_stores_a_templated_last_word_as_the_data_block() {
        let m = mix("set {{id}} {{name}}", Protocol::Memcache, rows(), Order::Sequential);
        assert_eq!(ops(&m, 3), ["set k1 0 0 3\r\na b\r\n", "set k2 0 0 1\r\nc\r\n", "set k1 0 0 3\r\na b\r\n"]);
        // memtier's markers still work beside the holes.
        let m = mix("set __key__:{{id}} __data__", Protocol::Memcache, rows(), Order::Sequential);
        assert_eq!(ops(&m, 1), ["set hakaru:0:k1 0 0 4\r\nabcd\r\n"]);
    }

    #[test]
    fn memcached_line_words_refuse_rows_with_spaces() {
        let c = Command::parse("get {{name}}", Protocol::Memcache, KeyPattern::Random, None, Some(&rows().columns))
            .unwrap();
        let e = c.check_rows(Protocol::Memcache, &rows()).unwrap_err();
        assert!(e.starts_with("row 1, column 'name': 'a b'"), "{e}");
        assert!(c.check_rows(Protocol::Resp, &rows()).is_ok());
        let e = Command::parse("get {{nope}}", Protocol::Memcache, KeyPattern::Random, None, Some(&rows().columns))
            .unwrap_err();
        assert!(e.contains("'{{nope}}'"), "{e}");
    }
}
