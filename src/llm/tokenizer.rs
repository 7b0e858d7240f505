//! `--tokenizer FILE`: a HuggingFace `tokenizer.json`, read offline, that counts tokens as the model does: synthetic
//! prompts sized to the tokens asked, ShareGPT conversations filtered and answers sized on their real lengths. Without
//! one, lengths are estimated (a word of the synthetic vocabulary a token; 4 characters a token) and said so.

use std::path::Path;

use rand::SeedableRng as _;
use rand_chacha::ChaCha8Rng;

/// The largest tokenizer.json read: today's are 2 to 35 MB (GPT-2's 1.4, Llama 3's 9, Gemma's 33).
pub const MOST_BYTES: u64 = 64 << 20;
/// Prompts a synthetic length is checked with, and the words of each when the ratio is first measured.
pub const SAMPLES: u64 = 8;
/// The longest prompts checked: longer ones are checked at this length (tokens a word do not change with length).
pub const MOST_CHECKED: u64 = 16_384;
const PROBE_WORDS: u64 = 512;

/// How tokens are counted: by a model's tokenizer, or estimated.
pub enum Counter {
    Estimate,
    Model { tokenizer: Box<tokenizers::Tokenizer>, file: String },
}

/// Synthetic prompts sized for a token count: the words that make it, and what prompts of that many words measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sizing {
    pub words: u64,
    /// The words of the prompts measured (`words`, or [`MOST_CHECKED`]: their figures scaled to `words`).
    pub checked: u64,
    pub mean: f64,
    pub min: u64,
    pub max: u64,
}

impl Counter {
    /// The tokenizer in `path` (a regular file of at most [`MOST_BYTES`]); why not, with the fix.
    pub fn load(path: &Path) -> Result<Counter, String> {
        let bytes = crate::base::bounded::read(path, MOST_BYTES)?;
        let mut t = tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| {
            // The parser's text names the JSON's place or the missing field; a secret cannot be in a tokenizer.
            format!(
                "not a HuggingFace tokenizer.json ({}); give the model's tokenizer.json file",
                one_line(&e.to_string())
            )
        })?;
        // A tokenizer saved with truncation or padding would cut or pad what it counts.
        t.with_truncation(None).map_err(|e| format!("its truncation cannot be turned off: {e}"))?;
        t.with_padding(None);
        let counter = Counter::Model { tokenizer: Box::new(t), file: path.display().to_string() };
        // A tokenizer that cannot encode plain words, or makes no tokens of them (a vocabulary without the
        // letters and no unk_token), is no use here: said now, not during the load.
        match counter.count("the time of day and the people of the world") {
            Err(e) => Err(format!("it cannot encode plain text: {e}")),
            Ok(n) if n < 2 => Err(format!("it makes {n} token(s) of ten plain words (no unk_token?)")),
            Ok(_) => Ok(counter),
        }
    }

    /// The tokens of `text`, without the special tokens a model adds around a prompt (vLLM counts them so too).
    pub fn count(&self, text: &str) -> Result<u64, String> {
        match self {
            Counter::Estimate => Ok(estimated_tokens(text)),
            Counter::Model { tokenizer, .. } => {
                // A hostile tokenizer.json can make the library panic (a bad precompiled charsmap indexes out of
                // bounds): caught, and said as an error of this text, with the panic's own message kept quiet.
                let hook = std::panic::take_hook();
                std::panic::set_hook(Box::new(|_| {}));
                let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tokenizer.encode(text, false)));
                std::panic::set_hook(hook);
                match got {
                    Ok(Ok(e)) => Ok(e.len() as u64),
                    Ok(Err(e)) => Err(one_line(&e.to_string())),
                    Err(_) => Err("the tokenizer library failed on it (a malformed tokenizer.json?)".into()),
                }
            }
        }
    }

    /// How lengths are counted, for the run's notes.
    pub fn describe(&self) -> String {
        match self {
            Counter::Estimate => "estimated at 4 characters a token".into(),
            Counter::Model { file, .. } => format!("counted by the tokenizer {file}"),
        }
    }

    /// The words of the synthetic vocabulary that make prompts of about `tokens` tokens, checked on prompts drawn
    /// with `seed`. None without a tokenizer (a word is then taken for a token).
    /// Prompts longer than [`MOST_CHECKED`] words are checked at that length, their figures scaled.
    pub fn size(&self, tokens: u64, seed: u64) -> Result<Option<Sizing>, String> {
        let Some(per_word) = self.tokens_a_word(seed)? else { return Ok(None) };
        let words = words_for(tokens, per_word);
        if words > crate::template::text::MOST_WORDS {
            return Err(format!(
                "{tokens} tokens are {words} words of the vocabulary here, more than the {} a prompt may hold",
                crate::template::text::MOST_WORDS
            ));
        }
        let checked = words.min(MOST_CHECKED);
        let (mean, (min, max)) = self.measure(checked, &mut ChaCha8Rng::seed_from_u64(seed ^ 1))?;
        let scale = words as f64 / checked.max(1) as f64;
        let scaled = |n: u64| (n as f64 * scale).round() as u64;
        Ok(Some(Sizing { words, mean: mean * scale, min: scaled(min), max: scaled(max), checked }))
    }

    /// The tokens a word of the synthetic vocabulary makes on average (over prompts drawn with `seed`); None
    /// without a tokenizer.
    pub fn tokens_a_word(&self, seed: u64) -> Result<Option<f64>, String> {
        let Counter::Model { .. } = self else { return Ok(None) };
        let (probe, _) = self.measure(PROBE_WORDS, &mut ChaCha8Rng::seed_from_u64(seed))?;
        let per_word = probe / PROBE_WORDS as f64;
        if per_word < 0.05 {
            return Err(format!("it makes {per_word:.3} tokens a word of plain text (no unk_token?)"));
        }
        Ok(Some(per_word))
    }

    /// The mean tokens of [`SAMPLES`] prompts of `words` words, and the least and most.
    fn measure(&self, words: u64, rng: &mut ChaCha8Rng) -> Result<(f64, (u64, u64)), String> {
        let (mut sum, mut least, mut most) = (0u64, u64::MAX, 0u64);
        let mut text = Vec::new();
        for _ in 0..SAMPLES {
            text.clear();
            crate::template::words::push(words, rng, &mut text);
            let n = self.count(&String::from_utf8_lossy(&text))?;
            (sum, least, most) = (sum + n, least.min(n), most.max(n));
        }
        Ok((sum as f64 / SAMPLES as f64, (least, most)))
    }
}

/// Tokens in `text` estimated without a tokenizer: a token per 4 characters, at least one for any text.
pub fn estimated_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// The words that make about `tokens` tokens at `per_word` tokens a word: one at least for any tokens.
pub fn words_for(tokens: u64, per_word: f64) -> u64 {
    match tokens {
        0 => 0,
        t => ((t as f64 / per_word).round() as u64).max(1),
    }
}

/// A library's error text on one line (a JSON error's text may hold a newline).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Counter {
        Counter::load(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokenizer.json"))).unwrap()
    }

    #[test]
    fn a_tokenizer_counts_as_the_model_does_and_sizes_prompts_to_the_tokens_asked() {
        let t = fixture();
        // The fixture (a small byte-level BPE) has " the" and " time" as tokens but not " people".
        assert_eq!(t.count(" the time").unwrap(), 2);
        assert!(t.count(" people").unwrap() > 1);
        let s = t.size(200, 1).unwrap().expect("a tokenizer sizes");
        // Some words are several tokens here: fewer words than tokens, and the prompts measured near 200.
        assert!(s.words < 200 && (s.mean - 200.0).abs() <= 10.0 && s.min <= s.max, "{s:?}");
        assert_eq!(t.size(200, 1).unwrap(), Some(s), "a seed repeats it");
        assert_eq!(Counter::Estimate.size(200, 1).unwrap(), None);
        assert_eq!(Counter::Estimate.count("12345678").unwrap(), 2);
    }

    #[test]
    fn a_file_that_is_no_tokenizer_says_so_on_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("t.json");
        std::fs::write(&bad, "{\"model\":\n 3}").unwrap();
        let e = Counter::load(&bad).err().unwrap();
        assert!(e.starts_with("not a HuggingFace tokenizer.json (") && !e.contains('\n'), "{e}");
        assert!(Counter::load(&dir.path().join("none.json")).is_err());
        let fixture = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokenizer.json"));
        let mut doc: serde_json::Value = serde_json::from_str(&fixture.unwrap()).unwrap();
        // A malformed precompiled normalizer makes the library panic: caught, one line.
        doc["normalizer"] = serde_json::json!({"type": "Precompiled", "precompiled_charsmap": "AAAAAAAAAAAA"});
        std::fs::write(&bad, doc.to_string()).unwrap();
        let e = Counter::load(&bad).err().expect("refused");
        assert!(e.contains("failed") && !e.contains('\n'), "{e}");
        // A vocabulary without the letters and no unk_token: no tokens of plain words.
        doc["normalizer"] = serde_json::Value::Null;
        doc["model"]["vocab"] = serde_json::json!({"<|endoftext|>": 0});
        doc["model"]["merges"] = serde_json::json!([]);
        std::fs::write(&bad, doc.to_string()).unwrap();
        let e = Counter::load(&bad).err().expect("refused");
        assert!(e.contains("token(s) of ten plain words") || e.contains("cannot encode"), "{e}");
    }
}
