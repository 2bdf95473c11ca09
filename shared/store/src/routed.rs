//! A [`Store`] split by owner: each operation goes to the object its keys live in
//! ([`crate::placement`]), as one message ([`crate::remote`]). The edge keeps one Durable
//! Object per workspace and one for the deployment (ADR 51); this is the part of that which
//! needs no runtime, so that it is tested natively.
//!
//! - A read of keys in several objects is one message per object, sent at once, answered in
//!   the order asked.
//! - The global kill switch ([`Place::Mirrored`]) goes with the workspace keys of its
//!   operation (that object's copy is read or checked in the same step as its write), and to
//!   the global object otherwise (where it is set).
//! - A transaction commits in one object. One that addresses a workspace's items and the
//!   deployment's (making a workspace lists it; revoking a token made before ADR 51 ends its
//!   legacy index item) commits the workspace's part first and then the deployment's, each
//!   whole; if the second fails after the first committed, the error says so (unavailable,
//!   never "cancelled", which would say that nothing was written). A transaction
//!   over two workspaces is refused ([`Invalid::SpansWorkspaces`]).

use std::sync::Arc;

use crate::placement::{self, Place};
use crate::remote::{RemoteStore, Transport};
use crate::{
    CancelReason, Delete, Invalid, Item, Key, Page, Put, Query, Store, StoreError, TransactOp,
    Update,
};

/// One object of a split store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Object {
    /// The object of a workspace (tenant id).
    Workspace(String),
    /// The deployment's object.
    Global,
}

/// Carries one encoded message to an object and brings back its encoded outcome.
#[async_trait::async_trait]
pub trait Router: Send + Sync + std::fmt::Debug + 'static {
    /// Sends `request` (JSON) to `object`; returns the outcome (JSON) or why it never arrived.
    async fn send(&self, object: &Object, request: String) -> Result<String, StoreError>;
}

/// The store over the objects a [`Router`] reaches.
#[derive(Debug, Clone)]
pub struct RoutedStore {
    router: Arc<dyn Router>,
}

#[derive(Debug)]
struct ToObject {
    router: Arc<dyn Router>,
    object: Object,
}

#[async_trait::async_trait]
impl Transport for ToObject {
    async fn send(&self, request: String) -> Result<String, StoreError> {
        self.router.send(&self.object, request).await
    }
}

/// The object of a place; `None` for the mirrored switch, which follows the other keys.
fn object_of(place: Place<'_>) -> Option<Object> {
    match place {
        Place::Workspace(tenant) => Some(Object::Workspace(tenant.to_owned())),
        Place::Global => Some(Object::Global),
        Place::Mirrored => None,
    }
}

/// The object a lone key goes to (the switch alone: its source, the global object).
fn object_of_key(key: &Key) -> Object {
    object_of(placement::place(key)).unwrap_or(Object::Global)
}

/// The keys' positions grouped by object, workspaces first (in the order first met), the
/// global object last; the mirrored switch joins the first workspace's group, or the global
/// one when there is none.
fn groups<'a>(keys: impl Iterator<Item = &'a Key>) -> Vec<(Object, Vec<usize>)> {
    let mut groups: Vec<(Object, Vec<usize>)> = Vec::new();
    let mut mirrored = Vec::new();
    for (i, key) in keys.enumerate() {
        match object_of(placement::place(key)) {
            Some(object) => match groups.iter_mut().find(|(o, _)| *o == object) {
                Some((_, at)) => at.push(i),
                None => groups.push((object, vec![i])),
            },
            None => mirrored.push(i),
        }
    }
    groups.sort_by_key(|(o, _)| *o == Object::Global);
    match groups.first_mut() {
        Some((Object::Workspace(_), at)) => at.extend(mirrored),
        _ if !mirrored.is_empty() => match groups.iter_mut().find(|(o, _)| *o == Object::Global) {
            Some((_, at)) => at.extend(mirrored),
            None => groups.push((Object::Global, mirrored)),
        },
        _ => {}
    }
    for (_, at) in &mut groups {
        at.sort_unstable();
    }
    groups
}

impl RoutedStore {
    /// A store whose messages `router` carries.
    pub fn new(router: Arc<dyn Router>) -> Self {
        RoutedStore { router }
    }

    fn on(&self, object: Object) -> RemoteStore {
        RemoteStore::new(Arc::new(ToObject {
            router: Arc::clone(&self.router),
            object,
        }))
    }

    /// Commits `ops` in `object`, cancellation reasons placed back at the positions `at` had in
    /// the whole transaction of `len` operations.
    async fn commit_part(
        &self,
        object: Object,
        ops: &[TransactOp],
        at: &[usize],
        len: usize,
    ) -> Result<(), StoreError> {
        let part: Vec<TransactOp> = at.iter().map(|&i| ops[i].clone()).collect();
        match self.on(object).transact_write(part).await {
            Err(StoreError::TransactionCancelled { reasons }) => {
                let mut all = vec![CancelReason::None; len];
                for (reason, &i) in reasons.into_iter().zip(at) {
                    all[i] = reason;
                }
                Err(StoreError::TransactionCancelled { reasons: all })
            }
            other => other,
        }
    }
}

#[async_trait::async_trait]
impl Store for RoutedStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.on(object_of_key(key)).get(key).await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        let groups = groups(keys.iter());
        if let [(object, _)] = groups.as_slice() {
            return self.on(object.clone()).batch_get(keys).await;
        }
        let reads = groups.iter().map(|(object, at)| {
            let part: Vec<Key> = at.iter().map(|&i| keys[i].clone()).collect();
            let store = self.on(object.clone());
            async move { store.batch_get(&part).await }
        });
        let answers = futures_util::future::join_all(reads).await;
        let mut items = vec![None; keys.len()];
        for ((_, at), answer) in groups.iter().zip(answers) {
            for (item, &i) in answer?.into_iter().zip(at) {
                items[i] = item;
            }
        }
        Ok(items)
    }

    async fn put(&self, put: Put) -> Result<(), StoreError> {
        self.on(object_of_key(&put.key)).put(put).await
    }

    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        self.on(object_of_key(&update.key)).update(update).await
    }

    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        self.on(object_of_key(&delete.key)).delete(delete).await
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        let object = object_of(placement::partition_place(&query.pk)).unwrap_or(Object::Global);
        self.on(object).query(query).await
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        let groups = groups(ops.iter().map(TransactOp::key));
        match groups.as_slice() {
            [] | [_] => {
                let object = groups.into_iter().next().map_or(Object::Global, |(o, _)| o);
                self.on(object).transact_write(ops).await
            }
            [(Object::Workspace(a), _), (Object::Workspace(b), _), ..] => Err(StoreError::Invalid(
                Invalid::SpansWorkspaces(a.clone(), b.clone()),
            )),
            [(workspace, first), (Object::Global, then)] => {
                self.commit_part(workspace.clone(), &ops, first, ops.len())
                    .await?;
                self.commit_part(Object::Global, &ops, then, ops.len())
                    .await
                    .map_err(|e| {
                        // Not "cancelled": that would say nothing was written.
                        StoreError::Unavailable(format!(
                            "the workspace's part of the transaction committed, the \
                             deployment's did not: {e:?}"
                        ))
                    })
            }
            _ => Err(StoreError::Unavailable(
                "a transaction the split store cannot place".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};
    use std::sync::Mutex;

    use super::*;
    use crate::remote::{StoreRequest, encode_outcome, serve};
    use crate::test_support::{block_on, item};
    use crate::{Condition, ConditionCheck};

    /// Objects held in memory, each served as the edge's object serves it; every message
    /// recorded with its object.
    #[derive(Debug, Default)]
    struct Objects {
        rows: Mutex<HashMap<Object, BTreeMap<Key, Item>>>,
        sent: Mutex<Vec<Object>>,
    }

    #[async_trait::async_trait]
    impl Router for Objects {
        async fn send(&self, object: &Object, request: String) -> Result<String, StoreError> {
            self.sent.lock().unwrap().push(object.clone());
            let request: StoreRequest = serde_json::from_str(&request).unwrap();
            let mut all = self.rows.lock().unwrap();
            let rows = all.entry(object.clone()).or_default();
            Ok(encode_outcome(&serve(rows, request, 0)))
        }
    }

    impl Objects {
        fn holds(&self, object: &Object, key: &Key) -> bool {
            self.rows
                .lock()
                .unwrap()
                .get(object)
                .is_some_and(|rows| rows.contains_key(key))
        }

        fn sent(&self) -> Vec<Object> {
            std::mem::take(&mut *self.sent.lock().unwrap())
        }
    }

    fn workspace(t: &str) -> Object {
        Object::Workspace(t.into())
    }

    fn put(key: &Key) -> TransactOp {
        Put::new(key.clone(), item("x"))
            .when(Condition::item_not_exists())
            .into()
    }

    fn fixture() -> (Arc<Objects>, RoutedStore) {
        let objects = Arc::new(Objects::default());
        let store = RoutedStore::new(Arc::clone(&objects) as Arc<dyn Router>);
        (objects, store)
    }

    #[test]
    fn a_workspace_call_touches_its_object_only() {
        let (objects, store) = fixture();
        block_on(async {
            let switch = Key::new("system", "kill_switch");
            let record = Key::new("acme#customer", "c1");
            store
                .transact_write(vec![
                    ConditionCheck::new(switch.clone(), Condition::item_not_exists()).into(),
                    put(&record),
                ])
                .await
                .unwrap();
            assert_eq!(objects.sent(), [workspace("acme")]);
            let read = store
                .batch_get(&[
                    Key::new("acme#mcptoken", "h"),
                    switch.clone(),
                    record.clone(),
                ])
                .await
                .unwrap();
            assert!(read[2].is_some());
            assert_eq!(objects.sent(), [workspace("acme")]);
            // The switch alone goes to its source.
            store
                .put(Put::new(switch.clone(), item("on")))
                .await
                .unwrap();
            assert_eq!(objects.sent(), [Object::Global]);
            assert!(objects.holds(&Object::Global, &switch));
            assert!(!objects.holds(&workspace("acme"), &switch));
        });
    }

    #[test]
    fn a_read_across_objects_is_answered_in_the_order_asked() {
        let (_, store) = fixture();
        block_on(async {
            let keys = [
                Key::new("tenants", "acme"),
                Key::new("acme#customer", "c1"),
                Key::new("globex#customer", "c1"),
            ];
            for (key, v) in keys.iter().zip(["listed", "acme's", "globex's"]) {
                store.put(Put::new(key.clone(), item(v))).await.unwrap();
            }
            let read = store.batch_get(&keys).await.unwrap();
            let values: Vec<_> = read
                .iter()
                .map(|i| i.as_ref().unwrap()["v"].as_s().unwrap().to_owned())
                .collect();
            assert_eq!(values, ["listed", "acme's", "globex's"]);
        });
    }

    #[test]
    fn a_transaction_over_two_workspaces_is_refused_and_writes_nothing() {
        let (objects, store) = fixture();
        block_on(async {
            let (a, b) = (Key::new("acme#x", "1"), Key::new("globex#x", "1"));
            let refused = store.transact_write(vec![put(&a), put(&b)]).await;
            assert!(
                matches!(
                    refused,
                    Err(StoreError::Invalid(Invalid::SpansWorkspaces(..)))
                ),
                "{refused:?}"
            );
            assert!(objects.sent().is_empty());
        });
    }

    #[test]
    fn a_workspace_and_the_deployment_commit_the_workspace_first() {
        let (objects, store) = fixture();
        block_on(async {
            let listed = Key::new("tenants", "acme");
            let settings = Key::new("acme#tenant", "settings");
            store
                .transact_write(vec![put(&listed), put(&settings)])
                .await
                .unwrap();
            assert_eq!(objects.sent(), [workspace("acme"), Object::Global]);
            assert!(objects.holds(&Object::Global, &listed));
            assert!(objects.holds(&workspace("acme"), &settings));
            // Cancelled in the workspace: nothing reaches the deployment, and the reason sits
            // at the operation's place in the whole transaction.
            let again = store
                .transact_write(vec![put(&listed), put(&settings)])
                .await;
            let Err(StoreError::TransactionCancelled { reasons }) = again else {
                panic!("{again:?}");
            };
            assert_eq!(reasons[0], CancelReason::None);
            assert!(matches!(reasons[1], CancelReason::ConditionFailed { .. }));
            assert_eq!(objects.sent(), [workspace("acme")]);
            // Committed in the workspace but not in the deployment: unavailable, never
            // "cancelled" (which would say that nothing was written).
            let other = Key::new("acme#tenant", "other");
            let half = store.transact_write(vec![put(&listed), put(&other)]).await;
            assert!(matches!(half, Err(StoreError::Unavailable(_))), "{half:?}");
            assert!(objects.holds(&workspace("acme"), &other));
        });
    }
}
