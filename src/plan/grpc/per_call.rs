//! A gRPC message per call (built-ins in its JSON): each load thread makes a call's message from the template's
//! filled JSON. Where every hole is a built-in inside a JSON string of a string field (an id, a name), the message
//! is encoded once per shape (the lengths of the holes' values) and each call copies that encoding with its values
//! written over the holes' bytes: no JSON or protobuf work per call. Any other message (a hole in a number or bytes
//! field, a `--data` column, gzip) is encoded from its filled JSON per call.

use std::ops::Range;
use std::sync::Arc;

use prost_reflect::MethodDescriptor;

use super::{Framing, call_body};
use crate::template::text::{Hole, Part, Text};
use crate::template::{EncodeBody, ThreadEncoder};

/// Shapes a thread keeps at most; past them a new shape is encoded from its JSON per call. Few in practice
/// (`{{seq}}` has one per count of digits), so they are looked up in a list, without hashing a key.
const MOST_SHAPES: usize = 64;

/// Encodes a call's filled JSON into its framed messages (the template's body encoder).
#[derive(Debug)]
pub struct CallEncoder {
    call: Arc<Call>,
}

#[derive(Debug)]
struct Call {
    method: MethodDescriptor,
    framing: Framing,
    messages_per_call: u32,
    /// The JSON's literal pieces around its holes (one more than the holes), when the holes may be spliced.
    pieces: Option<Vec<String>>,
}

impl CallEncoder {
    pub(super) fn new(method: MethodDescriptor, framing: Framing, messages_per_call: u32, json: &Text) -> CallEncoder {
        let pieces = if framing.gzip { None } else { spliceable(json) };
        CallEncoder { call: Arc::new(Call { method, framing, messages_per_call, pieces }) }
    }

    /// Whether calls are spliced into an encoding made once per shape (else encoded from their JSON).
    #[cfg(test)]
    fn splices(&self) -> bool {
        self.call.pieces.is_some()
    }
}

impl EncodeBody for CallEncoder {
    fn thread(&self) -> Box<dyn ThreadEncoder> {
        Box::new(ThreadCall { call: Arc::clone(&self.call), shapes: Vec::new(), spliced: 0 })
    }
}

/// The JSON's literal pieces when every hole is a built-in inside a JSON string (none escaped), else None.
fn spliceable(json: &Text) -> Option<Vec<String>> {
    let mut pieces = vec![String::new()];
    let (mut in_string, mut escaped) = (false, false);
    for part in &json.parts {
        match part {
            Part::Literal(bytes) => {
                let text = std::str::from_utf8(bytes).ok()?;
                for c in text.chars() {
                    match c {
                        _ if escaped => escaped = false,
                        '\\' => escaped = true,
                        '"' => in_string = !in_string,
                        _ => {}
                    }
                }
                pieces.last_mut()?.push_str(text);
            }
            Part::Hole(Hole::Column(_)) => return None,
            Part::Hole(_) if !in_string || escaped => return None,
            Part::Hole(_) => pieces.push(String::new()),
        }
    }
    (pieces.len() > 1).then_some(pieces)
}

/// One shape's encoding: the framed messages with placeholder values, and where each hole's value goes.
struct Shape {
    bytes: Vec<u8>,
    /// (hole, offset in `bytes`): a hole in several messages of a streaming call is at several offsets.
    at: Vec<(usize, usize)>,
}

/// A load thread's call encoder, with the shapes it has met.
struct ThreadCall {
    call: Arc<Call>,
    /// By the lengths of the holes' values; None: that shape cannot be spliced (its JSON is encoded per call).
    shapes: Vec<(Vec<usize>, Option<Shape>)>,
    /// Calls spliced (for the tests).
    spliced: u64,
}

impl ThreadEncoder for ThreadCall {
    fn encode(&mut self, filled: &[u8], holes: &[Range<usize>], out: &mut Vec<u8>) -> Result<(), String> {
        if let Some(pieces) = &self.call.pieces {
            let same = |key: &[usize]| key.len() == holes.len() && key.iter().zip(holes).all(|(k, h)| *k == h.len());
            let mut found = self.shapes.iter().position(|(key, _)| same(key));
            if found.is_none() && self.shapes.len() < MOST_SHAPES {
                let key: Vec<usize> = holes.iter().map(Range::len).collect();
                let shape = shape(&self.call, pieces, &key)
                    .filter(|s| spliced(s, filled, holes) == json(&self.call, filled).ok());
                self.shapes.push((key, shape));
                found = Some(self.shapes.len() - 1);
            }
            if let Some((_, Some(shape))) = found.map(|i| &self.shapes[i]) {
                out.clear();
                out.extend_from_slice(&shape.bytes);
                for &(hole, at) in &shape.at {
                    let value = &filled[holes[hole].clone()];
                    out[at..at + value.len()].copy_from_slice(value);
                }
                self.spliced += 1;
                return Ok(());
            }
        }
        *out = json(&self.call, filled)?;
        Ok(())
    }
}

/// The call's framed messages from its filled JSON.
fn json(call: &Call, filled: &[u8]) -> Result<Vec<u8>, String> {
    let text = std::str::from_utf8(filled).map_err(|_| "a call's message JSON is not UTF-8 text".to_string())?;
    let (body, n) = call_body(call.framing, &call.method, text, "--body")
        .map_err(|r| format!("a call's message, from its template: {}", r.error.to_string().trim_end()))?;
    if n != call.messages_per_call {
        return Err(format!(
            "a call's message, from its template: {n} messages where the calls before sent {}",
            call.messages_per_call
        ));
    }
    Ok(body)
}

/// The encoding of the values' `lengths`, and where each hole lands: the JSON encoded with every hole `a...a`,
/// then once more for each hole with that one `b...b`; the bytes that differ are its. None when a hole does not
/// land as its own bytes (a number or bytes field turns its text into something else, or it fails to encode).
fn shape(call: &Call, pieces: &[String], lengths: &[usize]) -> Option<Shape> {
    let with = |b_hole: Option<usize>| {
        let mut text = pieces[0].clone();
        for (i, piece) in pieces[1..].iter().enumerate() {
            let c = if b_hole == Some(i) { "b" } else { "a" };
            text.push_str(&c.repeat(lengths[i]));
            text.push_str(piece);
        }
        call_body(call.framing, &call.method, &text, "--body").ok().filter(|(_, n)| *n == call.messages_per_call)
    };
    let (bytes, _) = with(None)?;
    let mut at = Vec::new();
    for (hole, &len) in lengths.iter().enumerate() {
        let (other, _) = with(Some(hole))?;
        if other.len() != bytes.len() || len == 0 {
            return None;
        }
        let differ: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] != other[i]).collect();
        // Whole runs of the value's length, each its own copy of the hole (a message of a streaming call each).
        if differ.is_empty() || !differ.len().is_multiple_of(len) {
            return None;
        }
        for run in differ.chunks(len) {
            if run[len - 1] - run[0] != len - 1 || bytes[run[0]..run[0] + len].iter().any(|&b| b != b'a') {
                return None;
            }
            at.push((hole, run[0]));
        }
    }
    Some(Shape { bytes, at })
}

/// A shape's encoding with `filled`'s values written over its holes.
fn spliced(shape: &Shape, filled: &[u8], holes: &[Range<usize>]) -> Option<Vec<u8>> {
    let mut out = shape.bytes.clone();
    for &(hole, at) in &shape.at {
        let value = &filled[holes[hole].clone()];
        out.get_mut(at..at + value.len())?.copy_from_slice(value);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::grpc;

    fn method(streaming: bool) -> MethodDescriptor {
        let dir = tempfile::tempdir().unwrap();
        let proto = dir.path().join("t.proto");
        std::fs::write(
            &proto,
            "syntax = \"proto3\";\npackage t;\nservice S { rpc One (M) returns (M); rpc Many (stream M) returns (M); }\n\
             message Inner { string id = 1; }\nmessage M { string name = 1; int32 n = 2; Inner inner = 3; bytes raw = 4; }\n",
        )
        .unwrap();
        let pool = super::super::proto::compile(&proto, &[]).unwrap();
        let service = pool.get_service_by_name("t.S").unwrap();
        service.methods().find(|m| m.name() == if streaming { "Many" } else { "One" }).unwrap()
    }

    /// The template's fill of `json`'s holes with `values`, and where they lie.
    fn filled(json: &str, values: &[&str]) -> (Vec<u8>, Vec<Range<usize>>) {
        let text = Text::parse(json, None).unwrap();
        let (mut out, mut holes, mut v) = (Vec::new(), Vec::new(), values.iter());
        for part in &text.parts {
            match part {
                Part::Literal(b) => out.extend_from_slice(b),
                Part::Hole(_) => {
                    let value = v.next().unwrap().as_bytes();
                    holes.push(out.len()..out.len() + value.len());
                    out.extend_from_slice(value);
                }
            }
        }
        (out, holes)
    }

    fn encoder(json: &str, streaming: bool, framing: Framing) -> (CallEncoder, u32) {
        let n = if streaming { framing.stream_messages.unwrap_or(1) } else { 1 };
        (CallEncoder::new(method(streaming), framing, n, &Text::parse(json, None).unwrap()), n)
    }

    const PLAIN: Framing = Framing { stream_messages: None, gzip: false };

    #[test]
    fn string_holes_are_spliced_into_one_encoding_a_shape_and_match_the_json_path() {
        let json = r#"{"name":"user-{{seq}}","n":7,"inner":{"id":"{{uuid}}"}}"#;
        let (e, _) = encoder(json, false, PLAIN);
        assert!(e.splices());
        let mut t = ThreadCall { call: Arc::clone(&e.call), shapes: Vec::new(), spliced: 0 };
        let uuid = "0f8fad5b-d9cb-469f-a165-70867728950e";
        // 9 then 10 and 11 digits: three shapes, the nested message's and the string's lengths rewritten in each.
        for seq in ["9", "10", "12", "100", "7"] {
            let (f, holes) = filled(json, &[seq, uuid]);
            let mut out = Vec::new();
            t.encode(&f, &holes, &mut out).unwrap();
            assert_eq!(Ok(out), json_path(&e, &f), "seq {seq}");
        }
        assert_eq!((t.spliced, t.shapes.len()), (5, 3));
    }

    fn json_path(e: &CallEncoder, filled: &[u8]) -> Result<Vec<u8>, String> {
        json(&e.call, filled)
    }

    #[test]
    fn a_streaming_calls_messages_each_take_the_value() {
        let framing = Framing { stream_messages: Some(3), gzip: false };
        let json = r#"{"name":"{{seq}}"}"#;
        let (e, _) = encoder(json, true, framing);
        let mut t = ThreadCall { call: Arc::clone(&e.call), shapes: Vec::new(), spliced: 0 };
        let (f, holes) = filled(json, &["42"]);
        let mut out = Vec::new();
        t.encode(&f, &holes, &mut out).unwrap();
        let one = grpc::frame_message(&[0x0a, 2, b'4', b'2']);
        assert_eq!(out, [one.clone(), one.clone(), one].concat());
        assert_eq!(t.spliced, 1);
    }

    #[test]
    fn numbers_bytes_columns_and_gzip_go_through_the_json_per_call() {
        assert!(!encoder(r#"{"n":{{seq}}}"#, false, PLAIN).0.splices(), "a bare number");
        let gzip = Framing { stream_messages: None, gzip: true };
        assert!(!encoder(r#"{"name":"{{seq}}"}"#, false, gzip).0.splices(), "gzip");
        // A string hole of a bytes field (base64) is found not to land as its own bytes: its JSON per call.
        let json = r#"{"raw":"{{rand 1000 9999}}"}"#;
        let (e, _) = encoder(json, false, PLAIN);
        let mut t = ThreadCall { call: Arc::clone(&e.call), shapes: Vec::new(), spliced: 0 };
        let (f, holes) = filled(json, &["1234"]);
        let mut out = Vec::new();
        t.encode(&f, &holes, &mut out).unwrap();
        assert_eq!((Ok(out), t.spliced), (json_path(&e, &f), 0));
        let columns = ["c".to_string()];
        let with_column = Text::parse(r#"{"name":"{{c}}-{{seq}}"}"#, Some(&columns)).unwrap();
        assert!(spliceable(&with_column).is_none(), "a column");
    }
}
