//! Exporters: each turns the result document into one format. They read the document and nothing else
//! ([`table`] prints a sweep's lines as its steps end).

pub mod csv;
pub mod drnbench;
pub mod json;
pub mod table;
pub mod text;

use std::io::Write;
use std::path::Path;

use crate::result::ResultDocument;

/// One output format.
pub trait Exporter {
    fn render(&self, doc: &ResultDocument) -> String;
}

/// Writes `content` to `path` through a temporary file and a rename, so a reader (or a full disk) never sees
/// half a file: either the previous complete version or the new one.
pub fn write_atomically(path: &Path, content: &str) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("{}.tmp", path.extension().and_then(|e| e.to_str()).unwrap_or("out")));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(content.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}
