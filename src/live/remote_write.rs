//! Prometheus remote-write 1.0's body: a `WriteRequest` of `TimeSeries` (labels sorted by name, one sample each) in
//! protobuf, compressed with snappy's block format. Four tiny messages, written by hand: a generated encoder (prost
//! and its derive macro) would bring a proc-macro crate into the build for forty lines of varints.
//!
//! ```text
//! message WriteRequest { repeated TimeSeries timeseries = 1; }
//! message TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//! message Label        { string name = 1; string value = 2; }
//! message Sample       { double value = 1; int64 timestamp = 2; }
//! ```

/// One series and its sample: `labels` hold `__name__`; they are sorted when encoded.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// The snappy-compressed protobuf body of a push of `series`, every sample at `timestamp_ms` (Unix milliseconds).
pub fn body(series: &[Series], timestamp_ms: i64) -> Vec<u8> {
    let proto = encode(series, timestamp_ms);
    // Compressing a few kilobytes of our own bytes cannot fail; an empty body would be refused by the receiver.
    snap::raw::Encoder::new().compress_vec(&proto).unwrap_or_default()
}

/// The `WriteRequest` in protobuf.
pub fn encode(series: &[Series], timestamp_ms: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(series.len() * 96);
    let mut ts = Vec::new();
    let mut item = Vec::new();
    for s in series {
        ts.clear();
        let mut labels: Vec<&(String, String)> = s.labels.iter().collect();
        labels.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, value) in labels {
            item.clear();
            bytes_field(&mut item, 1, name.as_bytes());
            bytes_field(&mut item, 2, value.as_bytes());
            bytes_field(&mut ts, 1, &item);
        }
        item.clear();
        key(&mut item, 1, 1);
        item.extend_from_slice(&s.value.to_le_bytes());
        key(&mut item, 2, 0);
        varint(&mut item, timestamp_ms as u64);
        bytes_field(&mut ts, 2, &item);
        bytes_field(&mut out, 1, &ts);
    }
    out
}

/// A field's key: its number and wire type (0 varint, 1 fixed 64 bits, 2 length-delimited).
fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, u64::from(field << 3 | u32::from(wire)));
}

fn bytes_field(out: &mut Vec<u8>, field: u32, data: &[u8]) {
    key(out, field, 2);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_encodes_as_protobuf_with_sorted_labels() {
        let s = Series { labels: vec![("job".into(), "a".into()), ("__name__".into(), "up".into())], value: 1.0 };
        let got = encode(&[s], 300);
        let want: Vec<u8> = [
            &[0x0a, 0x28][..],         // timeseries, 40 bytes
            &[0x0a, 0x0e, 0x0a, 0x08], // label, name: 8 bytes
            b"__name__",
            &[0x12, 0x02],
            b"up",
            &[0x0a, 0x08, 0x0a, 0x03], // label, name: 3 bytes
            b"job",
            &[0x12, 0x01],
            b"a",
            &[0x12, 0x0c, 0x09], // sample, value: fixed64
            &1.0f64.to_le_bytes(),
            &[0x10, 0xac, 0x02], // timestamp 300 as a varint
        ]
        .concat();
        assert_eq!(got, want);
    }

    #[test]
    fn the_body_is_snappy_of_the_protobuf() {
        let s = Series { labels: vec![("__name__".into(), "x".into())], value: 2.5 };
        let body = body(std::slice::from_ref(&s), 1);
        assert_eq!(snap::raw::Decoder::new().decompress_vec(&body).unwrap(), encode(&[s], 1));
    }
}
