//! Which answers count as successes (`--ok-status 200-399`): a set of status codes, checked once per answer.

/// Status codes 0..=999 as a bit set: one lookup per answer on the hot path, no allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusSet {
    bits: [u64; 16],
    /// The set as the user wrote it (normalised), for the result document.
    text: String,
}

/// The highest status code the set holds; HTTP codes have three digits.
const MAX_CODE: u16 = 999;

impl StatusSet {
    /// Reads a list of codes and ranges: `200-399`, `200,204,301-302`. The error says which part is wrong.
    pub fn parse(text: &str) -> Result<StatusSet, String> {
        let mut set = StatusSet { bits: [0; 16], text: String::new() };
        let mut parts = Vec::new();
        for part in text.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(format!("an empty entry in '{text}'"));
            }
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (code(a.trim())?, code(b.trim())?),
                None => (code(part)?, code(part)?),
            };
            if hi < lo {
                return Err(format!("the range '{part}' ends below its start"));
            }
            for c in lo..=hi {
                set.bits[(c / 64) as usize] |= 1 << (c % 64);
            }
            parts.push(if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") });
        }
        set.text = parts.join(",");
        Ok(set)
    }

    /// Whether an answer with this status is a success.
    #[inline]
    pub fn contains(&self, status: u16) -> bool {
        status <= MAX_CODE && self.bits[(status / 64) as usize] & (1 << (status % 64)) != 0
    }

    pub fn text(&self) -> &str {
        &self.text
    }
}

impl Default for StatusSet {
    /// 2xx and 3xx: what wrk's users and k6's `http_req_failed` call a success.
    fn default() -> Self {
        StatusSet::parse("200-399").expect("a valid default")
    }
}

fn code(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(c) if (100..=MAX_CODE).contains(&c) => Ok(c),
        _ => Err(format!("'{text}' is not a status code (100 to 999)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_holds_2xx_and_3xx_only() {
        let s = StatusSet::default();
        assert!(s.contains(200) && s.contains(204) && s.contains(399));
        assert!(!s.contains(199) && !s.contains(400) && !s.contains(503) && !s.contains(0) && !s.contains(1000));
        assert_eq!(s.text(), "200-399");
    }

    #[test]
    fn lists_of_codes_and_ranges_are_read() {
        let s = StatusSet::parse(" 200, 404 ,500-502").unwrap();
        assert!(s.contains(200) && s.contains(404) && s.contains(501));
        assert!(!s.contains(201) && !s.contains(503));
        assert_eq!(s.text(), "200,404,500-502");
    }

    #[test]
    fn bad_sets_say_which_part_is_wrong() {
        assert!(StatusSet::parse("2xx").unwrap_err().contains("'2xx'"));
        assert!(StatusSet::parse("399-200").unwrap_err().contains("ends below"));
        assert!(StatusSet::parse("200,,300").unwrap_err().contains("empty"));
        assert!(StatusSet::parse("0").is_err());
        assert!(StatusSet::parse("1000").is_err());
    }
}
