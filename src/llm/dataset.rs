//! Prompts read from a dataset file as a stream, only those kept held: a JSON-lines file's first N rows in order,
//! or N of a ShareGPT file's conversations sampled uniformly (a seeded reservoir: vLLM shuffles with a seed and
//! takes the first N that pass its filters, the same draw in law). Lengths in tokens without a tokenizer are
//! estimated as OpenAI's rule of thumb has it (about 4 characters a token), and said so.

use std::io::BufReader;
use std::path::Path;

use rand::{RngExt as _, SeedableRng as _};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use serde::de::{DeserializeSeed, SeqAccess, Visitor};

use crate::llm::tokenizer::Counter;
use crate::template::data::Rows;

/// A JSON-lines row without an output length asks for this many tokens (vLLM's `--custom-output-len`).
pub const DEFAULT_OUTPUT_LEN: u64 = 256;
/// The most words a trace's prompts hold in all (they are made before the load): about 120 MB of text.
const MOST_TRACE_WORDS: u64 = 20_000_000;
/// The longest line of a JSON-lines file: a prompt of about four million tokens.
const MOST_LINE: u64 = 16 << 20;
/// The most tokens an answer may be asked for in a row.
const MOST_OUTPUT: u64 = 10_000_000;
/// vLLM's ShareGPT filters: prompts and replies of at least 4 tokens, prompts of at most 1024, both at most 2048.
const SHAREGPT_MIN: u64 = 4;
const SHAREGPT_MAX_PROMPT: u64 = 1024;
const SHAREGPT_MAX_TOTAL: u64 = 2048;

/// The prompts kept and what they are, for the run's notes.
#[derive(Debug)]
pub struct Prompts {
    /// Columns `prompt` (as a JSON string's characters, ready for the body) and `max_tokens`.
    pub rows: Rows,
    pub note: String,
}

fn rows_of(kept: Vec<(String, u64)>) -> Rows {
    let values = kept
        .into_iter()
        .map(|(prompt, out)| vec![crate::template::json_string_chars(&prompt), out.to_string()])
        .collect();
    Rows::new(vec!["prompt".into(), "max_tokens".into()], values)
}

/// A JSON-lines file's first `count` rows: `{"prompt": "..."}` (or `"text"`), with an optional output length
/// (`output_tokens`, `output_len`, `max_tokens`); `output_len` when given replaces every row's.
pub fn jsonl(path: &Path, count: u64, output_len: Option<u64>) -> Result<Prompts, String> {
    let file = crate::base::bounded::open(path, crate::base::bounded::DATASET)?;
    let mut reader = BufReader::new(file);
    let mut kept = Vec::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    while (kept.len() as u64) < count && crate::base::bounded::next_line(&mut reader, &mut line, MOST_LINE)? {
        number += 1;
        if line.len() as u64 > MOST_LINE {
            return Err(format!("line {number}: longer than {} MiB; split the prompt", MOST_LINE >> 20));
        }
        let text = std::str::from_utf8(&line).map_err(|_| format!("line {number}: not UTF-8 text"))?.trim();
        if text.is_empty() {
            continue;
        }
        let row: JsonlRow = serde_json::from_str(text).map_err(|e| {
            format!(
                "line {number}, column {}: {}; each line is a JSON object such as {{\"prompt\": \"...\", \"output_tokens\": 128}}",
                e.column(),
                crate::base::secrets::json_reason(&e)
            )
        })?;
        let Some(prompt) = row.prompt.or(row.text) else {
            return Err(format!(
                "line {number}: no \"prompt\" (or \"text\") string; write each line as {{\"prompt\": \"...\"}}"
            ));
        };
        let out = match output_len.or(row.output_tokens).or(row.output_len).or(row.max_tokens) {
            Some(n) if (1..=MOST_OUTPUT).contains(&n) => n,
            Some(n) => return Err(format!("line {number}: an output length of {n}: give 1 to {MOST_OUTPUT}")),
            None => DEFAULT_OUTPUT_LEN,
        };
        kept.push((prompt, out));
    }
    if kept.is_empty() {
        return Err("no prompt in it; write one JSON object per line, such as {\"prompt\": \"...\"}".into());
    }
    let note = format!("{} prompts from the first lines of {} (in order)", kept.len(), path.display());
    Ok(Prompts { rows: rows_of(kept), note })
}

/// An LLM trace (aiperf's fixed schedule, Mooncake's format): `{"timestamp": MS, "input_length": N,
/// "output_length": M}` a line (`hash_ids` and other keys ignored), its first `count` rows: each a prompt of N
/// random words (about a token each, seeded) asking for M tokens, and its instant in microseconds, in time order.
/// `per_word`: a tokenizer's tokens a word of the synthetic vocabulary (the prompts then sized to the lengths in
/// tokens); None takes a word for a token.
pub fn trace(path: &Path, count: u64, seed: u64, per_word: Option<f64>) -> Result<(Prompts, Vec<i64>), String> {
    let file = crate::base::bounded::open(path, crate::base::bounded::DATASET)?;
    let mut reader = BufReader::new(file);
    let (mut line, mut number) = (Vec::new(), 0u64);
    let mut rows: Vec<(i64, u64, u64)> = Vec::new();
    let mut words = 0u64;
    while (rows.len() as u64) < count && crate::base::bounded::next_line(&mut reader, &mut line, MOST_LINE)? {
        number += 1;
        let text = std::str::from_utf8(&line).map_err(|_| format!("line {number}: not UTF-8 text"))?.trim();
        if text.is_empty() {
            continue;
        }
        let row: TraceRow = serde_json::from_str(text).map_err(|e| {
            format!(
                "line {number}, column {}: {}; each line is {{\"timestamp\": 0, \"input_length\": 512, \
                 \"output_length\": 128}} (milliseconds, tokens)",
                e.column(),
                crate::base::secrets::json_reason(&e)
            )
        })?;
        if !(1..=crate::template::text::MOST_WORDS).contains(&row.input_length)
            || !(1..=MOST_OUTPUT).contains(&row.output_length)
        {
            return Err(format!(
                "line {number}: input_length {} and output_length {}: give 1 to {} and 1 to {MOST_OUTPUT}",
                row.input_length,
                row.output_length,
                crate::template::text::MOST_WORDS
            ));
        }
        let at_us =
            Some(row.timestamp * 1000.0).filter(|t| t.is_finite() && (0.0..9e15).contains(t)).ok_or_else(|| {
                format!(
                    "line {number}: timestamp {}: give milliseconds from the trace's start, 0 or more",
                    row.timestamp
                )
            })? as i64;
        let input = per_word.map_or(row.input_length, |p| crate::llm::tokenizer::words_for(row.input_length, p));
        words = words.saturating_add(input);
        if words > MOST_TRACE_WORDS {
            return Err(format!(
                "line {number}: the prompts so far hold more than {MOST_TRACE_WORDS} words (made before the load, \
                 about 6 bytes each); give fewer rows (--num-prompts) or shorter inputs"
            ));
        }
        rows.push((at_us, input, row.output_length));
    }
    if rows.is_empty() {
        return Err("no row in it; write one JSON object per line, such as {\"timestamp\": 0, \"input_length\": 512, \
                    \"output_length\": 128}"
            .into());
    }
    rows.sort_by_key(|r| r.0);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut words = Vec::new();
    let kept: Vec<(String, u64)> = rows
        .iter()
        .map(|&(_, input, output)| {
            words.clear();
            crate::template::words::push(input, &mut rng, &mut words);
            (String::from_utf8_lossy(&words).into_owned(), output)
        })
        .collect();
    let span = (rows[rows.len() - 1].0 - rows[0].0) as f64 / 1e6;
    let sized = match per_word {
        Some(p) => format!("sized to their input_length by the tokenizer ({p:.2} tokens a word)"),
        None => "of their input_length in words (about a token a word)".into(),
    };
    let note = format!(
        "{} requests of the trace {} at their recorded times over {span:.3} s, prompts {sized}",
        kept.len(),
        path.display()
    );
    let at = rows.iter().map(|r| r.0).collect();
    Ok((Prompts { rows: rows_of(kept), note }, at))
}

#[derive(Deserialize)]
struct TraceRow {
    timestamp: f64,
    input_length: u64,
    output_length: u64,
}

#[derive(Deserialize)]
struct JsonlRow {
    prompt: Option<String>,
    text: Option<String>,
    output_tokens: Option<u64>,
    output_len: Option<u64>,
    max_tokens: Option<u64>,
}

/// `count` conversations of a ShareGPT file sampled at random (`seed`): each one's first turn the prompt, its
/// second's estimated tokens the answer's length (or `output_len`), within vLLM's filters.
pub fn sharegpt(
    path: &Path,
    count: u64,
    output_len: Option<u64>,
    seed: u64,
    counter: &Counter,
) -> Result<Prompts, String> {
    let file = crate::base::bounded::open(path, crate::base::bounded::DATASET)?;
    let mut sampler = Sampler {
        counter,
        failed: 0,
        first_failure: None,
        keep: count.min(usize::MAX as u64) as usize,
        output_len,
        rng: ChaCha8Rng::seed_from_u64(seed),
        valid: 0,
        read: 0,
        kept: Vec::new(),
    };
    let mut de = serde_json::Deserializer::from_reader(BufReader::new(file));
    let shape = "a ShareGPT file is a JSON array of {\"conversations\": [{\"from\": \"human\", \"value\": \"...\"}, \
                 {\"from\": \"gpt\", \"value\": \"...\"}]}";
    (&mut sampler).deserialize(&mut de).and_then(|()| de.end()).map_err(|e| {
        format!("line {}, column {}: {}; {shape}", e.line(), e.column(), crate::base::secrets::json_reason(&e))
    })?;
    if let (true, Some(why)) = (sampler.kept.is_empty(), &sampler.first_failure) {
        return Err(format!(
            "the tokenizer failed on {} of its {} conversations (the first: {why}); check --tokenizer",
            sampler.failed, sampler.read
        ));
    }
    if sampler.kept.is_empty() {
        return Err(format!(
            "none of its {} conversations has a prompt of {SHAREGPT_MIN} to {SHAREGPT_MAX_PROMPT} tokens and a reply \
             of {SHAREGPT_MIN} or more ({SHAREGPT_MAX_TOTAL} in all, {}); {shape}",
            sampler.read,
            counter.describe()
        ));
    }
    let note = format!(
        "{} prompts sampled (seed {seed}) from {} of the {} conversations in {} (lengths {})",
        sampler.kept.len(),
        sampler.valid,
        sampler.read,
        path.display(),
        counter.describe()
    );
    Ok(Prompts { rows: rows_of(sampler.kept), note })
}

/// Keeps a uniform sample of the valid conversations as they stream by (Algorithm R).
struct Sampler<'a> {
    counter: &'a Counter,
    /// Conversations the tokenizer failed on, and the first failure.
    failed: u64,
    first_failure: Option<String>,
    keep: usize,
    output_len: Option<u64>,
    rng: ChaCha8Rng,
    valid: u64,
    read: u64,
    kept: Vec<(String, u64)>,
}

#[derive(Deserialize)]
struct Conversation {
    #[serde(default)]
    conversations: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    #[serde(default)]
    value: String,
}

impl Sampler<'_> {
    fn offer(&mut self, c: Conversation) {
        self.read += 1;
        let mut turns = c.conversations.into_iter();
        let (Some(prompt), Some(reply)) = (turns.next(), turns.next()) else { return };
        // Texts far past the filters' lengths (32 bytes a token) are left out before they are counted: a
        // tokenizer's encoding costs tens of bytes a byte, and one 40 MB prompt would take gigabytes.
        if prompt.value.len() as u64 > 32 * SHAREGPT_MAX_PROMPT
            || (self.output_len.is_none() && reply.value.len() as u64 > 32 * SHAREGPT_MAX_TOTAL)
        {
            return;
        }
        // A text the tokenizer cannot encode leaves its conversation out, counted (said when none is left).
        let counted = self.counter.count(&prompt.value).and_then(|p| match self.output_len {
            Some(n) => Ok((p, n)),
            None => self.counter.count(&reply.value).map(|r| (p, r)),
        });
        let (prompt_len, out) = match counted {
            Ok(lengths) => lengths,
            Err(why) => {
                self.failed += 1;
                self.first_failure.get_or_insert(why);
                return;
            }
        };
        let short = prompt_len < SHAREGPT_MIN || (self.output_len.is_none() && out < SHAREGPT_MIN);
        if short || prompt_len > SHAREGPT_MAX_PROMPT || prompt_len + out > SHAREGPT_MAX_TOTAL {
            return;
        }
        self.valid += 1;
        if self.kept.len() < self.keep {
            self.kept.push((prompt.value, out));
        } else {
            let j = self.rng.random_range(0..self.valid);
            if let Some(slot) = self.kept.get_mut(j as usize) {
                *slot = (prompt.value, out);
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for &mut Sampler<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for &mut Sampler<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON array of conversations")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(c) = seq.next_element::<Conversation>()? {
            self.offer(c);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d");
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    #[test]
    fn jsonl_rows_are_taken_in_order_with_their_lengths_and_escaped_for_json() {
        let (_d, p) =
            file("{\"prompt\":\"say \\\"hi\\\"\",\"output_tokens\":5}\n\n{\"text\":\"b\"}\n{\"prompt\":\"c\"}\n");
        let got = jsonl(&p, 2, None).unwrap();
        assert_eq!(got.rows.len(), 2);
        assert_eq!((got.rows.row(0).get(0), got.rows.row(0).get(1)), (Some("say \\\"hi\\\""), Some("5")));
        assert_eq!(got.rows.row(1).get(1), Some("256"));
        assert_eq!(jsonl(&p, 10, Some(7)).unwrap().rows.row(2).get(1), Some("7"));
    }

    #[test]
    fn a_bad_jsonl_file_is_named_by_its_line_and_its_fix() {
        for (text, says) in [
            ("{\"prompt\":\"a\"}\nnot json\n", "line 2, column 2: expected ident; each line"),
            ("{\"prompt\":\"a\"}\n{\"q\":1}\n", "line 2: no \"prompt\""),
            ("{\"prompt\":\"a\",\"max_tokens\":0}\n", "line 1: an output length of 0"),
            ("\n\n", "no prompt in it"),
        ] {
            let (_d, p) = file(text);
            let e = jsonl(&p, 10, None).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
        assert!(jsonl(Path::new("/dev/zero"), 1, None).unwrap_err().starts_with("not a regular file"));
    }

    #[test]
    fn sharegpt_keeps_first_turns_within_vllms_filters_and_samples_with_a_seed() {
        let conv = |p: &str, r: &str| {
            format!(
                "{{\"id\":\"x\",\"conversations\":[{{\"from\":\"human\",\"value\":\"{p}\"}},{{\"from\":\"gpt\",\"value\":\"{r}\"}},{{\"from\":\"human\",\"value\":\"more\"}}]}}"
            )
        };
        let long = "w".repeat(5000);
        let mut items: Vec<String> =
            (0..50).map(|i| conv(&format!("prompt number {i:03} here"), &"r".repeat(40))).collect();
        items.push(conv("hi", &"r".repeat(40))); // a prompt under 4 tokens
        items.push(conv(&long, "a reply long enough")); // a prompt over 1024 tokens
        items.push("{\"conversations\":[{\"value\":\"alone in here\"}]}".into());
        let (_d, p) = file(&format!("[{}]", items.join(",")));
        let got = sharegpt(&p, 10, None, 1, &Counter::Estimate).unwrap();
        assert_eq!(got.rows.len(), 10);
        assert_eq!(got.rows.row(0).get(1), Some("10"));
        assert!(got.note.contains("from 50 of the 53 conversations"), "{}", got.note);
        let again = sharegpt(&p, 10, None, 1, &Counter::Estimate).unwrap();
        let firsts = |r: &Rows| (0..r.len()).map(|i| r.row(i).get(0).unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(firsts(&got.rows), firsts(&again.rows));
        assert_ne!(firsts(&got.rows), firsts(&sharegpt(&p, 10, None, 2, &Counter::Estimate).unwrap().rows));
        // A fixed output length lifts the reply's floor alone: the prompt of one token stays out.
        assert_eq!(sharegpt(&p, 100, Some(3), 1, &Counter::Estimate).unwrap().rows.len(), 50);
        // With a tokenizer the lengths are the model's: the fixture makes a token of each 'r' (40, not 10).
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokenizer.json");
        let counter = Counter::load(Path::new(fixture)).unwrap();
        let exact = sharegpt(&p, 10, None, 1, &counter).unwrap();
        assert_eq!(exact.rows.row(0).get(1), Some("40"));
        assert!(exact.note.contains("counted by the tokenizer"), "{}", exact.note);
    }

    #[test]
    fn a_trace_gives_prompts_of_its_lengths_in_time_order() {
        let (_d, p) = file(
            "{\"timestamp\": 500, \"input_length\": 3, \"output_length\": 7, \"hash_ids\": [1]}\n\
             {\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2}\n",
        );
        let (got, at) = trace(&p, 10, 1, None).unwrap();
        assert_eq!(at, [0, 500_000]);
        assert_eq!(got.rows.row(0).get(0).unwrap().split(' ').count(), 5);
        // A tokenizer that makes 2 tokens a word: 5 tokens are 3 words (rounded), 3 are 2.
        let (sized, _) = trace(&p, 10, 1, Some(2.0)).unwrap();
        let words = |i: usize| sized.rows.row(i).get(0).unwrap().split(' ').count();
        assert_eq!((words(0), words(1)), (3, 2));
        assert!(sized.note.contains("by the tokenizer (2.00 tokens a word)"), "{}", sized.note);
        assert_eq!((got.rows.row(0).get(1), got.rows.row(1).get(1)), (Some("2"), Some("7")));
        for (text, says) in [
            ("{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 2}", "line 1: input_length 0"),
            ("{\"timestamp\": -1, \"input_length\": 1, \"output_length\": 2}", "line 1: timestamp -1"),
            ("{\"input_length\": 1}", "line 1, column "),
        ] {
            let (_d, p) = file(text);
            assert!(trace(&p, 10, 1, None).unwrap_err().contains(says), "{text}");
        }
    }

    #[test]
    fn a_bad_sharegpt_file_says_where_and_what_the_shape_is() {
        for (text, says) in [
            ("{\"a\":1}", "line 1, column 1: "),
            ("[{\"conversations\":[{\"value\":\"x\"}]}", "line 1, column 34: EOF while parsing a list; "),
            ("[]", "none of its 0 conversations"),
        ] {
            let (_d, p) = file(text);
            let e = sharegpt(&p, 10, None, 0, &Counter::Estimate).unwrap_err();
            assert!(e.contains(says) && e.contains("a ShareGPT file is a JSON array"), "{text}: {e}");
        }
    }
}
