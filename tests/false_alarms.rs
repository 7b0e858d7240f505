//! The family of verdicts is honest. Identical targets compared thousands of times (synthetic per-run values from
//! a seeded generator, 5 runs a side, the six metrics of `compare`) raise a false alarm, any faster, slower, more
//! or fewer among the six or any failed `--fail-if`, in at most 5 % of the comparisons; a real 10 % difference is
//! still found with 5 runs a side. Everything goes through `compare_groups` and `judge_fail_ifs`, the code that
//! `compare`, the report and the gates run.

use hakaru::compare::{FailIf, Group, Metric, Sample, Side, Verdict, compare_groups, judge_fail_ifs};
use hakaru::metrics::LatencyHistogram;

/// splitmix64, and normal values by Box–Muller: small, seeded, the same on every machine.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// How much one run's figures vary from run to run (coefficient of variation), assumed: throughput and the middle
/// steady, the tail noisier. (Runs of the built-in target on a quiet machine vary less, under 1 % on throughput; a
/// shared CI machine may vary more, and then 5 runs find less.)
const CV: [(Metric, f64); 5] =
    [(Metric::Qps, 0.03), (Metric::Mean, 0.03), (Metric::P50, 0.03), (Metric::P99, 0.05), (Metric::P999, 0.08)];

/// A run's share of drift common to all its figures (a busier moment of the machine slows every figure of the run
/// at once); 0 makes the six tests independent, the case where Holm's bound is nearly reached.
fn run(rng: &mut Rng, slower: f64, shared: f64) -> Sample {
    let drift = rng.normal();
    let mut figure = |m: Metric| {
        let cv = CV.iter().find(|(k, _)| *k == m).unwrap().1;
        (cv * (shared * drift + (1.0 - shared * shared).sqrt() * rng.normal())).exp()
    };
    let p50 = 5_000.0 * slower * figure(Metric::P50);
    // One latency in the histogram is enough: the verdicts test the per-run figures, the histograms only give the
    // pooled value shown beside them. A coarse histogram keeps thousands of runs cheap.
    let mut histogram = LatencyHistogram::coarse();
    histogram.record(p50 as u64);
    let requests = 20_000;
    Sample {
        ok_per_s: 1_000.0 / slower / figure(Metric::Qps),
        mean_us: Some(5_200.0 * slower * figure(Metric::Mean)),
        p50_us: Some(p50),
        p99_us: Some(9_000.0 * slower * figure(Metric::P99)),
        p999_us: Some(15_000.0 * slower * figure(Metric::P999)),
        requests,
        // About 10 failures in 20,000 requests, as counts vary.
        failed: (10.0 + 10f64.sqrt() * rng.normal()).round().max(0.0) as u64,
        answers: requests,
        histogram: Some(histogram),
        first_event_us: None,
        tokens_per_s: None,
        tpot_us: None,
        goodput_per_s: None,
    }
}

fn side(name: &str, runs: Vec<Sample>) -> Side {
    let mut s = Side::new(name);
    for r in runs {
        s.add("", r);
    }
    s
}

/// What one comparison of a baseline with a candidate `slower` times slower said.
struct Outcome {
    /// Metric -> verdict, in `compare`'s order.
    verdicts: Vec<(Metric, Verdict)>,
    /// Any gate failed.
    gate_failed: bool,
    /// Any metric significant at 5 % alone, without the family's adjustment (what `compare` did before).
    unadjusted_alarm: bool,
}

fn compare_once(rng: &mut Rng, slower: f64, shared: f64, gates: &[FailIf]) -> Outcome {
    let base: Vec<Sample> = (0..5).map(|_| run(rng, 1.0, shared)).collect();
    let cand: Vec<Sample> = (0..5).map(|_| run(rng, slower, shared)).collect();
    let group = Group { title: String::new(), sides: vec![side("a", base), side("b", cand)] };
    let compared = compare_groups(&[group], None).unwrap();
    let rows = &compared[0].points[0].rows;
    let verdicts = rows.iter().map(|r| (r.metric, r.cells[1].verdict)).collect();
    let unadjusted_alarm = rows.iter().any(|r| r.cells[1].p.is_some_and(|p| p < 0.05));
    let gate_failed = judge_fail_ifs(&compared, gates).iter().any(|g| g.failed);
    Outcome { verdicts, gate_failed, unadjusted_alarm }
}

fn alarm(v: Verdict) -> bool {
    matches!(v, Verdict::Faster | Verdict::Slower | Verdict::More | Verdict::Fewer)
}

/// Gates at a factor of 1: the strictest a user can write, so the likeliest to fail a build on noise.
fn strict_gates() -> Vec<FailIf> {
    ["qps < 1.0 * baseline", "mean > 1.0 * baseline", "p50 > 1.0 * baseline", "p99 > 1.0 * baseline"]
        .iter()
        .map(|g| FailIf::parse(g).unwrap())
        .collect()
}

#[test]
fn identical_targets_raise_a_false_alarm_in_at_most_5_percent_of_comparisons() {
    const FAMILIES: usize = 4_000;
    let gates = strict_gates();
    for (seed, shared) in [(22, 0.0), (2022, 0.5)] {
        let mut rng = Rng(seed);
        let (mut alarms, mut gate_alarms, mut unadjusted) = (0, 0, 0);
        for _ in 0..FAMILIES {
            let o = compare_once(&mut rng, 1.0, shared, &gates);
            assert!(o.verdicts.iter().all(|(_, v)| *v != Verdict::TooFewAnswers && *v != Verdict::NotAvailable));
            alarms += o.verdicts.iter().any(|(_, v)| alarm(*v)) as usize;
            gate_alarms += o.gate_failed as usize;
            unadjusted += o.unadjusted_alarm as usize;
        }
        let rate = |n: usize| n as f64 / FAMILIES as f64;
        eprintln!(
            "shared drift {shared}: family-wise false alarms {:.2} % (gates {:.2} %), each metric alone at 5 %: {:.2} %",
            100.0 * rate(alarms),
            100.0 * rate(gate_alarms),
            100.0 * rate(unadjusted)
        );
        assert!(rate(alarms) <= 0.05, "verdicts: {alarms} of {FAMILIES} families");
        assert!(rate(gate_alarms) <= 0.05, "gates: {gate_alarms} of {FAMILIES} families");
        // Without the family the same data cry wolf far more often: the test has teeth.
        assert!(rate(unadjusted) > 0.10, "unadjusted: {unadjusted} of {FAMILIES} families");
    }
}

#[test]
fn a_real_10_percent_difference_is_still_found_with_5_runs() {
    const FAMILIES: usize = 1_000;
    let mut rng = Rng(10);
    let mut found = [0usize; 5];
    let (mut wrong, mut any) = (0, 0);
    for _ in 0..FAMILIES {
        let o = compare_once(&mut rng, 1.10, 0.5, &[]);
        any += o.verdicts.iter().any(|(_, v)| *v == Verdict::Slower) as usize;
        for (i, (metric, _)) in CV.iter().enumerate() {
            let got = o.verdicts.iter().find(|(m, _)| m == metric).map(|(_, v)| *v);
            found[i] += (got == Some(Verdict::Slower)) as usize;
            wrong += (got == Some(Verdict::Faster)) as usize;
        }
    }
    let power: Vec<f64> = found.iter().map(|&n| n as f64 / FAMILIES as f64).collect();
    let each: Vec<String> =
        CV.iter().zip(&power).map(|((m, cv), p)| format!("{} (cv {cv}) {:.1} %", m.name(), 100.0 * p)).collect();
    let any = any as f64 / FAMILIES as f64;
    eprintln!("10 % slower, 5 runs a side, found on: {}; on some metric {:.1} %", each.join(", "), 100.0 * any);
    assert_eq!(wrong, 0, "never called faster");
    assert!(any >= 0.95, "some metric says slower in {:.1} %", 100.0 * any);
    // Throughput and the middle latencies, which vary 3 % from run to run, nearly always; the noisier tail less.
    for (i, (m, _)) in CV.iter().enumerate().take(3) {
        assert!(power[i] >= 0.85, "{}: found in {:.1} %", m.name(), 100.0 * power[i]);
    }
}
