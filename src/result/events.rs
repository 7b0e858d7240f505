//! The result document's `events` section (`--events`): what streamed answers held, each distribution a summary
//! with its histogram so agents' documents merge exactly; a token stream's tokens apart.

use serde::{Deserialize, Serialize};

use super::phases::Phase;
use crate::metrics::events::Good;
use crate::metrics::{EventMetrics, LatencyHistogram};

/// A token stream's own figures (`--events tokens`). Its time to first token and inter-token latency are the
/// section's `first_event` and `gaps`: a token stream's events are its chunks that carry text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokensReport {
    /// Output tokens of every answer.
    pub tokens: u64,
    /// Output tokens a second over the step.
    pub tokens_per_s: f64,
    /// Output tokens per answer (unit `tokens`).
    pub per_answer: Option<Phase>,
    /// Where the counts came from: `usage` (the server's `usage.completion_tokens` in every answer), `chunks`
    /// (no answer had one: a token for each chunk that carried text), or `usage and chunks` (some answers had it).
    pub counted_from: String,
    /// Answers whose count is their `usage` object's.
    pub answers_with_usage: u64,
    /// Answers whose `usage.completion_tokens` was implausible (more than 2^32 - 1 in one answer): their chunks
    /// were counted instead. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub usage_implausible: u64,
    /// Time per output token (vLLM's TPOT): each answer's time after its first token over its output tokens minus
    /// one, microseconds, of the answers of two tokens or more. Absent when none had two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot: Option<Phase>,
    /// Input tokens of the answers whose `usage` said them (`prompt_tokens`). Absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// The answers whose `usage` said their input tokens. Absent when none did.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub answers_with_input: u64,
    /// Input and output tokens a second over the step (vLLM's total token throughput), of the answers that said
    /// their input tokens and every answer's output. Absent when none said them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens_per_s: Option<f64>,
    /// Answers that ended before their `max_tokens` (a `finish_reason` other than `length`): fewer output tokens
    /// than asked. Absent when none did.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub answers_short: u64,
    /// Output tokens a second each answer streamed after its first (aiperf's output token throughput per user):
    /// one over its TPOT, so read from the TPOT histogram. Absent without TPOT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_user_tokens_per_s: Option<PerUser>,
}

/// The tokens a second one user saw (one over each answer's TPOT): the mean over answers, the median, and the
/// slow end: the rate the slowest 1 % of answers fell below (one over TPOT's p99) and the slowest answer's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerUser {
    pub mean: f64,
    pub p50: f64,
    pub p1: f64,
    pub min: f64,
}

impl PerUser {
    /// From TPOT in microseconds; None when it is empty. A TPOT under a microsecond counts as one.
    pub fn of(tpot: &LatencyHistogram) -> Option<PerUser> {
        let per_s = |us: u64| (1e6 / us.max(1) as f64 * 100.0).round() / 100.0;
        let recorded = tpot.recorded();
        let n: u64 = recorded.iter().map(|&(_, c)| c).sum();
        let sum: f64 = recorded.iter().map(|&(us, c)| 1e6 / us.max(1) as f64 * c as f64).sum();
        (n > 0).then(|| PerUser {
            mean: (sum / n as f64 * 100.0).round() / 100.0,
            p50: per_s(tpot.percentile(50.0)),
            p1: per_s(tpot.percentile(99.0)),
            min: per_s(tpot.max()),
        })
    }
}

/// A figure of streamed answers an objective or a threshold can name (vLLM's and aiperf's names): time to first
/// token, time per output token, inter-token latency, end-to-end latency of the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    Ttft,
    Tpot,
    Itl,
    E2el,
}

/// The statistic of a histogram an objective or a threshold judges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stat {
    Percentile(f64),
    Mean,
    Max,
}

impl Stat {
    /// `p99`, `mean`, `max`.
    pub fn name(self) -> String {
        match self {
            Stat::Percentile(p) => format!("p{p}"),
            Stat::Mean => "mean".into(),
            Stat::Max => "max".into(),
        }
    }

    /// Its value on `h`, microseconds.
    pub fn of(self, h: &LatencyHistogram) -> f64 {
        match self {
            Stat::Percentile(p) => h.percentile(p) as f64,
            Stat::Mean => h.mean(),
            Stat::Max => h.max() as f64,
        }
    }
}

impl Figure {
    /// `ttft`, `ttft p99`, `tpot_mean`: the figure the first word names and the words of its statistic (`p99` when
    /// none follows); None when the first word names no figure.
    pub fn with_stat(name: &str) -> Option<(Figure, &str)> {
        let (word, stat) = name.split_once([' ', '_']).map_or((name, "p99"), |(w, s)| (w, s.trim()));
        Some((Figure::named(word)?, stat))
    }

    /// The figure a word names: `ttft`, `tpot`, `itl`, `e2el`.
    pub fn named(word: &str) -> Option<Figure> {
        match word {
            "ttft" => Some(Figure::Ttft),
            "tpot" => Some(Figure::Tpot),
            "itl" => Some(Figure::Itl),
            "e2el" => Some(Figure::E2el),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Figure::Ttft => "ttft",
            Figure::Tpot => "tpot",
            Figure::Itl => "itl",
            Figure::E2el => "e2el",
        }
    }

    /// Whether a run reading answers as `events` (`--events`) measures it: why not, with the fix.
    pub fn measured_with(self, events: Option<&str>) -> Result<(), String> {
        match (self, events) {
            (Figure::Tpot, Some("tokens")) | (Figure::Ttft | Figure::Itl | Figure::E2el, Some(_)) => Ok(()),
            (Figure::Tpot, _) => Err("tpot is counted in tokens: give --events tokens".into()),
            (f, None) => Err(format!(
                "{} is a figure of streamed answers: give --events tokens (or sse, ndjson, chunks)",
                f.name()
            )),
        }
    }

    /// Its histogram in a step's figures (microseconds): the first event, TPOT, the gaps, the whole answer.
    pub fn of(self, m: &EventMetrics) -> &LatencyHistogram {
        match self {
            Figure::Ttft => &m.first,
            Figure::Tpot => &m.tpot,
            Figure::Itl => &m.gaps,
            Figure::E2el => &m.whole,
        }
    }

    /// Its histogram over `steps` merged (empty when none streamed); an error when a stored one cannot be read.
    pub fn merged<'a>(
        self,
        steps: impl IntoIterator<Item = &'a super::StepResult>,
    ) -> Result<LatencyHistogram, String> {
        let mut all = EventMetrics::default();
        for s in steps {
            if let Some(e) = &s.events {
                all.merge(&e.metrics()?);
            }
        }
        Ok(self.of(&all).clone())
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a step's streamed answers held. Only answers that ended are counted (a cut or timed-out stream is counted
/// by its error kind); distributions with no sample are null.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventsReport {
    /// Answers read for events (2xx answers that ended).
    pub answers: u64,
    /// Of those, answers that held no event.
    pub answers_without_events: u64,
    pub events: u64,
    /// Body bytes of those answers (dechunked).
    pub bytes: u64,
    pub events_per_s: f64,
    pub bytes_per_s: f64,
    /// Time to first event (a token stream: first token) from the request's send, microseconds.
    pub first_event: Option<Phase>,
    /// The gaps between consecutive events of an answer (a token stream: inter-token latency), microseconds.
    pub gaps: Option<Phase>,
    /// Events per answer, of the answers with any (unit `events`).
    pub events_per_answer: Option<Phase>,
    /// Each answer's whole time, its send to its end, microseconds.
    pub answer_time: Option<Phase>,
    /// `--events tokens`: the tokens; absent for the other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokensReport>,
    /// `--goodput`: the answers that met every objective; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<GoodputReport>,
    /// Answers of two events or more whose events all came in one read: a stream the server (or a proxy) sent at
    /// once, whose time to first event is the whole answer's. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub answers_in_one_read: u64,
}

/// Goodput (DistServe's): the answers that met every objective of `--goodput`, a second and as a share.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoodputReport {
    /// The objectives, as given (`ttft:200ms,tpot:50ms`).
    pub objectives: String,
    /// Answers that met them all.
    pub answers: u64,
    /// The step's requests, the share's denominator: one that failed, timed out or was cut met no objective.
    pub requests: u64,
    /// Those answers a second over the step.
    pub per_s: f64,
    /// Their share of the requests, percent (rounded to 0.01; objectives judge the exact share).
    pub percent: f64,
}

fn counted(h: &LatencyHistogram, unit: &str) -> Option<Phase> {
    Phase::of(h).map(|mut p| {
        p.latency.unit = unit.into();
        p
    })
}

fn rate(n: u64, secs: f64) -> f64 {
    (n as f64 / secs.max(1e-9) * 1000.0).round() / 1000.0
}

impl EventsReport {
    /// The report of a step of `secs` seconds and `requests` requests; None when no answer was read for events.
    pub fn of(m: &EventMetrics, secs: f64, requests: u64) -> Option<EventsReport> {
        (!m.is_empty()).then(|| EventsReport {
            answers: m.answers,
            answers_without_events: m.empty,
            events: m.events,
            bytes: m.bytes,
            events_per_s: rate(m.events, secs),
            bytes_per_s: rate(m.bytes, secs),
            first_event: Phase::of(&m.first),
            gaps: Phase::of(&m.gaps),
            events_per_answer: counted(&m.per_answer, "events"),
            answer_time: Phase::of(&m.whole),
            tokens: (!m.tokens_per_answer.is_empty()).then(|| TokensReport {
                tokens: m.tokens,
                tokens_per_s: rate(m.tokens, secs),
                per_answer: counted(&m.tokens_per_answer, "tokens"),
                counted_from: match m.usage_answers {
                    0 => "chunks",
                    n if n == m.tokens_per_answer.count() => "usage",
                    _ => "usage and chunks",
                }
                .into(),
                answers_with_usage: m.usage_answers,
                usage_implausible: m.usage_implausible,
                tpot: Phase::of(&m.tpot),
                input_tokens: (m.input_answers > 0).then_some(m.input_tokens),
                answers_with_input: m.input_answers,
                total_tokens_per_s: (m.input_answers > 0).then(|| rate(m.input_tokens.saturating_add(m.tokens), secs)),
                answers_short: m.short,
                per_user_tokens_per_s: PerUser::of(&m.tpot),
            }),
            answers_in_one_read: m.one_read,
            goodput: m.good.as_ref().map(|g| {
                let requests = requests.max(g.answers);
                GoodputReport {
                    objectives: g.objectives.to_string(),
                    answers: g.answers,
                    requests,
                    per_s: rate(g.answers, secs),
                    percent: (10_000.0 * g.answers as f64 / requests.max(1) as f64).round() / 100.0,
                }
            }),
        })
    }

    /// The figures back, to be added to others'.
    pub fn metrics(&self) -> Result<EventMetrics, String> {
        let read = |p: &Option<Phase>, name: &str| match p {
            None => Ok(LatencyHistogram::new()),
            Some(p) => LatencyHistogram::from_base64(&p.histogram.data)
                .map_err(|e| format!("its events' {name} histogram cannot be read: {e}")),
        };
        let t = self.tokens.as_ref();
        Ok(EventMetrics {
            answers: self.answers,
            empty: self.answers_without_events,
            events: self.events,
            bytes: self.bytes,
            first: read(&self.first_event, "first_event")?,
            gaps: read(&self.gaps, "gaps")?,
            per_answer: read(&self.events_per_answer, "events_per_answer")?,
            whole: read(&self.answer_time, "answer_time")?,
            tokens: t.map_or(0, |t| t.tokens),
            tokens_per_answer: read(&t.and_then(|t| t.per_answer.clone()), "tokens per_answer")?,
            usage_answers: t.map_or(0, |t| t.answers_with_usage),
            usage_implausible: t.map_or(0, |t| t.usage_implausible),
            tpot: read(&t.and_then(|t| t.tpot.clone()), "tokens tpot")?,
            good: self.goodput.as_ref().map(|g| Good { objectives: g.objectives.as_str().into(), answers: g.answers }),
            input_tokens: t.and_then(|t| t.input_tokens).unwrap_or(0),
            input_answers: t.map_or(0, |t| t.answers_with_input),
            one_read: self.answers_in_one_read,
            short: t.map_or(0, |t| t.answers_short),
        })
    }

    /// Several agents' figures of one step as one (the step `secs` long): histograms and counts added, rates over
    /// the merged step. None when no part has them.
    pub fn merged(parts: &[&EventsReport], secs: f64) -> Result<Option<EventsReport>, String> {
        let mut all = EventMetrics::default();
        for p in parts {
            all.merge(&p.metrics()?);
        }
        let requests = parts.iter().filter_map(|p| p.goodput.as_ref()).map(|g| g.requests).sum();
        Ok(EventsReport::of(&all, secs, requests))
    }

    /// The text summary's lines: events (or tokens) and their timing.
    pub fn summary_lines(&self) -> Vec<String> {
        let ms = |p: &Option<Phase>, q: f64| {
            p.as_ref().map_or("-".to_string(), |p| format!("{:.3} ms", p.latency.percentile(q) as f64 / 1000.0))
        };
        let per = |p: &Option<Phase>| p.as_ref().map_or(0.0, |p| p.latency.mean);
        let mut lines = Vec::new();
        let (first, gap) = match self.tokens {
            Some(_) => ("first token", "inter-token"),
            None => ("first event", "gaps"),
        };
        lines.push(format!(
            "{} events in {} answers ({:.1} an answer, {} without any), {:.1} events/s, {:.0} bytes/s",
            self.events,
            self.answers,
            per(&self.events_per_answer),
            self.answers_without_events,
            self.events_per_s,
            self.bytes_per_s
        ));
        lines.push(format!(
            "{first} p50 {} p99 {}, {gap} p50 {} p99 {}, answer p50 {}",
            ms(&self.first_event, 50.0),
            ms(&self.first_event, 99.0),
            ms(&self.gaps, 50.0),
            ms(&self.gaps, 99.0),
            ms(&self.answer_time, 50.0),
        ));
        if let Some(t) = &self.tokens {
            lines.push(format!(
                "{} output tokens ({:.1} an answer, counted from {}), {:.1} tokens/s{}",
                t.tokens,
                per(&t.per_answer),
                t.counted_from,
                t.tokens_per_s,
                match &t.tpot {
                    Some(_) => format!(", time per output token p50 {} p99 {}", ms(&t.tpot, 50.0), ms(&t.tpot, 99.0)),
                    None => String::new(),
                }
            ));
            if let Some(u) = &t.per_user_tokens_per_s {
                lines.push(format!(
                    "per user {:.1} tokens/s mean, p50 {:.1}, slowest 1 % below {:.1}, slowest {:.1} (one over TPOT)",
                    u.mean, u.p50, u.p1, u.min
                ));
            }
            if let (Some(input), Some(total)) = (t.input_tokens, t.total_tokens_per_s) {
                let whose = match t.answers_with_input == self.answers {
                    true => String::new(),
                    false => format!(" of the {} answers that said them", t.answers_with_input),
                };
                lines.push(format!(
                    "{input} input tokens ({:.1} an answer{whose}, from usage), {total:.1} input and output tokens/s",
                    input as f64 / t.answers_with_input.max(1) as f64
                ));
            }
            if t.answers_short > 0 {
                lines.push(format!(
                    "{} of {} answers ended before their max_tokens (finish_reason not \"length\"): fewer output \
                     tokens than asked",
                    t.answers_short, self.answers
                ));
            }
            if t.usage_implausible > 0 {
                lines.push(format!(
                    "{} answers claimed more than 2^32 output tokens in their usage object: their chunks were \
                     counted instead",
                    t.usage_implausible
                ));
            }
        }
        if let Some(g) = &self.goodput {
            lines.push(format!(
                "goodput {:.1} answers/s met {} ({} of {} requests, {:.1} %)",
                g.per_s, g.objectives, g.answers, g.requests, g.percent
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::events::StreamFigures;
    use std::time::{Duration, Instant};

    fn metrics(answers: u64, usage: bool) -> EventMetrics {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut m = EventMetrics::default();
        for _ in 0..answers {
            let f = StreamFigures {
                first: Some(ms(50)),
                events: 4,
                bytes: 40,
                chunk_tokens: 4,
                usage_tokens: usage.then_some(8),
                ended: true,
                ..StreamFigures::default()
            };
            m.record(t0, ms(80), &f, true, [(10_000, 3)].into_iter(), None);
        }
        m
    }

    #[test]
    fn merged_reports_add_their_figures_and_say_where_tokens_were_counted_from() {
        let a = EventsReport::of(&metrics(10, false), 1.0, 10).expect("read");
        let b = EventsReport::of(&metrics(30, true), 1.0, 30).expect("read");
        assert_eq!(a.tokens.as_ref().map(|t| t.counted_from.as_str()), Some("chunks"));
        assert_eq!(b.tokens.as_ref().map(|t| t.counted_from.as_str()), Some("usage"));
        let m = EventsReport::merged(&[&a, &b], 2.0).expect("readable").expect("read");
        assert_eq!((m.answers, m.events, m.bytes), (40, 160, 1600));
        assert_eq!(m.events_per_s, 80.0);
        assert_eq!(m.gaps.as_ref().map(|g| g.latency.count), Some(120));
        let t = m.tokens.as_ref().expect("tokens");
        assert_eq!((t.tokens, t.counted_from.as_str(), t.answers_with_usage), (280, "usage and chunks", 30));
        assert_eq!(m.events_per_answer.as_ref().map(|p| p.latency.unit.as_str()), Some("events"));
        let lines = m.summary_lines();
        assert!(lines[0].starts_with("160 events in 40 answers (4.0 an answer"), "{lines:?}");
        assert!(lines[1].starts_with("first token p50 50.") && lines[2].contains("usage and chunks"), "{lines:?}");
        assert_eq!(EventsReport::of(&EventMetrics::default(), 1.0, 0), None);
    }

    #[test]
    fn tokens_a_second_per_user_are_one_over_each_answers_tpot() {
        let mut tpot = LatencyHistogram::new();
        // Three answers at 10 ms a token (100/s) and one at 40 ms (25/s).
        tpot.record_n(10_000, 3);
        tpot.record(40_000);
        let u = PerUser::of(&tpot).expect("answers");
        // (To the histogram's 3 digits: a value reads as the highest of its bucket.)
        let near = |got: f64, want: f64| (got / want - 1.0).abs() < 0.002;
        assert!(near(u.p50, 100.0) && near(u.p1, 25.0) && near(u.min, 25.0) && near(u.mean, 81.25), "{u:?}");
        assert_eq!(PerUser::of(&LatencyHistogram::new()), None);
    }
}
