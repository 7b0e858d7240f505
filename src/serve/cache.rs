//! The simulated cache behind `/cache`: an LRU of keys whose misses the caller makes expensive.

use std::num::NonZeroUsize;
use std::sync::Mutex;

use lru::LruCache;

/// Keys only: what matters to a load test is whether a lookup hits, not what it returns.
pub struct Cache {
    /// `None` when the size is 0: then every lookup misses.
    lru: Option<Mutex<LruCache<String, ()>>>,
}

impl Cache {
    pub fn new(entries: usize) -> Cache {
        Cache { lru: NonZeroUsize::new(entries).map(|n| Mutex::new(LruCache::new(n))) }
    }

    /// Whether `key` is cached; a hit makes it the most recently used.
    pub fn lookup(&self, key: &str) -> bool {
        self.lru.as_ref().is_some_and(|m| lock(m).get(key).is_some())
    }

    /// Caches `key` once its miss has been paid for, evicting the least recently used entry if full.
    pub fn insert(&self, key: &str) {
        if let Some(m) = &self.lru {
            lock(m).put(key.to_owned(), ());
        }
    }
}

/// A panic elsewhere must not take the cache down with it: the LRU stays consistent between calls.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_misses_until_inserted_then_hits() {
        let c = Cache::new(2);
        assert!(!c.lookup("a"));
        c.insert("a");
        assert!(c.lookup("a"));
    }

    #[test]
    fn the_least_recently_used_key_is_evicted() {
        let c = Cache::new(2);
        c.insert("a");
        c.insert("b");
        assert!(c.lookup("a"));
        c.insert("c");
        assert!(c.lookup("a") && c.lookup("c"));
        assert!(!c.lookup("b"));
    }

    #[test]
    fn a_cache_of_size_zero_always_misses() {
        let c = Cache::new(0);
        c.insert("a");
        assert!(!c.lookup("a"));
    }
}
