//! The result document as pretty JSON (`--json FILE`).

use super::Exporter;
use crate::result::ResultDocument;

pub struct Json;

impl Exporter for Json {
    fn render(&self, doc: &ResultDocument) -> String {
        let mut s = serde_json::to_string_pretty(doc).expect("the result document is plain data");
        s.push('\n');
        s
    }
}
