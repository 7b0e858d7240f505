//! `{{words LOW HIGH}}`'s vocabulary (synthetic LLM prompts): short, common English words, each one token (with the space
//! before it) in the GPT-2, Llama and Qwen vocabularies, so a prompt of N words is about N tokens without a
//! tokenizer.

use rand::RngExt as _;
use rand_chacha::ChaCha8Rng;

const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not", "he",
    "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you", "were", "their",
    "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when", "will", "would", "who", "so", "no",
    "time", "people", "year", "day", "way", "man", "world", "life", "hand", "part", "place", "case", "week", "work",
    "point", "home", "water", "room", "book", "eye", "job", "word", "side", "kind", "head", "house", "service",
    "friend", "power", "hour", "game", "line", "end", "city", "name", "team", "idea", "body", "face", "level", "door",
    "car", "law", "story", "war", "art", "form", "food", "land", "road", "rate", "list", "test",
];

/// `n` words drawn from the vocabulary, space-separated, onto `out`.
pub fn push(n: u64, rng: &mut ChaCha8Rng, out: &mut Vec<u8>) {
    out.reserve(n as usize * 5);
    for i in 0..n {
        if i > 0 {
            out.push(b' ');
        }
        out.extend_from_slice(WORDS[rng.random_range(0..WORDS.len())].as_bytes());
    }
}

#[cfg(test)]
fn prompt(n: u64, rng: &mut ChaCha8Rng) -> String {
    let mut out = Vec::new();
    push(n, rng, &mut out);
    String::from_utf8(out).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng as _;

    #[test]
    fn a_prompt_has_the_words_asked_and_a_seed_repeats_it() {
        let a = prompt(100, &mut ChaCha8Rng::seed_from_u64(7));
        assert_eq!(a.split(' ').count(), 100);
        assert_eq!(a, prompt(100, &mut ChaCha8Rng::seed_from_u64(7)));
        assert_ne!(a, prompt(100, &mut ChaCha8Rng::seed_from_u64(8)));
        assert_eq!(prompt(0, &mut ChaCha8Rng::seed_from_u64(7)), "");
    }
}
