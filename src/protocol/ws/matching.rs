//! `--match-field`: the id an answer is paired with its message by, read at a JSON pointer (RFC 6901) in both.

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
}
