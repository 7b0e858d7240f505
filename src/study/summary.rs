//! What a study's finished cases say together: the merged CSV (`study.csv`, one row per case and step) and the
//! table over repetitions (`summary.txt`: per target x workload x phase and step, the mean and spread of the
//! runs' ok/s and p99, and the p99 of the runs' histograms merged), from the cases this run of the study
//! recorded. A study directory is read back (by `compare`, `report`) through `crate::inputs`, as every result is.

use std::collections::BTreeMap;
use std::path::Path;

use crate::metrics::histogram::LatencyHistogram;
use crate::result::{ResultDocument, StepResult};
use crate::study::manifest::{CaseEntry, CaseStatus, Manifest};

/// The merged CSV's file name inside a study's output directory.
pub const CSV: &str = "study.csv";
/// The summary table's file name.
pub const SUMMARY: &str = "summary.txt";

const HEADER: &str =
    "case,target,workload,phase,repetition,step,clients,rate,ok_per_s,mean_ms,p50_ms,p99_ms,failed_percent";

/// One step of one case's result, as the merged CSV and the summary see it.
#[derive(Clone, Debug)]
pub struct StepRow {
    pub step: String,
    pub clients: usize,
    pub rate: Option<f64>,
    pub ok_per_s: f64,
    pub mean_us: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub failed_percent: f64,
    /// The step's latency histogram of successes, for the pooled percentiles.
    pub histogram: Option<LatencyHistogram>,
}

impl StepRow {
    pub fn from_step(s: &StepResult) -> StepRow {
        let pct = |p: &str| s.latency.percentiles.get(p).copied().unwrap_or(0);
        StepRow {
            step: s.label.clone(),
            clients: s.load.connections,
            rate: s.load.rate,
            ok_per_s: s.throughput.ok_per_s,
            mean_us: s.latency.mean,
            p50_us: pct("p50"),
            p99_us: pct("p99"),
            failed_percent: if s.requests == 0 { 0.0 } else { 100.0 * s.failed as f64 / s.requests as f64 },
            histogram: LatencyHistogram::from_base64(&s.histogram.data).ok(),
        }
    }
}

/// The rows of a result document.
pub fn rows(doc: &ResultDocument) -> Vec<StepRow> {
    doc.steps.iter().map(StepRow::from_step).collect()
}

/// Reads the result document of a finished case, when it is complete: it parses, was not interrupted, and has
/// the `steps` it should (a sweep killed half-way leaves a valid document with fewer steps).
pub fn complete_document(path: &Path, steps: usize) -> Option<ResultDocument> {
    let doc = crate::inputs::result::read_document(path).ok()?;
    (!doc.interrupted && doc.steps.len() == steps).then_some(doc)
}

/// The merged CSV of the ok cases, in the manifest's order.
pub fn merged_csv(manifest: &Manifest, rows_of: &BTreeMap<String, Vec<StepRow>>) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
    for c in manifest.ok() {
        for r in rows_of.get(&c.id).map(Vec::as_slice).unwrap_or(&[]) {
            let _ = w.write_record([
                c.id.clone(),
                c.target.clone(),
                c.workload.clone(),
                c.phase.clone(),
                c.repetition.to_string(),
                r.step.clone(),
                r.clients.to_string(),
                r.rate.map(|x| x.to_string()).unwrap_or_default(),
                format!("{:.3}", r.ok_per_s),
                format!("{:.3}", r.mean_us / 1000.0),
                format!("{:.3}", r.p50_us as f64 / 1000.0),
                format!("{:.3}", r.p99_us as f64 / 1000.0),
                format!("{:.3}", r.failed_percent),
            ]);
        }
    }
    out.push_str(&String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default());
    out
}

/// The runs of one target x workload x phase at one step: the samples a comparison tests on.
#[derive(Clone, Debug)]
pub struct Group {
    pub target: String,
    pub workload: String,
    pub phase: String,
    pub step: String,
    /// Cases planned for this group (repetitions), ok or not.
    pub planned: usize,
    /// One row per ok repetition, in repetition order.
    pub runs: Vec<StepRow>,
}

/// The groups of a study, in the order their first ok case ran.
pub fn groups(manifest: &Manifest, rows_of: &BTreeMap<String, Vec<StepRow>>) -> Vec<Group> {
    let key = |c: &CaseEntry| (c.target.clone(), c.workload.clone(), c.phase.clone());
    let mut planned: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    for c in &manifest.cases {
        *planned.entry(key(c)).or_default() += 1;
    }
    let mut out: Vec<Group> = Vec::new();
    for c in manifest.cases.iter().filter(|c| c.status == CaseStatus::Ok) {
        for row in rows_of.get(&c.id).map(Vec::as_slice).unwrap_or(&[]) {
            let same = |g: &&mut Group| {
                g.target == c.target && g.workload == c.workload && g.phase == c.phase && g.step == row.step
            };
            match out.iter_mut().find(same) {
                Some(g) => g.runs.push(row.clone()),
                None => out.push(Group {
                    target: c.target.clone(),
                    workload: c.workload.clone(),
                    phase: c.phase.clone(),
                    step: row.step.clone(),
                    planned: planned[&key(c)],
                    runs: vec![row.clone()],
                }),
            }
        }
    }
    out
}

/// Mean and sample standard deviation (`crate::metrics::stats`), 0 where too few runs give none: the table prints numbers.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    crate::metrics::stats::summarize(xs).map_or((0.0, 0.0), |s| (s.mean, if s.sd.is_nan() { 0.0 } else { s.sd }))
}

/// The table over repetitions, one line per group.
pub fn table(groups: &[Group]) -> String {
    let mut lines = vec![
        ["target", "workload", "phase", "step", "runs", "ok/s mean", "± sd", "p99 mean", "± sd", "p99 pooled"]
            .map(String::from)
            .to_vec(),
    ];
    for g in groups {
        let qps: Vec<f64> = g.runs.iter().map(|r| r.ok_per_s).collect();
        let p99: Vec<f64> = g.runs.iter().map(|r| r.p99_us as f64).collect();
        let (qm, qs) = mean_sd(&qps);
        let (pm, ps) = mean_sd(&p99);
        let mut pooled = LatencyHistogram::new();
        let mut pooled_ok = true;
        for r in &g.runs {
            match &r.histogram {
                Some(h) => pooled.merge(h),
                None => pooled_ok = false,
            }
        }
        let pooled = if pooled_ok && !pooled.is_empty() { ms(pooled.percentile(99.0) as f64) } else { "-".into() };
        lines.push(vec![
            g.target.clone(),
            g.workload.clone(),
            g.phase.clone(),
            g.step.clone(),
            format!("{}/{}", g.runs.len(), g.planned),
            format!("{qm:.1}"),
            format!("{qs:.1}"),
            ms(pm),
            ms(ps),
            pooled,
        ]);
    }
    let widths: Vec<usize> =
        (0..lines[0].len()).map(|i| lines.iter().map(|l| l[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for l in &lines {
        let cells: Vec<String> = l
            .iter()
            .enumerate()
            .map(|(i, c)| if i < 4 { format!("{c:<w$}", w = widths[i]) } else { format!("{c:>w$}", w = widths[i]) })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn ms(us: f64) -> String {
    format!("{:.2}ms", us / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(step: &str, qps: f64, p99_us: u64) -> StepRow {
        StepRow {
            step: step.into(),
            clients: 2,
            rate: None,
            ok_per_s: qps,
            mean_us: 5100.0,
            p50_us: 5000,
            p99_us,
            failed_percent: 0.0,
            histogram: None,
        }
    }

    fn entry(id: &str, target: &str, repetition: u32, status: CaseStatus) -> CaseEntry {
        CaseEntry {
            id: id.into(),
            target: target.into(),
            workload: "w".into(),
            phase: "p".into(),
            repetition,
            status,
            file: None,
            error: None,
            command: vec![],
        }
    }

    #[test]
    fn the_merged_csv_and_the_table_hold_the_ok_cases_in_run_order() {
        let manifest = Manifest {
            study: "s".into(),
            file: "s.toml".into(),
            cases: vec![
                entry("r1-a", "a", 1, CaseStatus::Ok),
                entry("r1-b", "b", 1, CaseStatus::Failed),
                entry("r2-a", "a", 2, CaseStatus::Ok),
                entry("r2-b", "b", 2, CaseStatus::Ok),
            ],
        };
        let mut rows = BTreeMap::new();
        rows.insert("r1-a".to_string(), vec![row("run", 390.0, 5400)]);
        rows.insert("r2-a".to_string(), vec![row("run", 410.0, 5600)]);
        rows.insert("r2-b".to_string(), vec![row("run", 200.0, 10400)]);
        assert_eq!(
            merged_csv(&manifest, &rows),
            "case,target,workload,phase,repetition,step,clients,rate,ok_per_s,mean_ms,p50_ms,p99_ms,failed_percent\n\
             r1-a,a,w,p,1,run,2,,390.000,5.100,5.000,5.400,0.000\n\
             r2-a,a,w,p,2,run,2,,410.000,5.100,5.000,5.600,0.000\n\
             r2-b,b,w,p,2,run,2,,200.000,5.100,5.000,10.400,0.000\n"
        );
        let g = groups(&manifest, &rows);
        assert_eq!(g.len(), 2);
        assert_eq!((g[0].runs.len(), g[0].planned, g[1].runs.len(), g[1].planned), (2, 2, 1, 2));
        assert_eq!(
            table(&g),
            "target  workload  phase  step  runs  ok/s mean  ± sd  p99 mean    ± sd  p99 pooled\n\
             a       w         p      run    2/2      400.0  14.1    5.50ms  0.14ms           -\n\
             b       w         p      run    1/2      200.0   0.0   10.40ms  0.00ms           -\n"
        );
    }

    #[test]
    fn mean_and_spread_of_runs() {
        assert_eq!(mean_sd(&[]), (0.0, 0.0));
        assert_eq!(mean_sd(&[4.0]), (4.0, 0.0));
        let (m, s) = mean_sd(&[1.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((s - 1.0).abs() < 1e-12);
    }
}
