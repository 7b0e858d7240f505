//! Input files read whole, each with a documented cap: a regular file only (a device such as /dev/zero never ends
//! and a FIFO can block before the load forever), at most `cap` bytes, checked before reading and while reading (the
//! file may grow). The caps are in docs/counting.md, "Safety".

use std::io::Read as _;
use std::path::Path;

/// A body (`--body-file`), a data file (`--data`).
pub const BODY: u64 = 64 << 20;
/// A request pattern file (`--patterns`): about 600,000 requests; each becomes prepared bytes in memory.
pub const PATTERNS: u64 = 64 << 20;
/// A `.proto` file, `--proto`'s and each of its imports: real ones are a few hundred KiB at most, and parsing one
/// costs about 200 times its size.
pub const PROTO: u64 = 4 << 20;
/// A study file, a Lua script (`kv --script`, and a wrk script: `-s`).
pub const SMALL: u64 = 1 << 20;
/// An LLM dataset (`hakaru llm --dataset-path`), read as a stream: only the prompts sampled from it are kept, so
/// the cap bounds the time to read it (ShareGPT's largest public file is 642 MiB), not memory.
pub const DATASET: u64 = 4 << 30;
/// The terms of `patterns generate --terms`, and `patterns extract`'s inputs read whole.
pub const TERMS: u64 = 64 << 20;
/// A result document, drnbench CSV or study manifest read back (`compare`, `report`, `chart`, `merge`, `import`).
pub const RESULT: u64 = 256 << 20;

/// Why only regular files are read, for a refusal that says what the file is.
pub const WHY_REGULAR: &str = "a device such as /dev/zero never ends and a FIFO may wait for a writer forever, \
                               so input files are read only when they are regular files";

/// What a file that is not regular is, in words: `a character device`, `a FIFO`, `a directory`.
pub fn kind_of(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a file of no kind hakaru reads"
    }
}

/// `n` bytes for people: `64 MiB`, `1 MiB`.
fn mib(n: u64) -> String {
    format!("{} MiB", n >> 20)
}

/// The bytes of `path`, or why not, in words that name no flag (the caller puts the flag and the file before them).
pub fn read(path: &Path, cap: u64) -> Result<Vec<u8>, String> {
    read_io(path, cap).map_err(|e| match e.kind() {
        // A refusal of this module's own is its words; the system's errors say what failed.
        std::io::ErrorKind::Other | std::io::ErrorKind::InvalidInput => e.to_string(),
        _ => format!("cannot read it ({e}); give a readable file"),
    })
}

/// [`read`] for callers that word I/O errors themselves: a refusal of this module is an error of kind `InvalidInput`
/// whose text is the reason.
pub fn read_io(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    let (mut file, len) = open_io(path, cap)?;
    let mut bytes = Vec::with_capacity(len as usize);
    file.read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(refuse(format!("more than the {} it may have; give a smaller file", mib(cap))));
    }
    Ok(bytes)
}

fn refuse(why: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, why)
}

/// A regular file of at most `cap` bytes opened to be read as a stream (a dataset held only in part), and its
/// length; it gives one byte past the cap at most, so a file that grew is seen (read past `cap`: refuse it).
pub fn open_io(path: &Path, cap: u64) -> std::io::Result<(std::io::Take<std::fs::File>, u64)> {
    // What is looked at is what was opened (no swap between a look by name and the open). Opening a FIFO for
    // reading would wait for a writer: a path that is not a regular file by name is refused before it is opened.
    if !std::fs::metadata(path)?.is_file() {
        return Err(refuse("not a regular file (a device, FIFO or directory); give a regular file".into()));
    }
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refuse("not a regular file (a device, FIFO or directory); give a regular file".into()));
    }
    if meta.len() > cap {
        return Err(refuse(format!(
            "{} bytes, more than the {} it may have; give a smaller file",
            meta.len(),
            mib(cap)
        )));
    }
    // One byte more than the cap: a file that grew since it was looked at is refused, not cut.
    Ok((file.take(cap + 1), meta.len()))
}

/// The next line of a file read as a stream into `line` (cleared first), at most `most` bytes of it and one more
/// (a longer line is cut there: the caller refuses it); false at the end. The error is in words.
pub fn next_line(reader: &mut impl std::io::BufRead, line: &mut Vec<u8>, most: u64) -> Result<bool, String> {
    line.clear();
    use std::io::BufRead as _;
    let n =
        std::io::Read::take(reader, most + 1).read_until(b'\n', line).map_err(|e| format!("cannot read it ({e})"))?;
    Ok(n > 0)
}

/// [`open_io`] with the errors in words, as [`read`] gives them.
pub fn open(path: &Path, cap: u64) -> Result<std::io::Take<std::fs::File>, String> {
    open_io(path, cap).map(|(f, _)| f).map_err(|e| match e.kind() {
        std::io::ErrorKind::Other | std::io::ErrorKind::InvalidInput => e.to_string(),
        _ => format!("cannot read it ({e}); give a readable file"),
    })
}

/// [`read_io`] as UTF-8 text (not UTF-8: an error of kind `InvalidData`, as `std::fs::read_to_string` says it).
pub fn read_text_io(path: &Path, cap: u64) -> std::io::Result<String> {
    String::from_utf8(read_io(path, cap)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "stream did not contain valid UTF-8"))
}

/// [`read`] as UTF-8 text.
pub fn read_text(path: &Path, cap: u64) -> Result<String, String> {
    String::from_utf8(read(path, cap)?).map_err(|_| "not UTF-8 text; convert it to UTF-8 (iconv -t UTF-8)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_directories_and_files_over_the_cap_are_refused_before_reading() {
        assert!(read(Path::new("/dev/zero"), BODY).unwrap_err().starts_with("not a regular file"));
        assert!(read(Path::new("/tmp"), BODY).unwrap_err().starts_with("not a regular file"));
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, vec![b'x'; 2 << 20]).unwrap();
        assert_eq!(read(&f, SMALL).unwrap_err(), "2097152 bytes, more than the 1 MiB it may have; give a smaller file");
        assert_eq!(read(&f, BODY).unwrap().len(), 2 << 20);
        assert!(read(&dir.path().join("none"), BODY).unwrap_err().starts_with("cannot read it"));
    }
}
