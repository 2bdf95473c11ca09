//! Items read from the data file, kept for later reads of the same store handle as long as no
//! data commit has begun writing their partition since they were read (ADR 28, ADR 31).
//!
//! Every process on the data folder records in the shared gate file, for each group of
//! partitions, the number of the last data commit that began writing it (see
//! [`crate::gate_file::Labels`]). What is kept is labelled with the number a read saw for the
//! item's partition *before* it read the file; a later read uses it only when it sees that same
//! number, settled. Numbers only grow, so a commit by any process, begun after the item was
//! read, makes it unusable for good. Nothing of a partition is kept or used while a commit
//! writing it is under way.

use std::hash::BuildHasher as _;

/// Maps of this cache hash with foldhash: their keys are the server's own (store keys and
/// slots), and SipHash cost more than the lookups it guards on every call.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
use std::sync::Mutex;

use store::{Derived, Item, Key};

/// Most items kept per handle; when full, everything is dropped and kept afresh. Enough for
/// the credentials of dozens of connections (four items each, the switches shared); under
/// writes the items of the written partitions fill it too, and ADR 28's 1,024 peaked about
/// 1 MiB higher in two paired load runs (ADR 31).
const MAX_ITEMS: usize = 256;
/// Oldest kept item used, in seconds: a bound for the one case the labels cannot see (a gate
/// file replaced under a running process, ADR 27), not something correctness relies on.
const MAX_AGE_SECONDS: i64 = 1;

/// What one store handle kept: by key, its partition's label when read, when it was read
/// (seconds, the store's clock) and what was stored then.
#[derive(Debug, Default)]
pub(crate) struct ReadCache {
    items: Mutex<HashMap<Key, Kept>>,
}

#[derive(Debug)]
struct Kept {
    label: u64,
    read_at: i64,
    item: Option<Item>,
}

impl Kept {
    /// Whether it is recent enough to be used at `now`.
    fn recent(&self, now: i64) -> bool {
        recent(self.read_at, now)
    }
}

/// Makes room in a full map for a new `key` (replacing a kept one needs none): what is too old
/// to be used (`recent` false) goes first; when nothing is, everything goes.
fn make_room<K: std::hash::Hash + Eq, V>(
    map: &mut HashMap<K, V>,
    key: &K,
    recent: impl Fn(&V) -> bool,
) {
    if map.len() >= MAX_ITEMS && !map.contains_key(key) {
        map.retain(|_, v| recent(v));
        if map.len() >= MAX_ITEMS {
            map.clear();
        }
    }
}

/// Whether what was read at `read_at` is recent enough to be used at `now`.
fn recent(read_at: i64, now: i64) -> bool {
    (0..=MAX_AGE_SECONDS).contains(&(now - read_at))
}

impl ReadCache {
    /// Answers the positions `wanted` of `keys` (each with its partition's label, `None` while
    /// a commit writing it is under way) from what was kept under the same label, writing them
    /// into `items`; returns the positions still to be read from the file.
    pub(crate) fn fill(
        &self,
        now: i64,
        keys: &[Key],
        wanted: Vec<(usize, Option<u64>)>,
        items: &mut [Option<Item>],
    ) -> Vec<(usize, Option<u64>)> {
        let kept = crate::lock(&self.items);
        wanted
            .into_iter()
            .filter(|&(i, label)| match (label, kept.get(&keys[i])) {
                (Some(label), Some(k)) if k.label == label && k.recent(now) => {
                    items[i].clone_from(&k.item);
                    false
                }
                _ => true,
            })
            .collect()
    }

    /// Keeps what a read found in the file, each item under the label its partition had
    /// before the read (nothing for a partition whose commit was under way).
    pub(crate) fn keep<'a>(
        &self,
        now: i64,
        read: impl IntoIterator<Item = (&'a Key, Option<u64>, &'a Option<Item>)>,
    ) {
        let mut kept = crate::lock(&self.items);
        for (key, label, item) in read {
            let Some(label) = label else { continue };
            make_room(&mut kept, key, |k| k.recent(now));
            let item = item.clone();
            let read_at = now;
            kept.insert(
                key.clone(),
                Kept {
                    label,
                    read_at,
                    item,
                },
            );
        }
    }
}

/// Values derived from items (ADR 32), each kept under the labels the items' partitions had
/// before the items were read, by the same rules as a kept item.
#[derive(Default)]
pub(crate) struct DerivedCache {
    values: Mutex<HashMap<u64, KeptValue>>,
}

struct KeptValue {
    name: &'static str,
    keys: Vec<Key>,
    labels: Vec<u64>,
    read_at: i64,
    /// The expiry of every item that had one: the value holds only while all are ahead.
    expiries: Vec<store::Number>,
    value: Derived,
}

impl KeptValue {
    fn usable(&self, now: i64, labels: &[Option<u64>]) -> bool {
        recent(self.read_at, now)
            && self.labels.len() == labels.len()
            && self.labels.iter().zip(labels).all(|(k, l)| Some(*k) == *l)
            && self.expiries.iter().all(|e| e.cmp_integer(now).is_gt())
    }
}

impl std::fmt::Debug for DerivedCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let values = crate::lock(&self.values).len();
        f.debug_struct("DerivedCache")
            .field("values", &values)
            .finish()
    }
}

fn slot(name: &str, keys: &[Key]) -> u64 {
    foldhash::fast::FixedState::with_seed(0).hash_one((name, keys))
}

impl DerivedCache {
    /// What `name` made of the items at `keys` when their partitions had `labels`, if that is
    /// still what they have (every label settled and the same), recent and unexpired.
    pub(crate) fn find(
        &self,
        now: i64,
        name: &str,
        keys: &[Key],
        labels: &[Option<u64>],
    ) -> Option<Derived> {
        let values = crate::lock(&self.values);
        let kept = values.get(&slot(name, keys))?;
        (kept.name == name && kept.keys == keys && kept.usable(now, labels))
            .then(|| Derived::clone(&kept.value))
    }

    /// Keeps `value`, made by `name` from `items` read after their partitions had `labels`
    /// (nothing when any label was unsettled).
    pub(crate) fn keep(
        &self,
        now: i64,
        name: &'static str,
        keys: &[Key],
        labels: &[Option<u64>],
        items: &[Option<Item>],
        value: &Derived,
    ) {
        let Some(labels) = labels.iter().copied().collect::<Option<Vec<u64>>>() else {
            return;
        };
        let expiries = items
            .iter()
            .flatten()
            .filter_map(|item| match item.get(store::TTL_ATTRIBUTE) {
                Some(store::Value::N(expiry)) => Some(expiry.clone()),
                _ => None,
            })
            .collect();
        let mut values = crate::lock(&self.values);
        let slot = slot(name, keys);
        make_room(&mut values, &slot, |k| recent(k.read_at, now));
        values.insert(
            slot,
            KeptValue {
                name,
                keys: keys.to_vec(),
                labels,
                read_at: now,
                expiries,
                value: Derived::clone(value),
            },
        );
    }
}
