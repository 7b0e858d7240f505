//! Which key a request uses: memtier's key patterns (uniform, Gaussian, sequential, parallel, zipfian) and the
//! zipfian generator of YCSB, so the same skew gives the same hit rates as in those tools.

use rand::RngExt as _;
use rand_chacha::ChaCha8Rng;

/// memtier's `--key-pattern` letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPattern {
    /// R: uniform over the key space.
    Random,
    /// G: Gaussian around the middle of the key space (standard deviation a sixth of it, as memtier's default).
    Gaussian,
    /// S: every client walks the same keys in order, from the first.
    Sequential,
    /// P: each client walks its own part of the key space in order.
    Parallel,
    /// Z: zipfian (constant 0.99, YCSB's), key 0 the most requested.
    Zipf,
}

impl KeyPattern {
    pub fn parse(letter: &str) -> Option<KeyPattern> {
        Some(match letter.trim().to_ascii_uppercase().as_str() {
            "R" => KeyPattern::Random,
            "G" => KeyPattern::Gaussian,
            "S" => KeyPattern::Sequential,
            "P" => KeyPattern::Parallel,
            "Z" => KeyPattern::Zipf,
            _ => return None,
        })
    }
}

/// YCSB's zipfian constant.
pub const ZIPF_THETA: f64 = 0.99;

/// Zipfian numbers in `0..n`, 0 the most frequent: the method of Gray et al. ("Quickly generating billion-record
/// synthetic databases", 1994), as YCSB's ZipfianGenerator draws them, so key frequencies match YCSB's.
#[derive(Clone, Debug)]
pub struct Zipfian {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    /// Computing zeta(n) costs n powers once (about 20 ms per million keys).
    pub fn new(n: u64, theta: f64) -> Zipfian {
        let n = n.max(1);
        let zeta = |n: u64| (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = zeta(n);
        let zeta2 = zeta(2.min(n));
        let eta = if n > 1 { (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan) } else { 0.0 };
        Zipfian { n, theta, alpha: 1.0 / (1.0 - theta), zetan, eta }
    }

    pub fn sample(&self, rng: &mut ChaCha8Rng) -> u64 {
        let u: f64 = rng.random();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.n - 1);
        }
        ((self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64).min(self.n - 1)
    }

    /// YCSB's ScrambledZipfianGenerator: zipfian over 10^10 items, whose zeta YCSB gives as a constant (a sum of
    /// 10^10 terms is not computed at each start); the item is then hashed onto the records, so every record can
    /// be drawn and the popular ones are spread over the key space.
    pub fn scrambled() -> Zipfian {
        const ITEMS: u64 = 10_000_000_000;
        const ZETAN: f64 = 26.469_028_201_783_02;
        let zeta2 = 1.0 + 0.5f64.powf(ZIPF_THETA);
        let eta = (1.0 - (2.0 / ITEMS as f64).powf(1.0 - ZIPF_THETA)) / (1.0 - zeta2 / ZETAN);
        Zipfian { n: ITEMS, theta: ZIPF_THETA, alpha: 1.0 / (1.0 - ZIPF_THETA), zetan: ZETAN, eta }
    }

    /// The probability that [`sample`](Self::sample) draws item `i`: exactly Zipf's for items 0 and 1, and
    /// close to it after (Gray's method approximates the middle ranks: item 2 comes about 15 % more often than
    /// Zipf's law says, as in YCSB).
    pub fn probability(&self, i: u64) -> f64 {
        let first = 1.0 / self.zetan;
        let curve_from = (1.0 + 0.5f64.powf(self.theta)) / self.zetan;
        // The u at which the curve n (eta u - eta + 1)^alpha reaches i.
        let u_at = |i: u64| ((i as f64 / self.n as f64).powf(1.0 - self.theta) - 1.0) / self.eta + 1.0;
        let special = match i {
            0 => first,
            1 => curve_from - first,
            _ => 0.0,
        };
        let (lo, hi) = (u_at(i).max(curve_from), u_at(i + 1).min(1.0));
        special + (hi - lo).max(0.0)
    }
}

/// FNV-1a, 64 bits: YCSB's hash for `insertorder=hashed` keys and for scrambling zipfian ranks over the keys.
pub fn fnv64(mut value: u64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for _ in 0..8 {
        hash ^= value & 0xff;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        value >>= 8;
    }
    hash
}

/// One client's key chooser over `0..keys`.
#[derive(Clone, Debug)]
pub struct KeyChooser {
    pattern: KeyPattern,
    keys: u64,
    /// Sequential and parallel: the next key, and the part walked (parallel: this client's).
    next: u64,
    first: u64,
    len: u64,
    zipf: Option<std::sync::Arc<Zipfian>>,
}

impl KeyChooser {
    /// `client` of `clients`: parallel walks split the key space among them.
    pub fn new(
        pattern: KeyPattern,
        keys: u64,
        client: usize,
        clients: usize,
        zipf: Option<std::sync::Arc<Zipfian>>,
    ) -> Self {
        let keys = keys.max(1);
        let (first, len) = match pattern {
            KeyPattern::Parallel => {
                let clients = clients.max(1) as u64;
                let c = (client as u64) % clients;
                let first = keys * c / clients;
                (first, (keys * (c + 1) / clients - first).max(1))
            }
            _ => (0, keys),
        };
        KeyChooser { pattern, keys, next: 0, first, len, zipf }
    }

    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> u64 {
        match self.pattern {
            KeyPattern::Random => rng.random_range(0..self.keys),
            KeyPattern::Gaussian => {
                // Box-Muller; values outside the key space are drawn again (memtier clips by redrawing too).
                let (mid, sd) = (self.keys as f64 / 2.0, (self.keys as f64 / 6.0).max(1.0));
                loop {
                    let (u1, u2): (f64, f64) = (rng.random(), rng.random());
                    let z = (-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                    let k = (mid + z * sd).floor();
                    if k >= 0.0 && k < self.keys as f64 {
                        return k as u64;
                    }
                }
            }
            KeyPattern::Sequential | KeyPattern::Parallel => {
                let k = self.first + self.next % self.len;
                self.next += 1;
                k
            }
            KeyPattern::Zipf => match &self.zipf {
                Some(z) => z.sample(rng),
                None => 0,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn zipfian_frequencies_match_the_distribution() {
        // Chi-square against the generator's own distribution over the 20 most frequent ranks plus the rest:
        // 20 degrees of freedom, 0.001 critical value 45.3.
        let z = Zipfian::new(1000, ZIPF_THETA);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let draws = 200_000;
        let mut counts = vec![0u64; 1000];
        for _ in 0..draws {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        let mut chi = 0.0;
        let mut rest_seen = 0;
        let mut rest_p = 0.0;
        for (i, &c) in counts.iter().enumerate() {
            let p = z.probability(i as u64);
            if i < 20 {
                let e = p * draws as f64;
                chi += (c as f64 - e).powi(2) / e;
            } else {
                rest_seen += c;
                rest_p += p;
            }
        }
        let e = rest_p * draws as f64;
        chi += (rest_seen as f64 - e).powi(2) / e;
        assert!(chi < 45.3, "chi-square {chi}");
        // Ranks are ordered by frequency, and past the first few they follow Zipf's law 1 / (i + 1)^0.99.
        assert!(counts[0] > counts[9] && counts[9] > counts[99]);
        let total: f64 = (1..=1000).map(|i| 1.0 / (i as f64).powf(ZIPF_THETA)).sum();
        for i in [0usize, 1, 9, 19, 49] {
            let zipf = draws as f64 / ((i + 1) as f64).powf(ZIPF_THETA) / total;
            assert!((counts[i] as f64 / zipf - 1.0).abs() < 0.1, "rank {i}: {} against {zipf:.0}", counts[i]);
        }
        let p_sum: f64 = (0..1000).map(|i| z.probability(i)).sum();
        assert!((p_sum - 1.0).abs() < 1e-9, "{p_sum}");
    }

    #[test]
    fn parallel_walks_split_the_keys_and_sequential_walks_share_them() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut a = KeyChooser::new(KeyPattern::Parallel, 10, 0, 2, None);
        let mut b = KeyChooser::new(KeyPattern::Parallel, 10, 1, 2, None);
        let a: Vec<u64> = (0..6).map(|_| a.next(&mut rng)).collect();
        let b: Vec<u64> = (0..6).map(|_| b.next(&mut rng)).collect();
        assert_eq!(a, [0, 1, 2, 3, 4, 0]);
        assert_eq!(b, [5, 6, 7, 8, 9, 5]);
        let mut s = KeyChooser::new(KeyPattern::Sequential, 3, 1, 2, None);
        assert_eq!((0..4).map(|_| s.next(&mut rng)).collect::<Vec<_>>(), [0, 1, 2, 0]);
        let mut g = KeyChooser::new(KeyPattern::Gaussian, 100, 0, 1, None);
        let mean = (0..10_000).map(|_| g.next(&mut rng) as f64).sum::<f64>() / 10_000.0;
        assert!((mean - 50.0).abs() < 2.0, "{mean}");
    }
}
