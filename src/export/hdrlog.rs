//! `--hdr-log`: HdrHistogram's interval log (`.hlog`), the record wrk2, cassandra-stress and jHiccup write and
//! HistogramLogAnalyzer and every HdrHistogram library read: a header (`#[StartTime: ...]`, `#[BaseTime: ...]`, a
//! legend), then a row per window and histogram, `Tag=corrected,start,length,max,HISTFAAA...` (V2, compressed).
//!
//! Rows are written as windows complete and flushed at once, so the file grows with the run (a 24 h run at 1 s
//! costs no memory here) and a killed run keeps every window written until then. The rows themselves come from
//! the hdrhistogram crate's interval log writer; the legend line, which it does not write, is Java's.

use std::fs::File;
use std::io::{self, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};

use crate::metrics::{LatencyHistogram, Window};

/// The tag of the latency from the intended send time (what the document's `latency` holds).
pub const TAG_CORRECTED: &str = "corrected";
/// The tag of the latency from the actual send (an open loop's `service`).
pub const TAG_SERVICE: &str = "service";

/// An interval log being written.
pub struct HdrLog {
    path: PathBuf,
    out: BufWriter<File>,
    serializer: V2DeflateSerializer,
    /// `#[BaseTime]`: every row's start counts from here (the log's creation, just before the first step).
    base: SystemTime,
    /// An empty histogram, for a window in which nothing succeeded (a stall shows as an empty row).
    empty: hdrhistogram::Histogram<u64>,
    /// Before each row's tag: the step's own name and a dot when steps are tagged apart (a sweep's), else empty.
    prefix: String,
}

impl HdrLog {
    /// Creates (or truncates) the file and writes the header.
    pub fn create(path: &Path) -> io::Result<HdrLog> {
        let file = crate::export::files::open_stream(path)?;
        let mut out = BufWriter::new(file);
        let base = SystemTime::now();
        let mut serializer = V2DeflateSerializer::new();
        IntervalLogWriterBuilder::new()
            .add_comment(&format!("[Logged with hakaru {}]", env!("CARGO_PKG_VERSION")))
            .add_comment("[Histogram log format version 1.3]")
            .add_comment("[Values and Interval_Max in microseconds]")
            .add_comment(&format!(
                "[Tags: {TAG_CORRECTED} = latency from the intended send, {TAG_SERVICE} = from the actual send]"
            ))
            .with_start_time(base)
            .with_base_time(base)
            .begin_log_with(&mut out, &mut serializer)?;
        writeln!(out, "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"")?;
        out.flush()?;
        let empty = hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static bounds are valid");
        Ok(HdrLog { path: path.to_path_buf(), out, serializer, base, empty, prefix: String::new() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A comment line naming the step whose windows follow; with `tagged` (the steps of a sweep or a capacity
    /// search, each its own load), its rows' tags begin with the step's label (`c=10.corrected`), so that a reader
    /// shows each step as a series of its own and its own percentiles, as cassandra-stress tags each operation.
    pub fn step(&mut self, label: &str, tagged: bool) -> io::Result<()> {
        let label: String = label.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        writeln!(self.out, "#[Step: {label}]")?;
        // A tag holds no comma, space or line break (every reader splits the row on commas).
        self.prefix = match tagged {
            true => label.chars().map(|c| if c == ',' || c.is_whitespace() { '_' } else { c }).chain(['.']).collect(),
            false => String::new(),
        };
        self.out.flush()
    }

    /// The rows of one window: the corrected latency, and the service time when the step measures it.
    pub fn window(&mut self, w: &Window, service: bool) -> io::Result<()> {
        let start = w.at.duration_since(self.base).unwrap_or(Duration::ZERO);
        self.row(&w.accum.latency, start, w.length, TAG_CORRECTED)?;
        if service {
            self.row(&w.accum.service, start, w.length, TAG_SERVICE)?;
        }
        self.out.flush()
    }

    fn row(&mut self, h: &LatencyHistogram, start: Duration, length: Duration, tag: &str) -> io::Result<()> {
        let h = h.hdr().unwrap_or(&self.empty);
        let tag = format!("{}{tag}", self.prefix);
        let mut writer = IntervalLogWriterBuilder::new().begin_log_with(&mut self.out, &mut self.serializer)?;
        writer.write_histogram(h, start, length, Tag::new(&tag)).map_err(|e| io::Error::other(format!("{e:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{WindowAccum, WindowSummary};

    #[test]
    fn rows_follow_the_header_and_read_back_with_their_tags() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.hlog");
        let mut log = HdrLog::create(&path).unwrap();
        let mut accum = WindowAccum::new(true);
        for v in [100, 200, 300] {
            accum.latency.record(v);
            accum.service.record(v / 2);
        }
        let length = Duration::from_secs(1);
        let w = Window {
            summary: WindowSummary::from_accum(0.0, length, &accum),
            accum,
            length,
            at: log.base + Duration::from_secs(2),
            sent_earlier: Vec::new(),
        };
        log.step("run", false).unwrap();
        log.window(&w, true).unwrap();
        log.step("rate=10 a,b", true).unwrap();
        log.window(&w, false).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("#[Step: rate=10 a,b]"), "{text}");
        assert!(text.contains("#[StartTime: ") && text.contains("#[BaseTime: "), "{text}");
        assert!(text.contains("\"StartTimestamp\",\"Interval_Length\""), "{text}");
        let rows: Vec<_> = hdrhistogram::serialization::interval_log::IntervalLogIterator::new(text.as_bytes())
            .filter_map(|e| match e {
                Ok(hdrhistogram::serialization::interval_log::LogEntry::Interval(i)) => {
                    Some((i.tag().map(|t| t.as_str().to_string()), i.start_timestamp(), i.duration(), i.max()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert_eq!(rows[0].0.as_deref(), Some(TAG_CORRECTED));
        assert_eq!(rows[1].0.as_deref(), Some(TAG_SERVICE));
        // A tagged step's rows: its label, with what a tag cannot hold made '_', then the histogram's tag.
        assert_eq!(rows[2].0.as_deref(), Some("rate=10_a_b.corrected"));
        assert_eq!(rows[0].1, Duration::from_secs(2));
        assert_eq!(rows[0].2, length);
        assert!((rows[0].3 - 300.0).abs() < 1.0, "max in us: {}", rows[0].3);
    }
}
