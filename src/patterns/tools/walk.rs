//! `extract --pointer`: a JSON pointer with `*` segments walked over the input as it streams (`Walk`), each value it
//! names handed on as terms, a value of another kind named with its path.

use super::*;

/// The segments of a pointer, still escaped with ~0 and ~1; with no `*` segment, one is added at the end (the
/// pointer then names an array whose elements are the terms).
pub(super) fn pointer_segments(pointer: &str) -> Vec<String> {
    let mut segments: Vec<String> = pointer.split('/').skip(1).map(String::from).collect();
    if !segments.iter().any(|s| s == "*") {
        segments.push("*".into());
    }
    segments
}

/// The value at `segments[..depth]` of a pointer, walked as it is read: a key or an index descends into one
/// member and skips the others unread, a `*` descends into every element in turn, and only the elements the
/// whole pointer names are read whole (one at a time). So memory is bounded by the largest such element, never
/// by the document, and the terms come out in document order.
///
/// A pointer is walked depth first, as the document is read; the whole-document reader walked it breadth
/// first, so when a document holds several mistakes for the pointer the one reported may be another.
/// Where an object repeats a key, the first member is walked and the others skipped.
pub(super) struct Walk<'s, 'o, 'p> {
    pub(super) sink: &'s mut Sink<'o>,
    pub(super) pointer: &'p str,
    pub(super) segments: &'p [String],
    pub(super) depth: usize,
}

impl<'s, 'o, 'p> Walk<'s, 'o, 'p> {
    /// The walk one segment further down.
    pub(super) fn deeper(&mut self) -> Walk<'_, 'o, 'p> {
        Walk { sink: &mut *self.sink, pointer: self.pointer, segments: self.segments, depth: self.depth + 1 }
    }

    /// Where this value is, as the pointer's first `depth` segments.
    pub(super) fn here(&self) -> String {
        let path: String = self.segments[..self.depth].iter().map(|s| format!("/{s}")).collect();
        display_path(&path).to_string()
    }

    pub(super) fn segment(&self) -> &'p str {
        &self.segments[self.depth]
    }

    /// The segment as an object key or array index (unescaped).
    pub(super) fn key(&self) -> String {
        self.segment().replace("~1", "/").replace("~0", "~")
    }

    pub(super) fn other<E: de::Error>(self, kind: &str) -> Result<(), E> {
        let message = if self.segment() == "*" {
            format!("--pointer {}: '{}' is {kind}, not an array; point at an array", self.pointer, self.here())
        } else {
            format!("--pointer {}: '{}' is {kind}, which has no '{}'", self.pointer, self.here(), self.key())
        };
        Err(self.sink.refuse(message))
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.depth == self.segments.len() {
            let item = Value::deserialize(d)?;
            return self.sink.pointer_item(self.pointer, item);
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "the JSON --pointer {} walks through", self.pointer)
    }

    scalars_to_other!();

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        if self.segment() == "*" {
            while seq.next_element_seed(self.deeper())?.is_some() {}
            return Ok(());
        }
        let wanted = self.key().parse::<usize>().ok();
        let (mut len, mut found) = (0, false);
        loop {
            let more = if wanted == Some(len) {
                found = seq.next_element_seed(self.deeper())?.is_some();
                found
            } else {
                seq.next_element::<IgnoredAny>()?.is_some()
            };
            if !more {
                break;
            }
            len += 1;
        }
        if !found {
            let message = format!(
                "--pointer {}: '{}' is an array of {len} elements; use an index below {len} or *",
                self.pointer,
                self.here()
            );
            return Err(self.sink.refuse(message));
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        if self.segment() == "*" {
            // Refused before the object is read: the message needs nothing from it.
            return self.other("an object");
        }
        let wanted = self.key();
        let mut found = false;
        // The first keys in sorted order, for the message when the key is not there (as serde_json's map
        // lists them); at most ten are kept, however many the object has.
        let mut first_keys = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !found && key == wanted {
                map.next_value_seed(self.deeper())?;
                found = true;
                continue;
            }
            map.next_value::<IgnoredAny>()?;
            if !found {
                first_keys.insert(key);
                if first_keys.len() > 10 {
                    first_keys.pop_last();
                }
            }
        }
        if !found {
            let keys: Vec<&str> = first_keys.iter().map(String::as_str).collect();
            let message = format!(
                "--pointer {}: no key '{wanted}' at '{}'; the keys there are: {}",
                self.pointer,
                self.here(),
                if keys.is_empty() { "(none)".into() } else { keys.join(", ") }
            );
            return Err(self.sink.refuse(message));
        }
        Ok(())
    }
}

pub(super) fn display_path(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
