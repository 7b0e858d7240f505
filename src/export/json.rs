//! The result document as pretty JSON (`--json FILE`).

use super::Exporter;
use crate::result::ResultDocument;

pub struct Json;

impl Exporter for Json {
    fn render(&self, doc: &ResultDocument) -> String {
        // Every string scrubbed of secrets on the way out, whatever the document already redacted; back into the
        // document's own type so its fields keep their order (a JSON value's map would sort them).
        let mut v = serde_json::to_value(doc).expect("the result document is plain data");
        crate::secrets::scrub_value(&mut v);
        let mut s = match serde_json::from_value::<ResultDocument>(v.clone()) {
            Ok(clean) => serde_json::to_string_pretty(&clean),
            Err(_) => serde_json::to_string_pretty(&v),
        }
        .expect("the result document is plain data");
        s.push('\n');
        s
    }
}
