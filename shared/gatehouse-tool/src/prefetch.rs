//! Reading ahead: the items a call will need, read in the same batch as its credential.
//!
//! Every gated call needs the credential, both kill switches, the creator's rights, and (for
//! `tools/call`) its loop-brake item, its replay record and, for a confirmation, the pending
//! action. Read one after the other that is three or four round trips before the tool runs.
//! A credential that names its tenant and connection ([`Claim`]) lets the transport ask the
//! server which gate items the call will read (`mcp_pipeline::Server::prefetch_keys`) and lets the
//! authenticator fetch them all in one batch. The authenticator hands over the items only
//! once the credential proved the claim ([`Prefetched`]); the pipeline looks each item up by
//! the key it computes from the *authenticated* caller, so an item read for another
//! connection is never used: it is simply not found, and read again.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use store::{Item, Key};

/// Where a request says it comes from, before its credential is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The tenant the credential names.
    pub tenant: crate::TenantId,
    /// The connection the credential names.
    pub connection: crate::ConnectionId,
}

/// Items read ahead for one request, by key (`None`: read, and absent).
#[derive(Debug, Clone, Default)]
pub struct Prefetched(crate::FastMap<Key, Option<Item>>);

impl Prefetched {
    /// Items read for `keys`, in the same order (as `batch_get` returns them).
    pub fn new(keys: Vec<Key>, items: Vec<Option<Item>>) -> Self {
        Prefetched(keys.into_iter().zip(items).collect())
    }

    /// The items at `keys`, if every one of them was read ahead.
    #[doc(hidden)]
    pub fn all(&self, keys: &[Key]) -> Option<Vec<Option<Item>>> {
        keys.iter().map(|k| self.0.get(k).cloned()).collect()
    }

    /// The item at `key`, if it was read ahead.
    #[doc(hidden)]
    pub fn one(&self, key: &Key) -> Option<Option<Item>> {
        self.0.get(key).cloned()
    }
}

/// Runs work after the answer has been handed to the transport (giving a concurrency slot
/// back), so the caller does not wait for it. Without one, the pipeline waits for that work
/// before answering. It must run every piece of work it is given: one piece may carry the slot
/// releases of several calls (ADR 38).
#[derive(Clone)]
pub struct Defer(pub Arc<dyn Fn(BoxFuture<'static, ()>) + Send + Sync>);

impl std::fmt::Debug for Defer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Defer")
    }
}

/// Names the store item of a record handle (`bkg_...`) of a tenant, or `None` for text that
/// is not a handle. Given by the deployment, which knows the product's keys; the pipeline
/// reads the records a call names in the credential's batch and serves them to the tool's
/// reads (`store::read_ahead`).
#[derive(Clone)]
pub struct ReadAhead(pub Arc<RecordKey>);

/// `(tenant, text) -> the key of the record the text is a handle of`.
pub type RecordKey = dyn Fn(&crate::TenantId, &str) -> Option<Key> + Send + Sync;

impl std::fmt::Debug for ReadAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadAhead")
    }
}

/// At most this many records are read ahead for one call.
pub const MAX_READ_AHEAD: usize = 4;

impl ReadAhead {
    /// For a product whose arguments name no records: nothing is read ahead.
    pub fn none() -> Self {
        ReadAhead(Arc::new(|_, _| None))
    }

    /// The key of the record `text` is a handle of, in `tenant` (`None`: not a handle).
    #[doc(hidden)]
    pub fn key(&self, tenant: &crate::TenantId, text: &str) -> Option<Key> {
        (self.0)(tenant, text)
    }

    /// The handles among `args`' top-level text values, each once, at most
    /// [`MAX_READ_AHEAD`]. Whether a text is a handle does not depend on the tenant, so the
    /// handles are found once per call, before the caller is known.
    #[doc(hidden)]
    pub fn handles(&self, args: &serde_json::Map<String, serde_json::Value>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        // Any tenant will do (the empty id allocates nothing): only the text decides.
        let any_tenant = crate::TenantId::default();
        for text in args.values().filter_map(serde_json::Value::as_str) {
            if out.len() == MAX_READ_AHEAD {
                break;
            }
            if self.key(&any_tenant, text).is_some() && !out.iter().any(|h| h == text) {
                out.push(text.to_owned());
            }
        }
        out
    }
}
