//! The result document as pretty JSON (`--json FILE`).

use super::Exporter;
use crate::result::ResultDocument;

pub struct Json;

impl Exporter for Json {
    fn render(&self, doc: &ResultDocument) -> String {
        // Every string scrubbed of secrets on the way out, whatever the document already redacted.
        let mut s = crate::base::secrets::scrubbed_json(doc).expect("the result document is plain data");
        s.push('\n');
        s
    }
}
