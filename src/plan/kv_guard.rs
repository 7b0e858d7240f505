//! What a key-value run may do to data it did not write: nothing without a flag. The plan says what the workload
//! needs (an empty database, keys it will write); the engine looks at every server before the load (its
//! `survey`, which this layer below it does not name); [`Guard::judge`] turns what it found into a refusal or notes.
//!
//! redis-benchmark, memtier_benchmark and YCSB never clear a server; Kyoto's order and wicked do, as their model of
//! the data starts from nothing. So: order and wicked refuse a target holding keys unless `--flush`; the mix and
//! YCSB's load phase refuse to overwrite keys that already exist unless `--overwrite`, except under hakaru's own
//! key prefix, whose keys are an earlier run's by name (memtier's `memtier-` plays the same part).

use std::sync::Arc;

use crate::error::UsageError;
use crate::protocol::Protocol;

/// The default `--key-prefix`, and what marks a prefix as hakaru's own.
pub const OWN_PREFIX: &str = "hakaru:";

/// Keys the run writes, and whether existing ones are hakaru's by name.
#[derive(Clone)]
pub struct Written {
    /// The first key's number: keys are numbered first .. first + count.
    pub first: u64,
    /// How many keys.
    pub count: u64,
    /// The key of number n.
    pub key: Arc<dyn Fn(u64) -> Vec<u8> + Send + Sync>,
    /// For people: `hakaru:0 ... hakaru:999`.
    pub shown: String,
    /// Under hakaru's own prefix: keys found are an earlier run's, overwritten with a note.
    pub own: bool,
    /// Why the keys written cannot be looked up (a template writing a key other than one `__key__`): a server
    /// holding anything is then refused unless `--overwrite`.
    pub unknowable: Option<&'static str>,
    /// What else the user may do, said in a refusal (before `--overwrite`).
    pub instead: &'static str,
}

impl std::fmt::Debug for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Written").field("count", &self.count).field("shown", &self.shown).finish()
    }
}

/// The rules of one run.
#[derive(Clone, Debug)]
pub struct Guard {
    pub workload: String,
    pub protocol: Protocol,
    /// order and wicked: their model starts from an empty database.
    pub needs_empty: bool,
    /// `--flush`: everything is deleted before the load (the setup sends it).
    pub flush: bool,
    /// `--overwrite`: existing keys the run writes may be overwritten.
    pub overwrite: bool,
    /// Keys the run writes that could hold someone else's data (None: it writes none, or needs an empty target).
    pub writes: Option<Written>,
}

/// What the engine found on one server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holding {
    /// The server as the user wrote it, password hidden.
    pub target: String,
    /// Keys in the database (Redis `DBSIZE`) or items on the server (memcached `curr_items`).
    pub items: u64,
    /// Of the keys the run writes: how many were looked at and how many exist. None when not looked (an empty
    /// target, or nothing written); `Unknown` when the server cannot say.
    pub found: Option<Found>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// `existing` of `checked` keys exist; `checked` is below the run's key count when a sample was looked at.
    Counted { checked: u64, existing: u64 },
    /// The keys could not all be looked up: why (memcached without meta commands; more keys than are looked up one
    /// by one, under a prefix not hakaru's, where a sample could miss someone's key).
    Unknown(&'static str),
}

/// The most keys looked at on one server: beyond, an evenly spaced sample (100 round trips of 1,000 on Redis).
pub const MAX_CHECKED: u64 = 100_000;

impl Guard {
    /// What the run must look at before the load: the item count always, the keys it writes when there are any
    /// (with `--overwrite` too, to say how many it overwrote; not with `--flush`, which deletes them first).
    pub fn keys_to_check(&self) -> Option<&Written> {
        if self.flush { None } else { self.writes.as_ref() }
    }

    fn unit(&self) -> &'static str {
        if self.protocol == Protocol::Resp { "keys" } else { "items" }
    }

    /// A refusal in one line, or the notes the run prints (what `--flush` deleted, which keys were overwritten).
    pub fn judge(&self, holdings: &[Holding]) -> Result<Vec<String>, UsageError> {
        let unit = self.unit();
        let mut notes = Vec::new();
        for h in holdings {
            if self.flush {
                if h.items > 0 {
                    notes.push(format!("--flush deleted the {} {unit} {} held before the load", h.items, h.target));
                }
                continue;
            }
            if self.needs_empty && h.items > 0 {
                let empty = if self.protocol == Protocol::Resp {
                    "point it at an empty database (redis://HOST:PORT/15)"
                } else {
                    "point it at an empty memcached"
                };
                let scope = if self.protocol == Protocol::Resp {
                    "everything in that database"
                } else {
                    "every item on that server"
                };
                return Err(UsageError::new(format!(
                    "target {}: holds {} {unit}, and --workload {} starts from an empty {} (it would delete them); {empty}, or add --flush, which deletes {scope}",
                    h.target,
                    h.items,
                    self.workload,
                    if self.protocol == Protocol::Resp { "database" } else { "server" },
                )));
            }
            let Some(w) = &self.writes else { continue };
            match h.found {
                Some(Found::Counted { existing, checked }) if existing > 0 => {
                    let sampled =
                        if checked < w.count { format!(" (a sample of {checked} looked at)") } else { String::new() };
                    if w.own {
                        notes.push(format!(
                            "{existing} of the {} keys this run writes ({}) were on {} before it{sampled}, under hakaru's own prefix (an earlier run's): they are overwritten",
                            w.count, w.shown, h.target
                        ));
                    } else if self.overwrite {
                        notes.push(format!(
                            "--overwrite: {existing} of the {} keys this run writes ({}) existed on {}{sampled} and are overwritten",
                            w.count, w.shown, h.target
                        ));
                    } else {
                        return Err(UsageError::new(format!(
                            "target {}: {existing} of the {} keys this run writes ({}) already exist{sampled}, and the run would overwrite them; {}, or add --overwrite",
                            h.target, w.count, w.shown, w.instead
                        )));
                    }
                }
                Some(Found::Unknown(why)) if !w.own && !self.overwrite => {
                    return Err(UsageError::new(format!(
                        "target {}: holds {} {unit}, and whether the keys this run writes ({}) are among them cannot be told ({why}); {}, or add --overwrite",
                        h.target, h.items, w.shown, w.instead
                    )));
                }
                _ => {}
            }
        }
        Ok(notes)
    }
}

/// `prefix0 ... prefix999`, as a user reads the keys of a numbered range.
pub fn shown_range(first: &[u8], last: &[u8]) -> String {
    format!("{} ... {}", String::from_utf8_lossy(first), String::from_utf8_lossy(last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(needs_empty: bool, flush: bool, overwrite: bool, own: bool) -> Guard {
        Guard {
            workload: if needs_empty { "order".into() } else { "mix".into() },
            protocol: Protocol::Resp,
            needs_empty,
            flush,
            overwrite,
            writes: (!needs_empty).then(|| Written {
                first: 0,
                count: 1000,
                key: Arc::new(|n| format!("k:{n}").into_bytes()),
                shown: "k:0 ... k:999".into(),
                own,
                unknowable: None,
                instead: "choose another --key-prefix",
            }),
        }
    }

    fn held(items: u64, found: Option<Found>) -> Vec<Holding> {
        vec![Holding { target: "redis://127.0.0.1:6379".into(), items, found }]
    }

    #[test]
    fn the_flags_default_prefix_is_hakarus_own() {
        use clap::Parser as _;
        let cli = crate::cli::args::Cli::try_parse_from(["hakaru", "kv", "redis://127.0.0.1"]).unwrap();
        let crate::cli::args::Command::Kv(kv) = cli.command else { panic!("kv") };
        assert_eq!(kv.key_prefix, OWN_PREFIX);
    }

    #[test]
    fn a_workload_that_clears_refuses_a_target_holding_keys_unless_flush() {
        let e = guard(true, false, false, false).judge(&held(1000, None)).unwrap_err().to_string();
        assert!(e.starts_with("target redis://127.0.0.1:6379: holds 1000 keys"), "{e}");
        assert!(e.contains("--workload order") && e.contains("--flush, which deletes everything"), "{e}");
        assert_eq!(guard(true, false, false, false).judge(&held(0, None)).unwrap(), Vec::<String>::new());
        let notes = guard(true, true, false, false).judge(&held(1000, None)).unwrap();
        assert_eq!(notes, ["--flush deleted the 1000 keys redis://127.0.0.1:6379 held before the load"]);
    }

    #[test]
    fn existing_keys_are_refused_under_a_foreign_prefix_and_noted_under_hakarus() {
        let found = Some(Found::Counted { checked: 1000, existing: 7 });
        let e = guard(false, false, false, false).judge(&held(50, found)).unwrap_err().to_string();
        assert!(e.contains("7 of the 1000 keys this run writes (k:0 ... k:999) already exist"), "{e}");
        assert!(e.ends_with("choose another --key-prefix, or add --overwrite"), "{e}");
        let notes = guard(false, false, false, true).judge(&held(50, found)).unwrap();
        assert!(notes[0].contains("hakaru's own prefix"), "{notes:?}");
        let notes = guard(false, false, true, false).judge(&held(50, found)).unwrap();
        assert!(notes[0].starts_with("--overwrite: 7 of the 1000"), "{notes:?}");
        // Keys elsewhere in the database are not the run's business.
        let none = Some(Found::Counted { checked: 1000, existing: 0 });
        assert!(guard(false, false, false, false).judge(&held(50, none)).unwrap().is_empty());
        let unknown = Some(Found::Unknown("no meta commands"));
        let e = guard(false, false, false, false).judge(&held(50, unknown)).unwrap_err().to_string();
        assert!(e.contains("cannot be told (no meta commands)"), "{e}");
    }
}
