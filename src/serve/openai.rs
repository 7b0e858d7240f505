//! `/v1/chat/completions` and `/v1/completions`: an OpenAI-compatible endpoint whose timing is known exactly, for
//! `hakaru llm`'s demo and its exact checks. The request's JSON says how many tokens (`max_tokens`, or
//! `max_completion_tokens`), whether to stream (`stream`, false when absent, as OpenAI's API) and whether a
//! streamed answer ends with its usage (`stream_options.include_usage`); the query says the timing (`first=`,
//! `gap=`, 50 ms and 10 ms unless given) and may shape the stream as `?events=` does (`tail=`, `cut=`, `done=0`).
//! The prompt's tokens are its words (whitespace-separated): a count the client can check without a tokenizer.

use std::time::Duration;

use super::stream::{StreamKind, StreamPlan};

/// A request body larger than this is refused (400, and the connection closed unread): a prompt of about 250,000 words, far past any test's.
pub const MOST_BODY: u64 = 1 << 20;
/// Tokens in an answer when the request names no `max_tokens` (OpenAI's completions default).
const DEFAULT_TOKENS: u64 = 16;
/// The most tokens one answer may be asked for: a test's answers are short, and a hostile `max_tokens` must not
/// hold a connection for days.
const MOST_TOKENS: u64 = 1_000_000;
const DEFAULT_FIRST: Duration = Duration::from_millis(50);
const DEFAULT_GAP: Duration = Duration::from_millis(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Chat,
    Completions,
}

/// The endpoint a path names, if it is one of the two.
pub fn endpoint(path: &str) -> Option<Endpoint> {
    match path {
        "/v1/chat/completions" => Some(Endpoint::Chat),
        "/v1/completions" => Some(Endpoint::Completions),
        _ => None,
    }
}

/// The plan an LLM request starts from, before its query and its body shape it.
pub fn default_plan(endpoint: Endpoint) -> StreamPlan {
    StreamPlan {
        asked: true,
        events: DEFAULT_TOKENS,
        first: DEFAULT_FIRST,
        gap: DEFAULT_GAP,
        kind: StreamKind::Tokens,
        completions: endpoint == Endpoint::Completions,
        whole: true,
        ..StreamPlan::default()
    }
}

/// Shapes `plan` from the request's JSON body; the error is the 400 answer's message.
pub fn shape(plan: &mut StreamPlan, body: &[u8]) -> Result<(), String> {
    let json: serde_json::Value = serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let Some(obj) = json.as_object() else { return Err("the body is not a JSON object".into()) };
    // The query's `events=` may ask for more than a body may: the whole answer is made at once, so both are bounded.
    if plan.events > MOST_TOKENS {
        return Err(format!("events={}: at most {MOST_TOKENS} tokens an answer", plan.events));
    }
    let given = |name: &str| obj.get(name).filter(|v| !v.is_null());
    if let Some(v) = given("max_completion_tokens").or_else(|| given("max_tokens")) {
        match v.as_u64() {
            Some(n) if (1..=MOST_TOKENS).contains(&n) => plan.events = n,
            _ => return Err(format!("max_tokens must be a whole number from 1 to {MOST_TOKENS}")),
        }
    }
    plan.whole = !obj.get("stream").and_then(|s| s.as_bool()).unwrap_or(false);
    let include_usage = json.pointer("/stream_options/include_usage").and_then(|u| u.as_bool()).unwrap_or(false);
    if include_usage || plan.whole {
        plan.usage = Some(plan.events);
    }
    plan.prompt_tokens = match (plan.completions, obj.get("prompt"), obj.get("messages")) {
        (true, Some(p), _) => words_in(p),
        (false, _, Some(serde_json::Value::Array(messages))) => {
            messages.iter().filter_map(|m| m.get("content")).map(words_in).sum()
        }
        (true, _, _) => return Err("a completion needs a \"prompt\"".into()),
        (false, _, _) => return Err("a chat completion needs \"messages\", an array".into()),
    };
    Ok(())
}

/// The words of a prompt: a string's, or each text part's of an array (chat content parts, or a batch of prompts).
fn words_in(value: &serde_json::Value) -> u64 {
    match value {
        serde_json::Value::String(s) => s.split_whitespace().count() as u64,
        serde_json::Value::Array(parts) => {
            parts.iter().map(|p| p.get("text").map_or_else(|| words_in(p), words_in)).sum()
        }
        _ => 0,
    }
}

/// A whole (not streamed) answer's JSON: every token's text, the finish reason and the usage.
pub fn whole_answer(plan: &StreamPlan) -> String {
    let text = "tok ".repeat(plan.events as usize);
    let (object, choice) = match plan.completions {
        true => ("text_completion", format!("{{\"index\":0,\"text\":\"{text}\",\"finish_reason\":\"length\"}}")),
        false => (
            "chat.completion",
            format!(
                "{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":\"{text}\"}},\"finish_reason\":\"length\"}}"
            ),
        ),
    };
    format!(
        "{{\"id\":\"hakaru\",\"object\":\"{object}\",\"model\":\"hakaru\",\"choices\":[{choice}],{}}}",
        plan.usage_json()
    )
}

/// An error in OpenAI's shape, for a 400 answer.
pub fn error_json(message: &str) -> String {
    let quoted = serde_json::to_string(message).unwrap_or_default();
    format!("{{\"error\":{{\"message\":{quoted},\"type\":\"invalid_request_error\"}}}}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shaped(endpoint: Endpoint, body: &str) -> Result<StreamPlan, String> {
        let mut p = default_plan(endpoint);
        shape(&mut p, body.as_bytes()).map(|()| p)
    }

    #[test]
    fn a_chat_request_sets_the_tokens_the_stream_and_the_usage() {
        let p = shaped(
            Endpoint::Chat,
            r#"{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":7,
                "messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"one two three"}]}]}"#,
        )
        .unwrap();
        assert_eq!((p.events, p.whole, p.usage, p.prompt_tokens), (7, false, Some(7), 5));
        let p = shaped(Endpoint::Chat, r#"{"messages":[{"role":"user","content":"a b"}],"stream":true}"#).unwrap();
        assert_eq!((p.events, p.whole, p.usage), (DEFAULT_TOKENS, false, None));
        let p = shaped(Endpoint::Chat, r#"{"messages":[],"max_completion_tokens":null,"max_tokens":5}"#).unwrap();
        assert_eq!(p.events, 5);
        let mut huge = default_plan(Endpoint::Chat);
        huge.events = 100_000_000;
        assert!(shape(&mut huge, b"{\"messages\":[]}").unwrap_err().contains("at most 1000000 tokens"));
    }

    #[test]
    fn a_whole_completion_answer_carries_every_token_and_its_usage() {
        let p = shaped(Endpoint::Completions, r#"{"prompt":"a b c","max_completion_tokens":3}"#).unwrap();
        assert!(p.whole);
        let json: serde_json::Value = serde_json::from_str(&whole_answer(&p)).unwrap();
        assert_eq!(json["choices"][0]["text"], "tok tok tok ");
        assert_eq!(
            (json["usage"]["prompt_tokens"].as_u64(), json["usage"]["completion_tokens"].as_u64()),
            (Some(3), Some(3))
        );
    }

    #[test]
    fn bad_requests_are_refused_with_a_reason() {
        for (endpoint, body, why) in [
            (Endpoint::Chat, "{", "not JSON"),
            (Endpoint::Chat, "[1]", "not a JSON object"),
            (Endpoint::Chat, r#"{"prompt":"x"}"#, "needs \"messages\""),
            (Endpoint::Completions, r#"{"messages":[]}"#, "needs a \"prompt\""),
            (Endpoint::Chat, r#"{"messages":[],"max_tokens":0}"#, "from 1 to"),
            (Endpoint::Chat, r#"{"messages":[],"max_tokens":99999999999}"#, "from 1 to"),
            (Endpoint::Chat, r#"{"messages":[],"max_completion_tokens":null,"max_tokens":0}"#, "from 1 to"),
        ] {
            let e = shaped(endpoint, body).unwrap_err();
            assert!(e.contains(why), "{body}: {e}");
        }
        assert!(error_json("a \"b\"\n").contains(r#""message":"a \"b\"\n""#));
    }
}
