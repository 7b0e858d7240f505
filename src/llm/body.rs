//! The OpenAI request body each prompt fills, as a template (`{{prompt}}` and `{{max_tokens}}` from the dataset's
//! rows, or `{{words ...}}` and `{{rand ...}}` for synthetic prompts): streamed, with the usage asked for, so the
//! server's own token counts are read.

/// The API an endpoint serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Chat,
    Completions,
}

impl Api {
    /// The API a URL's path names: completions when it ends in `/completions` but not `/chat/completions`.
    pub fn of_path(path: &str) -> Api {
        let path = path.split('?').next().unwrap_or(path).trim_end_matches('/');
        match path.ends_with("/completions") && !path.ends_with("/chat/completions") {
            true => Api::Completions,
            false => Api::Chat,
        }
    }
}

/// What goes in every request besides the prompt.
pub struct Shape<'a> {
    pub api: Api,
    pub model: &'a str,
    /// A template (or a literal) making the prompt's characters inside a JSON string.
    pub prompt: &'a str,
    /// A template (or a literal) making the answer's max_tokens.
    pub max_tokens: &'a str,
    pub ignore_eos: bool,
    /// Streamed (with the usage asked for), or one whole answer.
    pub stream: bool,
}

/// The body template. `max_tokens` is the name every OpenAI-compatible server reads (vLLM, SGLang, TGI,
/// llama.cpp, Ollama); OpenAI's newer `max_completion_tokens` is not known to all of them.
pub fn template(s: &Shape<'_>) -> String {
    let model = serde_json::to_string(s.model).unwrap_or_default();
    let input = match s.api {
        Api::Chat => format!("\"messages\":[{{\"role\":\"user\",\"content\":\"{}\"}}]", s.prompt),
        Api::Completions => format!("\"prompt\":\"{}\"", s.prompt),
    };
    let eos = if s.ignore_eos { ",\"ignore_eos\":true" } else { "" };
    let stream = match s.stream {
        true => "\"stream\":true,\"stream_options\":{\"include_usage\":true}",
        false => "\"stream\":false",
    };
    format!("{{\"model\":{model},{input},\"max_tokens\":{},{stream}{eos}}}", s.max_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_is_told_from_the_path() {
        assert_eq!(Api::of_path("/v1/chat/completions"), Api::Chat);
        assert_eq!(Api::of_path("/v1/completions?x=1"), Api::Completions);
        assert_eq!(Api::of_path("/generate"), Api::Chat);
    }

    #[test]
    fn a_filled_body_is_the_json_openai_takes() {
        let shape = Shape {
            api: Api::Chat,
            model: "m\"1",
            prompt: "say \\\"hi\\\"",
            max_tokens: "7",
            ignore_eos: true,
            stream: true,
        };
        let json: serde_json::Value = serde_json::from_str(&template(&shape)).unwrap();
        assert_eq!(json["model"], "m\"1");
        assert_eq!(json["messages"][0]["content"], "say \"hi\"");
        assert_eq!((json["max_tokens"].as_u64(), json["stream"].as_bool()), (Some(7), Some(true)));
        assert_eq!(
            (json["stream_options"]["include_usage"].as_bool(), json["ignore_eos"].as_bool()),
            (Some(true), Some(true))
        );
        let shape = Shape { api: Api::Completions, ignore_eos: false, stream: false, ..shape };
        let json: serde_json::Value = serde_json::from_str(&template(&shape)).unwrap();
        assert_eq!((json["prompt"].as_str(), json.get("ignore_eos")), (Some("say \"hi\""), None));
        assert_eq!((json["stream"].as_bool(), json.get("stream_options")), (Some(false), None));
    }
}
