//! `--proto` and its imports parsed with protox, every file read through the one bounded reader (a regular file
//! under [`crate::base::bounded::PROTO`]) and its nesting checked before the parser's recursion sees it.

use std::path::{Path, PathBuf};

use prost_reflect::DescriptorPool;
use protox::file::{File, FileResolver, GoogleFileResolver};

use crate::error::CliError;

/// The deepest nesting of braces, brackets and parentheses a .proto file may have. Real files nest messages a few
/// levels deep; protox's parser recurses once a level, and an option value nesting 5,000 messages overflowed its
/// stack (SIGABRT) before this bound.
pub const MAX_NESTING: usize = 64;

/// The `--proto` file and its imports parsed; an error names the file, line and column.
pub(in crate::plan) fn compile(proto: &Path, import_path: &[PathBuf]) -> Result<DescriptorPool, CliError> {
    let own_dir = proto.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut includes = vec![own_dir.to_path_buf()];
    includes.extend(import_path.iter().cloned());
    let shown = proto.display();
    if !proto.is_file() {
        return Err(CliError::new(format!("--proto '{shown}': no such file; give the service's .proto file")));
    }
    let mut compiler = protox::Compiler::with_file_resolver(Bounded { includes, google: GoogleFileResolver::new() });
    compiler.include_imports(true);
    let file = proto.file_name().map(Path::new).unwrap_or(proto);
    compiler.open_file(file).map_err(|e| CliError::new(format!("--proto {}", located(&e, &shown.to_string()))))?;
    Ok(compiler.descriptor_pool())
}

/// protox's error as `FILE:LINE:COL: what`, where it points into a file (its first label), else `'FILE': what`.
fn located(e: &protox::Error, proto: &str) -> String {
    use miette::Diagnostic;
    let what = super::one_line(&e.to_string());
    let at = e.source_code().zip(e.labels().and_then(|mut l| l.next())).and_then(|(source, label)| {
        let span = source.read_span(label.inner(), 0, 0).ok()?;
        let name = span.name().map(String::from).or_else(|| e.file().map(String::from))?;
        Some(format!("{name}:{}:{}", span.line() + 1, span.column() + 1))
    });
    match at {
        Some(at) => format!("{at}: {what}"),
        None => format!("'{}': {what}", e.file().unwrap_or(proto)),
    }
}

/// protox's include-path resolver, reading through [`crate::base::bounded`]: an import that is a link to /dev/zero or a
/// FIFO is refused (protox's own reader read 4.2 GB of the one and waited on the other forever), as is a file past
/// the cap or nested past [`MAX_NESTING`].
struct Bounded {
    includes: Vec<PathBuf>,
    google: GoogleFileResolver,
}

impl FileResolver for Bounded {
    fn resolve_path(&self, path: &Path) -> Option<String> {
        self.includes.iter().find_map(|include| file_name(path.strip_prefix(include).ok()?))
    }

    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        for include in &self.includes {
            let path = include.join(name);
            // A name that is nothing here is looked for in the next include path (std's look follows links).
            if std::fs::symlink_metadata(&path).is_err() {
                continue;
            }
            let refuse = |why: String| protox::Error::new(format!("'{}' ({name}): {why}", path.display()));
            let text =
                crate::base::bounded::read_text_io(&path, crate::base::bounded::PROTO).map_err(|e| match e.kind() {
                    std::io::ErrorKind::InvalidInput => refuse(e.to_string()),
                    std::io::ErrorKind::InvalidData => refuse("not UTF-8 text; give a .proto file".into()),
                    _ => refuse(format!("cannot read it ({e})")),
                })?;
            // A file that is no .proto at all (`--proto /etc/shadow`): said so, quoting nothing of it (the parser's
            // error would quote its first word).
            let words = ["syntax", "package", "message", "service", "import", "enum", "option"];
            if !text.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| words.contains(&w)) {
                return Err(refuse(
                    "not a .proto file (no syntax, package, message or service in it); give the service's .proto"
                        .into(),
                ));
            }
            if let Some((line, column)) = too_deep(&text) {
                return Err(refuse(format!(
                    "line {line} column {column}: nested more than {MAX_NESTING} deep; a .proto file nests a few \
                     levels"
                )));
            }
            return File::from_source(name, &text);
        }
        self.google.open_file(name)
    }
}

/// A path below an include path as protox names files: its components joined by `/`.
fn file_name(relative: &Path) -> Option<String> {
    let parts: Option<Vec<&str>> = relative
        .components()
        .map(|c| match c {
            std::path::Component::Normal(part) => part.to_str(),
            _ => None,
        })
        .collect();
    parts.filter(|p| !p.is_empty()).map(|p| p.join("/"))
}

/// Where `text` first nests deeper than [`MAX_NESTING`] (1-based line and column), outside strings and comments.
fn too_deep(text: &str) -> Option<(usize, usize)> {
    let (mut depth, mut line, mut column) = (0usize, 1usize, 0usize);
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        column += 1;
        if c == '\n' {
            (line, column) = (line + 1, 0);
        }
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
                column += 1;
            }
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '/') if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        (line, column) = (line + 1, 0);
                        break;
                    }
                }
            }
            (None, '/') if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    column += 1;
                    if c == '\n' {
                        (line, column) = (line + 1, 0);
                    }
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            (None, '{' | '[' | '(' | '<') => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some((line, column));
                }
            }
            (None, '}' | ']' | ')' | '>') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_outside_strings_and_comments() {
        let nested = |n: usize| format!("{}{}", "{ a: ".repeat(n), "}".repeat(n));
        assert_eq!(too_deep(&nested(MAX_NESTING)), None);
        assert_eq!(too_deep(&format!("syntax = \"proto3\";\n{}", nested(MAX_NESTING + 1))), Some((2, 5 * 64 + 1)));
        let quiet = format!("// {}\n/* {} */ \"{}\" '{}'", "{".repeat(99), "[".repeat(99), "(".repeat(99), "\\'{{");
        assert_eq!(too_deep(&quiet), None);
    }

    #[test]
    fn an_option_nesting_thousands_deep_or_an_import_of_a_device_is_one_line_not_an_abort() {
        let dir = tempfile::tempdir().unwrap();
        let deep = format!(
            "syntax = \"proto3\";\nimport \"google/protobuf/descriptor.proto\";\nextend google.protobuf.FileOptions \
             {{ Deep deep = 50000; }}\nmessage Deep {{ Deep d = 1; }}\noption (deep) = {}{};\n",
            "{ d: ".repeat(5000),
            "}".repeat(5000)
        );
        std::fs::write(dir.path().join("deep.proto"), deep).unwrap();
        let e = compile(&dir.path().join("deep.proto"), &[]).unwrap_err().to_string();
        assert!(e.contains("line 5 column") && e.contains("nested more than 64 deep"), "{e}");
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.proto")).unwrap();
        std::fs::write(dir.path().join("a.proto"), "syntax = \"proto3\";\nimport \"zero.proto\";\n").unwrap();
        let e = compile(&dir.path().join("a.proto"), &[]).unwrap_err().to_string();
        assert!(e.contains("zero.proto") && e.contains("not a regular file"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        // A FIFO is refused before it is opened (opening it would wait for a writer forever).
        let fifo = std::ffi::CString::new(dir.path().join("fifo.proto").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path only.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        std::fs::write(dir.path().join("b.proto"), "syntax = \"proto3\";\nimport \"fifo.proto\";\n").unwrap();
        let e = compile(&dir.path().join("b.proto"), &[]).unwrap_err().to_string();
        assert!(e.contains("fifo.proto") && e.contains("not a regular file"), "{e}");
        // A file that is no .proto: said so, none of its words quoted.
        std::fs::write(dir.path().join("shadow"), "root:x:0:0:s3cret-hash\n").unwrap();
        let e = compile(&dir.path().join("shadow"), &[]).unwrap_err().to_string();
        assert!(e.contains("not a .proto file") && !e.contains("root") && !e.contains("s3cret"), "{e}");
    }
}
