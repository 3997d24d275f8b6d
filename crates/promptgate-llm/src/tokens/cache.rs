//! Counts remembered by a keyed hash of the text, in two generations: when the newer one is full
//! the older is forgotten, and a count found in the older is carried over. Memory stays bounded
//! (two maps of [`GENERATION`] entries, about 1.5 MiB) while a thread's history, read on every
//! send, stays remembered.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, MutexGuard};

use super::Tokenizer;

/// Entries one generation holds.
const GENERATION: usize = 32_768;

/// A remembered count's key: the tokenizer and a hash of the text, keyed per process so that no
/// one can make two texts collide on purpose.
pub(super) type Key = (Tokenizer, u64);

#[derive(Default)]
pub(crate) struct CountCache {
    hasher: RandomState,
    maps: Mutex<Generations>,
}

#[derive(Default)]
struct Generations {
    newer: HashMap<Key, usize>,
    older: HashMap<Key, usize>,
}

impl CountCache {
    pub(super) fn key(&self, tokenizer: Tokenizer, text: &str) -> Key {
        (tokenizer, self.hasher.hash_one(text))
    }

    fn lock(&self) -> MutexGuard<'_, Generations> {
        self.maps
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn get(&self, key: Key) -> Option<usize> {
        let mut maps = self.lock();
        if let Some(count) = maps.newer.get(&key) {
            return Some(*count);
        }
        let count = maps.older.get(&key).copied()?;
        maps.insert(key, count);
        Some(count)
    }

    pub(super) fn put(&self, key: Key, count: usize) {
        self.lock().insert(key, count);
    }
}

impl Generations {
    fn insert(&mut self, key: Key, count: usize) {
        if self.newer.len() >= GENERATION {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(key, count);
    }
}
