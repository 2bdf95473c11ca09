//! Items read from the data file, kept for later reads of the same store handle as long as no
//! data commit has begun since they were read (ADR 28).
//!
//! Every process on the data folder counts its data commits in the shared gate file (see
//! [`crate::gate_file::GateFile::settled_commits`]). What is kept is labelled with the count a
//! read saw *before* it read the file; a later read uses it only when it sees that same count,
//! settled. Counts only grow, so a commit by any process, begun after the items were read,
//! makes them unusable for good. Nothing is kept or used while a commit is under way.

use std::collections::HashMap;
use std::sync::Mutex;

use store::{Item, Key};

/// Most items kept per handle; when full, everything is dropped and kept afresh.
const MAX_ITEMS: usize = 1024;
/// Oldest kept item used, in seconds: a bound for the one case the count cannot see (a gate
/// file replaced under a running process, ADR 27), not something correctness relies on.
const MAX_AGE_SECONDS: i64 = 1;

/// What one store handle kept.
#[derive(Debug, Default)]
pub(crate) struct ReadCache {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The commit count everything in `items` was read under.
    count: u64,
    /// By key: when it was read (seconds, the store's clock) and what was stored then.
    items: HashMap<Key, (i64, Option<Item>)>,
}

impl State {
    /// Moves to `count` when it is newer (dropping what was kept); whether `count` is the
    /// current one (an older count, seen by a slow read, uses and keeps nothing).
    fn at(&mut self, count: u64) -> bool {
        if count > self.count {
            self.items.clear();
            self.count = count;
        }
        count == self.count
    }
}

impl ReadCache {
    /// Answers the positions `wanted` of `keys` from what was kept under `count` (writing them
    /// into `items`); returns the positions still to be read from the file.
    pub(crate) fn fill(
        &self,
        count: u64,
        now: i64,
        keys: &[Key],
        wanted: Vec<usize>,
        items: &mut [Option<Item>],
    ) -> Vec<usize> {
        let mut state = crate::lock(&self.state);
        if !state.at(count) {
            return wanted;
        }
        let recent = |read_at: i64| (0..=MAX_AGE_SECONDS).contains(&(now - read_at));
        wanted
            .into_iter()
            .filter(|&i| match state.items.get(&keys[i]) {
                Some((read_at, item)) if recent(*read_at) => {
                    items[i].clone_from(item);
                    false
                }
                _ => true,
            })
            .collect()
    }

    /// Keeps what a read found in the file after seeing `count`.
    pub(crate) fn keep<'a>(
        &self,
        count: u64,
        now: i64,
        read: impl IntoIterator<Item = (&'a Key, &'a Option<Item>)>,
    ) {
        let mut state = crate::lock(&self.state);
        if !state.at(count) {
            return;
        }
        for (key, item) in read {
            if state.items.len() >= MAX_ITEMS {
                state.items.clear();
            }
            state.items.insert(key.clone(), (now, item.clone()));
        }
    }
}
