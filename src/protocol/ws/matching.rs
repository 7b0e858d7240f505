//! Fields read from messages at a JSON pointer (RFC 6901): `--match-field`'s id, which pairs an answer with its
//! message, and `--stamp-field`'s send time, which a pushed message's fan-out delay is measured from.

/// The most bytes of an answer kept to find its id in: an answer whose id lies past them is unmatched (`no_id`).
pub const ID_WINDOW: usize = 64 * 1024;

/// The id at `pointer` in the JSON text `message`, as bytes to compare: a string's characters, any other value's
/// JSON text (`7`, `true`, `{"a":1}`); None when the message is not JSON or holds nothing there.
pub fn id_at(message: &[u8], pointer: &str) -> Option<Vec<u8>> {
    let value: serde_json::Value = serde_json::from_slice(message).ok()?;
    match value.pointer(pointer)? {
        serde_json::Value::String(s) => Some(s.clone().into_bytes()),
        other => Some(other.to_string().into_bytes()),
    }
}

/// The send time at `pointer` in `message`, in nanoseconds since the Unix epoch: a number (or a string of one)
/// in seconds, or in milliseconds, microseconds or nanoseconds as its size says (from 1e11, 1e14 and 1e17: a
/// time after 1973 in each unit). None when the message is not JSON or holds no positive number there.
pub fn stamp_at(message: &[u8], pointer: &str) -> Option<u128> {
    let value: serde_json::Value = serde_json::from_slice(message).ok()?;
    let n = match value.pointer(pointer)? {
        serde_json::Value::Number(n) => n.as_f64()?,
        serde_json::Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    if !n.is_finite() || n <= 0.0 {
        return None;
    }
    let scale = match n {
        _ if n >= 1e17 => 1.0,
        _ if n >= 1e14 => 1e3,
        _ if n >= 1e11 => 1e6,
        _ => 1e9,
    };
    Some((n * scale) as u128)
}

/// `--match-field`'s value checked: a JSON pointer is empty or starts with `/`.
pub fn check_pointer(pointer: &str) -> Result<(), String> {
    if pointer.starts_with('/') {
        Ok(())
    } else {
        Err(format!("not a JSON pointer; give one starting with '/', e.g. --match-field /{}", pointer.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_at_the_pointer_as_text() {
        assert_eq!(id_at(br#"{"n":7,"x":"a"}"#, "/n").unwrap(), b"7");
        assert_eq!(id_at(br#"{"m":{"id":"q-1"}}"#, "/m/id").unwrap(), b"q-1");
        assert_eq!(id_at(br#"[1,{"id":2}]"#, "/1/id").unwrap(), b"2");
        // The number 7 and the string "7" are one id: the text is compared.
        assert_eq!(id_at(br#"{"n":"7"}"#, "/n"), id_at(br#"{"n":7}"#, "/n"));
        assert_eq!(id_at(br#"{"note":"no id"}"#, "/n"), None);
        assert_eq!(id_at(b"not json", "/n"), None);
        assert_eq!(id_at(br#"{"n":1"#, "/n"), None);
        assert!(check_pointer("/n").is_ok() && check_pointer("n").is_err());
    }

    #[test]
    fn a_send_time_is_read_in_the_unit_its_size_says() {
        let ns = 1_764_000_000_123_000_000u128;
        for text in [
            r#"{"t":1764000000.123}"#,
            r#"{"t":1764000000123}"#,
            r#"{"t":1764000000123000}"#,
            r#"{"t":1764000000123000000}"#,
            r#"{"t":"1764000000123"}"#,
        ] {
            let got = stamp_at(text.as_bytes(), "/t").unwrap();
            assert!(got.abs_diff(ns) < 1_000_000, "{text}: {got}");
        }
        for text in [r#"{"t":"soon"}"#, r#"{"t":-1}"#, r#"{"u":1}"#, "tick 7"] {
            assert_eq!(stamp_at(text.as_bytes(), "/t"), None, "{text}");
        }
    }
}
