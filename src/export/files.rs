//! Where output files go and how they are written: standard output by its spellings, links followed, devices in
//! place, regular files whole or not at all (a temporary file and a rename, new ones 0600), and the checks made
//! before the load so an early exit leaves no file behind.

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

/// Where an output path leads, once looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// `-`, `/dev/stdout`, `/dev/fd/1`: standard output.
    Stdout,
    /// A device, FIFO or socket: opened and written where it is. Renaming over it would replace the device node
    /// (as root, `--json /dev/null` replaced /dev/null with a regular file).
    InPlace(PathBuf),
    /// A regular file, or none yet: written through a temporary file beside it and a rename.
    Atomic(PathBuf),
}

/// The spellings of standard output. They are recognised by name, before links are followed, because
/// /dev/stdout leads to whatever fd 1 is (a terminal, a pipe) and a pipe has no path to open.
pub fn is_stdout(path: &Path) -> bool {
    matches!(path.to_str(), Some("-" | "/dev/stdout" | "/dev/fd/1" | "/proc/self/fd/1"))
}

/// Follows symbolic links to the path that would be written: writing to a link writes its target, never
/// replaces the link. A dangling link leads to the path of its (absent) target.
pub fn resolve_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    // As the kernel does (ELOOP), give up after 40 links rather than loop forever on a cycle.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(p),
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// Where `path` leads: standard output, a file written in place, or one written atomically. A directory is an
/// error.
pub fn destination(path: &Path) -> std::io::Result<Destination> {
    if is_stdout(path) {
        return Ok(Destination::Stdout);
    }
    let real = resolve_links(path)?;
    match std::fs::metadata(&real) {
        Ok(m) if m.is_dir() => Err(std::io::Error::new(ErrorKind::IsADirectory, "it is a directory")),
        Ok(m) if m.is_file() => Ok(Destination::Atomic(real)),
        Ok(_) => Ok(Destination::InPlace(real)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Destination::Atomic(real)),
        Err(e) => Err(e),
    }
}

/// Writes `content` to `path`: a regular file through a temporary file beside it and a rename, so a reader (or
/// a full disk) never sees half a file, only the previous complete version or the new one; a symbolic link by
/// writing its target the same way; a device or FIFO in place; `-` and `/dev/stdout` to standard output.
pub fn write_atomically(path: &Path, content: &str) -> std::io::Result<()> {
    write_bytes_atomically(path, content.as_bytes())
}

/// [`write_atomically`] for bytes that need not be text (a PNG image).
pub fn write_bytes_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    write_with_mode(path, content, 0o600)
}

/// [`write_bytes_atomically`] for what is made to be shared, a report's page or a chart: it holds no secret (every
/// text in it is scrubbed), so a new file takes the user's umask (0644 with the usual 022) and a web server can
/// serve it (0600 answered 403). Results and logs stay 0600: they may hold what a user marked secret.
pub fn write_shareable_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    write_with_mode(path, content, 0o666)
}

fn write_with_mode(path: &Path, content: &[u8], mode: u32) -> std::io::Result<()> {
    match destination(path)? {
        Destination::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(content)?;
            out.flush()
        }
        Destination::InPlace(real) => {
            let mut f = std::fs::OpenOptions::new().write(true).open(real)?;
            f.write_all(content)?;
            f.flush()
        }
        Destination::Atomic(real) => replace_file(&real, content, mode),
    }
}

/// Opens `path` for a file written as the run goes (the HDR log): a regular file created or truncated (a new one
/// 0600), a link's target, a device or FIFO in place, standard output through its descriptor. Not atomic: a
/// reader sees the rows written so far, and a killed run keeps them.
pub fn open_stream(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    match destination(path)? {
        Destination::Stdout => std::fs::OpenOptions::new().write(true).open("/proc/self/fd/1"),
        Destination::InPlace(real) => std::fs::OpenOptions::new().write(true).open(real),
        Destination::Atomic(real) => {
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(real)
        }
    }
}

/// The temporary file beside `real`: hidden, and named after the process so two hakaru runs writing the same
/// file do not write each other's temporary file.
fn temporary_beside(real: &Path) -> PathBuf {
    let name = real.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    real.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

fn replace_file(real: &Path, content: &[u8], mode: u32) -> std::io::Result<()> {
    let tmp = temporary_beside(real);
    let written = (|| {
        // A new file is the user's alone (0600): results carry target names and what the run saw of them. The
        // mode is the file's from its creation, never a moment readable by others.
        let mut f = {
            use std::os::unix::fs::OpenOptionsExt as _;
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode).open(&tmp)?
        };
        f.write_all(content)?;
        // The file replaced keeps its permissions (a result made readable to a group stays so).
        if let Ok(old) = std::fs::metadata(real) {
            f.set_permissions(old.permissions())?;
        }
        f.sync_all()?;
        std::fs::rename(&tmp, real)
    })();
    if written.is_err() {
        // A failed write leaves no temporary file behind.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Checks, without creating or changing anything, that `path` can be written: standard output, a writable device
/// or FIFO, a writable regular file, or an absent one in a writable directory. So a run that fails before its
/// results exist (a bad flag, a closed port) leaves no empty file behind.
pub fn check_output(path: &Path) -> std::io::Result<()> {
    match destination(path)? {
        Destination::Stdout => Ok(()),
        Destination::InPlace(real) => access(&real, libc::W_OK),
        Destination::Atomic(real) => {
            let dir = match real.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            };
            if !std::fs::metadata(&dir)?.is_dir() {
                return Err(std::io::Error::new(
                    ErrorKind::NotADirectory,
                    format!("{} is not a directory", dir.display()),
                ));
            }
            // The temporary file is created in the directory and renamed there.
            access(&dir, libc::W_OK | libc::X_OK)?;
            if real.exists() { access(&real, libc::W_OK) } else { Ok(()) }
        }
    }
}

/// What an output path names, so that two spellings of one file (`a`, `./a`, a link to `a`) compare equal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputId {
    Stdout,
    /// Device and inode of a file that exists.
    Inode(u64, u64),
    /// The canonical path of a file not there yet.
    Path(PathBuf),
}

/// The identity of the file `path` leads to.
pub fn output_id(path: &Path) -> std::io::Result<OutputId> {
    use std::os::unix::fs::MetadataExt;
    if is_stdout(path) {
        return Ok(OutputId::Stdout);
    }
    let real = resolve_links(path)?;
    match std::fs::metadata(&real) {
        Ok(m) => Ok(OutputId::Inode(m.dev(), m.ino())),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let dir = match real.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            let name = real.file_name().ok_or_else(|| std::io::Error::other("no file name"))?;
            Ok(OutputId::Path(std::fs::canonicalize(dir)?.join(name)))
        }
        Err(e) => Err(e),
    }
}

fn access(path: &Path, mode: libc::c_int) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: `c` is a valid NUL-terminated string that lives across the call.
    if unsafe { libc::access(c.as_ptr(), mode) } == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdout_spellings_links_and_devices_are_told_apart() {
        for p in ["-", "/dev/stdout", "/dev/fd/1"] {
            assert_eq!(destination(Path::new(p)).unwrap(), Destination::Stdout);
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.json");
        assert_eq!(destination(&file).unwrap(), Destination::Atomic(file.clone()));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("r.json", &link).unwrap();
        assert_eq!(destination(&link).unwrap(), Destination::Atomic(file.clone()));
        let null = dir.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        assert_eq!(destination(&null).unwrap(), Destination::InPlace("/dev/null".into()));
        assert!(destination(dir.path()).is_err());
        std::fs::write(&file, "x").unwrap();
        assert_eq!(output_id(&file).unwrap(), output_id(&link).unwrap());
    }
}
