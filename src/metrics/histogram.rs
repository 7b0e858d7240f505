//! The one latency histogram type: HdrHistogram in microseconds, mergeable across threads, windows and runs.

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};

/// Highest latency recorded exactly: one hour, far above any timeout; larger values are clamped to it.
const HIGHEST_MICROS: u64 = 3_600_000_000;

/// The percentiles every summary reports, in this order.
pub const REPORTED_PERCENTILES: [f64; 7] = [50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99];

/// Latencies in microseconds. Memory is fixed by the range and precision, never by the number of samples, and is
/// taken only at the first sample: HdrHistogram zeroes its whole count array (about 190 kB at 3 digits) when made,
/// so every page of it is resident at once, and a step holds several that often stay empty (failures, the service
/// time of a closed loop).
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    digits: u8,
    inner: Option<Histogram<u64>>,
}

impl LatencyHistogram {
    /// Full precision (3 significant digits): used for the figures of a step.
    pub fn new() -> Self {
        Self { digits: 3, inner: None }
    }

    /// Coarse precision (2 significant digits, about 1 % error) for per-second windows, which are many.
    pub fn coarse() -> Self {
        Self { digits: 2, inner: None }
    }

    /// Significant digits kept: 3 ([`new`](Self::new)) or 2 ([`coarse`](Self::coarse)).
    pub fn digits(&self) -> u8 {
        self.digits
    }

    /// The HdrHistogram inside, None until the first sample: for writers of HdrHistogram's own formats.
    pub fn hdr(&self) -> Option<&Histogram<u64>> {
        self.inner.as_ref()
    }

    fn empty(digits: u8) -> Histogram<u64> {
        Histogram::new_with_bounds(1, HIGHEST_MICROS, digits).expect("static bounds are valid")
    }

    fn counts(&mut self) -> &mut Histogram<u64> {
        let digits = self.digits;
        self.inner.get_or_insert_with(|| Self::empty(digits))
    }

    /// Records one latency; values outside the range are clamped rather than lost.
    pub fn record(&mut self, micros: u64) {
        let _ = self.counts().record(micros.clamp(1, HIGHEST_MICROS));
    }

    /// Records `n` latencies of one value (a count kept aside, added at once).
    pub fn record_n(&mut self, micros: u64, n: u64) {
        if n > 0 {
            let _ = self.counts().record_n(micros.clamp(1, HIGHEST_MICROS), n);
        }
    }

    /// Adds every sample of `other` (of any precision) into this one.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        let Some(theirs) = other.inner.as_ref().filter(|h| !h.is_empty()) else { return };
        if self.inner.is_none() && other.digits == self.digits {
            self.inner = Some(theirs.clone());
            return;
        }
        // `add` can only fail when other's range exceeds ours; both share HIGHEST_MICROS.
        let _ = self.counts().add(theirs);
    }

    pub fn count(&self) -> u64 {
        self.inner.as_ref().map_or(0, Histogram::len)
    }

    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    pub fn min(&self) -> u64 {
        self.inner.as_ref().filter(|h| !h.is_empty()).map_or(0, Histogram::min)
    }

    pub fn max(&self) -> u64 {
        self.inner.as_ref().map_or(0, Histogram::max)
    }

    pub fn mean(&self) -> f64 {
        self.inner.as_ref().map_or(0.0, Histogram::mean)
    }

    pub fn stdev(&self) -> f64 {
        self.inner.as_ref().map_or(0.0, Histogram::stdev)
    }

    /// The value at percentile `p` (0..=100); 0 for an empty histogram.
    pub fn percentile(&self, p: f64) -> u64 {
        self.inner.as_ref().filter(|h| !h.is_empty()).map_or(0, |h| h.value_at_quantile(p / 100.0))
    }

    /// Every recorded value (the highest of its bucket) with its count, ascending: what a script's `done` reads.
    pub fn recorded(&self) -> Vec<(u64, u64)> {
        self.inner.as_ref().map_or_else(Vec::new, |h| {
            h.iter_recorded().map(|v| (h.highest_equivalent(v.value_iterated_to()), v.count_at_value())).collect()
        })
    }

    /// How many samples are at most each of `bounds` (microseconds, ascending): a classic histogram's cumulative
    /// buckets. A sample counts at the highest value equivalent to it, as [`percentile`](Self::percentile) reads it,
    /// so a percentile falls in the bucket that holds its rank.
    pub fn cumulative_counts(&self, bounds: &[u64]) -> Vec<u64> {
        let mut out = vec![0; bounds.len()];
        if let Some(h) = &self.inner {
            for v in h.iter_recorded() {
                let i = bounds.partition_point(|b| *b < v.value_iterated_to());
                if let Some(c) = out.get_mut(i) {
                    *c += v.count_at_value();
                }
            }
        }
        for i in 1..out.len() {
            out[i] += out[i - 1];
        }
        out
    }

    /// Empties the histogram, keeping its allocation.
    pub fn reset(&mut self) {
        if let Some(h) = self.inner.as_mut() {
            h.reset();
        }
    }

    /// Buckets for a text or chart histogram: `n` log-spaced bins from min to max, as (upper bound us, count).
    pub fn log_bins(&self, n: usize) -> Vec<(u64, u64)> {
        if self.is_empty() || n == 0 {
            return Vec::new();
        }
        let lo = self.min().max(1) as f64;
        let hi = (self.max().max(1) as f64).max(lo * 1.0001);
        let ratio = (hi / lo).powf(1.0 / n as f64);
        let mut bins: Vec<(u64, u64)> = (1..=n).map(|i| ((lo * ratio.powi(i as i32)).ceil() as u64, 0)).collect();
        let Some(h) = self.inner.as_ref() else { return Vec::new() };
        for v in h.iter_recorded() {
            let value = v.value_iterated_to();
            let idx = bins.iter().position(|(upper, _)| value <= *upper).unwrap_or(n - 1);
            bins[idx].1 += v.count_at_value();
        }
        bins
    }

    /// HdrHistogram V2 encoding, base64: readable by every HdrHistogram implementation.
    pub fn to_base64(&self) -> String {
        let mut bytes = Vec::new();
        let empty;
        let h = match &self.inner {
            Some(h) => h,
            None => {
                empty = Self::empty(self.digits);
                &empty
            }
        };
        V2Serializer::new().serialize(h, &mut bytes).expect("serializing into a Vec cannot fail");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Decodes what [`to_base64`](Self::to_base64) wrote (or any V2 / V2+DEFLATE histogram). The header is judged
    /// before anything is allocated from it: a document is input, and HdrHistogram's own decoder sizes its count
    /// array by the header's range and digits and its payload buffer by the header's length (4 GiB from 40 bytes).
    pub fn from_base64(text: &str) -> Result<Self, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| format!("histogram is not base64: {e}"))?;
        let plain = plain_v2(bytes)?;
        let decoded: Histogram<u64> = Deserializer::new()
            .deserialize(&mut plain.as_slice())
            .map_err(|e| format!("histogram is not HdrHistogram V2: {e}"))?;
        if decoded.low() == 1 && decoded.high() == HIGHEST_MICROS && decoded.sigfig() == 3 {
            // Ours (the usual case): kept as decoded, not copied into a second full-size histogram.
            return Ok(Self { digits: 3, inner: Some(decoded) });
        }
        let mut h = Self::new();
        h.counts().add(&decoded).map_err(|e| format!("histogram range too large: {e:?}"))?;
        Ok(h)
    }
}

/// HdrHistogram V2's cookies: plain, and DEFLATE-compressed around a plain one.
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// A plain V2 header: cookie, payload length, normalizing offset, digits (4 bytes each), lowest, highest, ratio.
const V2_HEADER: usize = 40;
/// The most counts a histogram read back may hold (8 MiB of them): any range at 3 digits needs at most 66,560;
/// HdrHistogram allows 5 digits, whose widest range needs 8.4 million.
const MAX_COUNTS: u64 = 1 << 20;
/// A plain V2 histogram is at most its header and 9 bytes (the longest varint) per count.
const MAX_PLAIN: u64 = V2_HEADER as u64 + 9 * MAX_COUNTS;

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The plain V2 bytes of an encoded histogram, its header checked: a compressed one inflated no further than a
/// plain one may be long, the payload length the bytes that follow, the range and digits such that its count array
/// has at most [`MAX_COUNTS`] counts.
fn plain_v2(bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    if bytes.len() < 8 {
        return Err(format!("histogram is {} bytes, shorter than a V2 header", bytes.len()));
    }
    let bytes = match be_u32(&bytes, 0) {
        V2_COOKIE => bytes,
        V2_COMPRESSED_COOKIE => {
            use std::io::Read as _;
            let len = be_u32(&bytes, 4) as usize;
            if len != bytes.len() - 8 {
                return Err(format!("histogram says {len} compressed bytes follow, {} do", bytes.len() - 8));
            }
            let mut plain = Vec::new();
            flate2::read::ZlibDecoder::new(&bytes[8..])
                .take(MAX_PLAIN + 1)
                .read_to_end(&mut plain)
                .map_err(|e| format!("histogram is not HdrHistogram V2: its compressed bytes do not inflate ({e})"))?;
            if plain.len() as u64 > MAX_PLAIN {
                return Err(format!("histogram inflates past {MAX_PLAIN} bytes, more than any histogram has"));
            }
            if plain.len() < 4 || be_u32(&plain, 0) != V2_COOKIE {
                return Err("histogram is not HdrHistogram V2: its inflated bytes have no V2 cookie".into());
            }
            plain
        }
        other => return Err(format!("histogram is not HdrHistogram V2 (cookie {other:#x})")),
    };
    if bytes.len() < V2_HEADER {
        return Err(format!("histogram is {} bytes, shorter than a V2 header ({V2_HEADER})", bytes.len()));
    }
    let payload = be_u32(&bytes, 4) as usize;
    if payload != bytes.len() - V2_HEADER {
        return Err(format!(
            "histogram says {payload} bytes of counts follow its header, {} do",
            bytes.len() - V2_HEADER
        ));
    }
    let (digits, low, high) = (be_u32(&bytes, 12), be_u64(&bytes, 16), be_u64(&bytes, 24));
    if !(1..=5).contains(&digits) {
        return Err(format!("histogram has {digits} significant digits; HdrHistogram has 1 to 5"));
    }
    if low < 1 || high < low.saturating_mul(2) {
        return Err(format!(
            "histogram's range {low}..{high} is not a range (lowest at least 1, highest at least twice it)"
        ));
    }
    let counts = count_len(digits, low, high);
    if counts > MAX_COUNTS {
        return Err(format!(
            "histogram's range {low}..{high} at {digits} digits needs {counts} counts, more than {MAX_COUNTS}"
        ));
    }
    Ok(bytes)
}

/// The length of HdrHistogram's count array for a range and digits, as `Histogram::new_with_bounds` sizes it.
fn count_len(digits: u32, low: u64, high: u64) -> u64 {
    let largest_single_unit = 2 * 10u64.pow(digits);
    let sub_bucket_count_magnitude = (largest_single_unit as f64).log2().ceil() as u32;
    let sub_bucket_count = 1u64 << sub_bucket_count_magnitude.max(1);
    let unit_magnitude = 63 - low.leading_zeros();
    // Buckets until the smallest value a bucket cannot hold passes `high`.
    let mut smallest_untrackable = (sub_bucket_count as u128) << unit_magnitude;
    let mut buckets = 1u64;
    while smallest_untrackable <= high as u128 {
        smallest_untrackable <<= 1;
        buckets += 1;
    }
    (buckets + 1) * (sub_bucket_count / 2)
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cumulative_counts_hold_each_sample_at_its_first_bound_and_the_percentile_in_its_bucket() {
        let mut h = LatencyHistogram::new();
        for us in [50, 100, 101, 900, 5_000, 70_000_000] {
            h.record(us);
        }
        assert_eq!(h.cumulative_counts(&[100, 1_000, 10_000]), vec![2, 4, 5]);
        let p = h.percentile(50.0);
        let at = h.cumulative_counts(&[p]);
        assert!(at[0] >= 3, "{p}: {at:?}");
    }

    #[test]
    fn percentiles_of_a_uniform_distribution_are_within_precision() {
        let mut h = LatencyHistogram::new();
        for v in 1..=10_000u64 {
            h.record(v);
        }
        assert_eq!(h.count(), 10_000);
        assert_eq!(h.min(), 1);
        let p50 = h.percentile(50.0) as f64;
        assert!((p50 - 5000.0).abs() / 5000.0 < 0.002, "p50 {p50}");
        let p99 = h.percentile(99.0) as f64;
        assert!((p99 - 9900.0).abs() / 9900.0 < 0.002, "p99 {p99}");
        assert!((h.mean() - 5000.5).abs() < 5.0);
    }

    #[test]
    fn merging_two_halves_equals_recording_all() {
        let (mut a, mut b, mut all) = (LatencyHistogram::new(), LatencyHistogram::coarse(), LatencyHistogram::new());
        for v in 1..=1000u64 {
            if v % 2 == 0 {
                a.record(v * 7)
            } else {
                b.record(v * 7)
            }
            all.record(v * 7);
        }
        a.merge(&b);
        assert_eq!(a.count(), all.count());
        assert_eq!(a.max(), all.max());
        let (pa, pall) = (a.percentile(90.0) as f64, all.percentile(90.0) as f64);
        assert!((pa - pall).abs() / pall < 0.011, "{pa} vs {pall}");
    }

    #[test]
    fn base64_round_trip_keeps_every_count() {
        let mut h = LatencyHistogram::new();
        for v in [1u64, 10, 100, 1000, 123_456, 59_000_000] {
            h.record(v);
        }
        let back = LatencyHistogram::from_base64(&h.to_base64()).unwrap();
        assert_eq!(back.count(), 6);
        assert_eq!(back.max(), h.max());
        assert_eq!(back.percentile(50.0), h.percentile(50.0));
    }

    #[test]
    fn out_of_range_values_are_clamped_not_lost() {
        let mut h = LatencyHistogram::new();
        h.record(0);
        h.record(u64::MAX);
        assert_eq!(h.count(), 2);
    }

    #[test]
    fn log_bins_hold_every_sample() {
        let mut h = LatencyHistogram::new();
        for v in 100..2000u64 {
            h.record(v);
        }
        let bins = h.log_bins(10);
        assert_eq!(bins.len(), 10);
        assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), h.count());
    }

    /// A V2 header: payload length, digits, lowest, highest (the rest as HdrHistogram writes it).
    fn header(payload: u32, digits: u32, low: u64, high: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(V2_COOKIE.to_be_bytes());
        b.extend(payload.to_be_bytes());
        b.extend(0u32.to_be_bytes());
        b.extend(digits.to_be_bytes());
        b.extend(low.to_be_bytes());
        b.extend(high.to_be_bytes());
        b.extend(1f64.to_be_bytes());
        b
    }

    fn encoded(b: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(b)
    }

    #[test]
    fn a_crafted_header_is_refused_before_anything_is_allocated_from_it() {
        // 4 GiB of payload announced, none there (HdrHistogram's decoder would size its buffer by it).
        let e = LatencyHistogram::from_base64(&encoded(&header(u32::MAX, 3, 1, HIGHEST_MICROS))).unwrap_err();
        assert_eq!(e, "histogram says 4294967295 bytes of counts follow its header, 0 do");
        // 5 digits over the widest range: 8.4 million counts (64 MiB) for nothing.
        let e = LatencyHistogram::from_base64(&encoded(&header(0, 5, 1, u64::MAX / 2))).unwrap_err();
        assert!(e.contains("more than 1048576"), "{e}");
        for (digits, low, high) in [(0, 1, 100), (6, 1, 100), (3, 0, 100), (3, 10, 15)] {
            let e = LatencyHistogram::from_base64(&encoded(&header(0, digits, low, high))).unwrap_err();
            assert!(e.starts_with("histogram"), "{e}");
        }
        assert!(LatencyHistogram::from_base64(&encoded(&[0x1c, 0x84, 0x93])).is_err());
        // A compressed one that inflates to the same crafted header.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut z, &header(u32::MAX, 3, 1, HIGHEST_MICROS)).unwrap();
        let z = z.finish().unwrap();
        let mut b = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        b.extend((z.len() as u32).to_be_bytes());
        b.extend(z);
        assert!(LatencyHistogram::from_base64(&encoded(&b)).unwrap_err().contains("4294967295"));
        // A header that is fine, with no counts: an empty histogram.
        assert_eq!(LatencyHistogram::from_base64(&encoded(&header(0, 3, 1, HIGHEST_MICROS))).unwrap().count(), 0);
    }

    #[test]
    fn count_len_is_hdrhistograms_own() {
        for (digits, low, high) in
            [(3, 1, HIGHEST_MICROS), (2, 1, HIGHEST_MICROS), (5, 1, 1 << 40), (1, 7, 1000), (4, 1000, u64::MAX / 2)]
        {
            let h = Histogram::<u64>::new_with_bounds(low, high, digits as u8).unwrap();
            assert_eq!(count_len(digits, low, high), h.distinct_values() as u64, "{digits} {low} {high}");
        }
    }
}
