//! The safety gates that need the store: replay protection for silent writes, the commit of a
//! call's writes with its replay record and the deployment's hooks (switch checks, audit row),
//! rate buckets per effect class, and the loop brake.
//!
//! Generic over tools: a tool gets all of this by declaring its effect class and planning its
//! writes in [`crate::Writes`]; it never calls a gate.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use store::{
    CancelReason, Condition, Item, Key, Number, Put, Store, StoreError, TransactOp, Update,
    UpdateAction, Value as SV,
};

use crate::{
    Caller, ConnectionId, EffectClass, ErrorKind, IDEMPOTENCY_KEY, TenantId, ToolError, ToolResult,
};

/// Operations a deployment adds to every MCP write transaction.
pub trait CommitHooks: std::fmt::Debug + Send + Sync + 'static {
    /// The operations (switch checks, the audit row), each with what its failure means.
    fn ops(&self, call: &CommitContext<'_>) -> Vec<(TransactOp, ToolError)>;
}

/// What the hooks know of the write being committed.
#[derive(Debug, Clone, Copy)]
pub struct CommitContext<'a> {
    /// The caller.
    pub caller: Option<&'a Caller>,
    /// The tool.
    pub tool: &'a str,
    /// Public ids the call changed.
    pub ids: &'a [String],
    /// The request id.
    pub request_id: &'a str,
    /// What the write is: `ok` for an executed call, `prepared` for a stored preview,
    /// `rejected` or `declined` for a pending action turned down, `superseded` for one
    /// replaced by a new preview.
    pub outcome: &'a str,
    /// How an executed action was approved (`None` for writes that need no approval).
    pub approval: Option<&'a str>,
    /// When the call started, in Unix microseconds (the audit row's time).
    pub now_micros: i64,
}

/// Calls admitted per window, per effect class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassLimits {
    /// Read tools.
    pub read: u32,
    /// Read tools registered as expensive (searches that scan, slot finders).
    pub expensive_read: u32,
    /// Silent writes.
    pub write: u32,
    /// Notify, alerting and delete previews and confirmations.
    pub notify: u32,
    /// Wake (paging people).
    pub wake: u32,
}

impl ClassLimits {
    fn for_class(&self, class: EffectClass, expensive: bool) -> u32 {
        match class {
            EffectClass::Read if expensive => self.expensive_read,
            EffectClass::Read => self.read,
            EffectClass::SilentWrite => self.write,
            EffectClass::Notify | EffectClass::Alerting | EffectClass::Delete => self.notify,
            EffectClass::Wake => self.wake,
        }
    }
}

/// Rate limits: fixed windows, one bucket per connection and one per tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Window length in seconds.
    pub window_seconds: i64,
    /// Per connection.
    pub per_connection: ClassLimits,
    /// Per tenant (all its connections together).
    pub per_tenant: ClassLimits,
    /// At most two calls of one connection at a time, one slot kept for writes.
    pub concurrency: bool,
    /// Messages to one object (a customer, a booking) per [`Limits::object_window_seconds`].
    pub per_object_notify: u32,
    /// The window of [`Limits::per_object_notify`].
    pub object_window_seconds: i64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            window_seconds: 60,
            per_connection: ClassLimits {
                read: 120,
                expensive_read: 20,
                write: 30,
                notify: 10,
                wake: 3,
            },
            per_tenant: ClassLimits {
                read: 600,
                expensive_read: 100,
                write: 150,
                notify: 50,
                wake: 10,
            },
            concurrency: true,
            per_object_notify: 3,
            object_window_seconds: 3600,
        }
    }
}

/// The store and settings the gates use.
#[derive(Debug, Clone)]
pub struct Gates {
    /// Where replay records, buckets and brakes live.
    pub store: Arc<dyn Store>,
    /// Operations added to every write transaction.
    pub hooks: Option<Arc<dyn CommitHooks>>,
    /// How long an identical silent write is answered from its replay record.
    pub replay_window_seconds: i64,
    /// Rate limits.
    pub limits: Limits,
}

impl Gates {
    /// Gates on `store` with the default windows and limits and no hooks.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Gates {
            store,
            hooks: None,
            replay_window_seconds: 24 * 3600,
            limits: Limits::default(),
        }
    }
}

/// Failures in a row after which an identical call is refused.
pub const BRAKE_AFTER_FAILURES: i64 = 2;
const BRAKE_WINDOW_SECONDS: i64 = 600;

/// The tenant and connection a call is keyed by (`-` without a bound connection).
pub(crate) fn scope(caller: Option<&Caller>) -> (TenantId, ConnectionId) {
    caller.map_or((TenantId::new("-"), ConnectionId::new("-")), |c| {
        (c.tenant.clone(), c.connection.clone())
    })
}

/// The loop brake as one call sees it: which call this is, and what the connection's brake
/// item said before it ran.
///
/// "In a row" means consecutive calls of the connection: the item holds only the last failing
/// call, so a failure of another call starts its own count at one, and a success of any call
/// clears it.
#[derive(Debug, Clone)]
pub(crate) struct Brake {
    key: Key,
    call: String,
    /// The failing call on record and its count (`None`: nothing on record).
    seen: Option<(String, i64)>,
}

impl Brake {
    /// The brake of `call` (tool and argument digest), from the brake item as read.
    pub(crate) fn read(key: Key, call: String, item: Option<&Item>) -> Self {
        let seen = item.and_then(|i| {
            let last = i.get("call").and_then(SV::as_s)?.to_owned();
            let failures = match i.get("failures") {
                Some(SV::N(n)) => n.to_string().parse().unwrap_or(0),
                _ => 0,
            };
            Some((last, failures))
        });
        Brake { key, call, seen }
    }

    /// Whether this exact call failed too often in a row just before.
    pub(crate) fn braked(&self) -> bool {
        matches!(&self.seen, Some((last, n)) if *last == self.call && *n >= BRAKE_AFTER_FAILURES)
    }

    /// The write that counts this call's failure.
    pub(crate) fn count_failure(&self, now: i64) -> Put {
        let failures = match &self.seen {
            Some((last, n)) if *last == self.call => n + 1,
            _ => 1,
        };
        let mut item = Item::new();
        item.insert("call".into(), SV::s(&self.call));
        item.insert("failures".into(), SV::n(failures));
        item.insert(
            store::TTL_ATTRIBUTE.into(),
            SV::n(now + BRAKE_WINDOW_SECONDS),
        );
        Put::new(self.key.clone(), item)
    }

    /// The write that clears the count after a success (`None`: nothing to clear).
    pub(crate) fn clear(&self) -> Option<store::Delete> {
        self.seen
            .as_ref()
            .map(|_| store::Delete::new(self.key.clone()))
    }
}

/// The idempotency fingerprint of a silent write: its client's key, or its arguments.
pub(crate) fn fingerprint(idempotency_key: Option<&str>, args_digest: &str) -> String {
    match idempotency_key {
        Some(key) => format!("key-{}", crate::digest(&json!(key))),
        None => args_digest.to_owned(),
    }
}

fn unavailable(e: &StoreError) -> ToolError {
    if let StoreError::Invalid(invalid) = e {
        // Sending the same again would fail the same way: not an outage.
        tracing::error!(error = %e, "the store refused a write as it is");
        return ToolError::new(
            ErrorKind::Rejected,
            format!("This change cannot be stored as it is ({invalid}); nothing was changed"),
            "Make the change smaller (fewer records, shorter texts); sending it again as it is fails the same way",
        )
        .detail("retryable", false);
    }
    tracing::error!(error = %e, "store failed in a gate");
    ToolError::store_unavailable()
}

/// A replay record as read back.
pub(crate) struct Replay {
    pub(crate) structured: Value,
    pub(crate) digest: String,
    pub(crate) args: Map<String, Value>,
}

pub(crate) fn read_replay(item: &Item) -> Option<Replay> {
    let text = |k: &str| item.get(k).and_then(SV::as_s);
    Some(Replay {
        structured: serde_json::from_str(text("result")?).ok()?,
        digest: text("digest")?.to_owned(),
        args: serde_json::from_str(text("args")?).ok()?,
    })
}

/// The answer served for a replayed call: the first result, marked.
pub(crate) fn replayed_result(mut structured: Value) -> ToolResult {
    if let Value::Object(obj) = &mut structured {
        obj.insert("replayed".into(), Value::Bool(true));
    }
    ToolResult::success(structured)
}

/// The error for an idempotency key reused with other arguments, naming the differences.
pub(crate) fn key_reused(
    key: &str,
    before: &Map<String, Value>,
    now: &Map<String, Value>,
) -> ToolError {
    let mut fields: Vec<&String> = before
        .keys()
        .chain(now.keys())
        .filter(|k| before.get(*k) != now.get(*k))
        .collect();
    fields.sort();
    fields.dedup();
    let names = fields
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ");
    ToolError::new(
        ErrorKind::Conflict,
        format!("The idempotency_key {key:?} was used before with different arguments (they differ in {names})"),
        "Send the same arguments with this key, or use a new idempotency_key for a different change",
    )
    .handover("The key names an earlier change with other arguments; if the user wants this as a further change, send it with a new idempotency_key")
    .detail("differs_in", fields.iter().map(|f| Value::String((*f).clone())).collect::<Vec<_>>())
}

/// A concurrency slot held by one call.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    /// `None` when concurrency is not limited.
    key: Option<Key>,
    request_id: String,
}

/// Concurrent calls per connection: reads may take slot 0 only, writes slot 1 (theirs) or
/// slot 0, so a write always finds room while a read runs.
fn slot_candidates(class: EffectClass) -> &'static [&'static str] {
    match class {
        EffectClass::Read => &["0"],
        _ => &["1", "0"],
    }
}

/// The items of the slots a call of `class` may take of `caller`'s connection, in the order
/// admission tries them.
fn slot_keys(caller: &Caller, class: EffectClass) -> impl Iterator<Item = Key> + '_ {
    slot_candidates(class)
        .iter()
        .map(|slot| crate::keys::slot(&caller.tenant, &caller.connection, slot))
}

/// Every slot `ask` could take of `caller`'s connection, as held by `ask`'s call: what to give
/// back when a call is dropped while its admission may still land in the store.
pub(crate) fn possible_slots(gates: &Gates, caller: &Caller, ask: &Ask<'_>) -> Vec<Slot> {
    if ask.lease_seconds.is_none() || !gates.limits.concurrency {
        return Vec::new();
    }
    slot_keys(caller, ask.class)
        .map(|key| Slot {
            key: Some(key),
            request_id: ask.request_id.to_owned(),
        })
        .collect()
}

/// What one call asks of admission.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ask<'a> {
    pub(crate) class: EffectClass,
    pub(crate) expensive: bool,
    pub(crate) request_id: &'a str,
    /// How long a slot is leased (`None`: the call takes no slot, as when a confirmation
    /// runs the prepared action under the slot it already holds).
    pub(crate) lease_seconds: Option<i64>,
    /// Also count the call in the write buckets: a confirmation is a write of its own, and
    /// the action it executes spends its class's buckets too, in the same transaction.
    pub(crate) also_write: bool,
    pub(crate) now: i64,
}

impl Ask<'_> {
    fn window(&self, gates: &Gates) -> (i64, i64) {
        let window = gates.limits.window_seconds.max(1);
        (self.now - self.now.rem_euclid(window), window)
    }

    /// The update counting this call in `who`'s bucket, refused when `limit` is reached.
    fn bucket(&self, gates: &Gates, tenant: &TenantId, who: &str, limit: u32) -> TransactOp {
        let (start, window) = self.window(gates);
        // One partition per connection and per tenant shard: no partition takes the calls
        // of a whole tenant unless its limit is low enough for one item (see `tenant_shard`).
        let key = crate::keys::rate(tenant, who, bucket_name(self.class, self.expensive), start);
        let under = Condition::NotExists("count".into()).or(Condition::Cmp(
            "count".into(),
            store::CmpOp::Lt,
            SV::n(i64::from(limit)),
        ));
        Update::new(
            key,
            vec![
                UpdateAction::Add("count".into(), Number::from(1i64)),
                UpdateAction::Set(store::TTL_ATTRIBUTE.into(), SV::n(start + window + 60)),
            ],
        )
        .when(under)
        .into()
    }

    /// The connection's and the tenant's bucket updates (of the write class too, when asked).
    fn buckets(&self, gates: &Gates, caller: &Caller) -> Vec<TransactOp> {
        self.buckets_of(gates, &caller.tenant, caller.connection.as_str())
    }

    /// The updates of `who`'s bucket and its tenant's shared bucket.
    fn buckets_of(&self, gates: &Gates, tenant: &TenantId, who: &str) -> Vec<TransactOp> {
        let mut ops = self.class_buckets(gates, tenant, who);
        if self.also_write && self.class != EffectClass::SilentWrite {
            let write = Ask {
                class: EffectClass::SilentWrite,
                expensive: false,
                also_write: false,
                ..*self
            };
            ops.extend(write.class_buckets(gates, tenant, who));
        }
        ops
    }

    fn class_buckets(&self, gates: &Gates, tenant: &TenantId, who: &str) -> Vec<TransactOp> {
        let limits = &gates.limits;
        let (_, window) = self.window(gates);
        let (shard, tenant_limit) = tenant_shard(
            limits.per_tenant.for_class(self.class, self.expensive),
            window,
            self.request_id,
        );
        vec![
            self.bucket(
                gates,
                tenant,
                who,
                limits.per_connection.for_class(self.class, self.expensive),
            ),
            self.bucket(gates, tenant, &shard, tenant_limit),
        ]
    }

    fn rate_limited(&self, gates: &Gates) -> ToolError {
        let (start, window) = self.window(gates);
        rate_limited(self.class, start + window - self.now)
    }
}

/// What one admission attempt ended in.
enum Attempt {
    Admitted,
    BucketFull,
    SlotTaken,
}

/// Commits `ops` (`buckets` bucket updates first, then perhaps a slot) and says which
/// condition failed.
async fn attempt(
    gates: &Gates,
    ops: Vec<TransactOp>,
    buckets: usize,
) -> Result<Attempt, ToolError> {
    match gates.store.transact_write(ops).await {
        Ok(()) => Ok(Attempt::Admitted),
        Err(StoreError::TransactionCancelled { reasons }) => {
            let failed =
                |i: usize| matches!(reasons.get(i), Some(CancelReason::ConditionFailed { .. }));
            if (0..buckets).any(failed) {
                Ok(Attempt::BucketFull)
            } else if failed(buckets) {
                Ok(Attempt::SlotTaken)
            } else {
                Err(unavailable(&StoreError::TransactionCancelled { reasons }))
            }
        }
        Err(e) => Err(unavailable(&e)),
    }
}

impl Gates {
    /// Counts one call of a product adapter (the JSON API) in its credential's bucket and in
    /// its tenant's buckets of `class`, which MCP calls share: with MCP's limits per
    /// connection for the credential, and the tenant's total over MCP and the API bounded by
    /// the tenant's limits. `Err`: refused, nothing counted (the error says when to retry).
    pub async fn admit_product_call(
        &self,
        tenant: &TenantId,
        credential: &str,
        class: EffectClass,
        request_id: &str,
        now: i64,
    ) -> Result<(), ToolError> {
        let ask = Ask {
            class,
            expensive: false,
            request_id,
            lease_seconds: None,
            also_write: false,
            now,
        };
        let buckets = ask.buckets_of(self, tenant, credential);
        let count = buckets.len();
        match attempt(self, buckets, count).await? {
            Attempt::Admitted => Ok(()),
            _ => Err(ask.rate_limited(self)),
        }
    }
}

/// Counts one call in the connection's and the tenant's bucket of its class and takes a
/// concurrency slot, atomically. Refuses (counting nothing) when a bucket is full or no slot
/// is free.
pub(crate) async fn admit(
    gates: &Gates,
    caller: &Caller,
    ask: Ask<'_>,
) -> Result<Result<Slot, ToolError>, ToolError> {
    let no_slot = Slot {
        key: None,
        request_id: ask.request_id.to_owned(),
    };
    let lease = match ask.lease_seconds {
        Some(lease) if gates.limits.concurrency => lease,
        _ => {
            let buckets = ask.buckets(gates, caller);
            let count = buckets.len();
            return match attempt(gates, buckets, count).await? {
                Attempt::Admitted => Ok(Ok(no_slot)),
                _ => Ok(Err(ask.rate_limited(gates))),
            };
        }
    };
    for key in slot_keys(caller, ask.class) {
        let mut item = Item::new();
        item.insert("request".into(), SV::s(ask.request_id));
        item.insert(store::TTL_ATTRIBUTE.into(), SV::n(ask.now + lease));
        let mut ops = ask.buckets(gates, caller);
        let count = ops.len();
        ops.push(
            Put::new(key.clone(), item)
                .when(Condition::item_not_exists())
                .into(),
        );
        match attempt(gates, ops, count).await? {
            Attempt::Admitted => {
                return Ok(Ok(Slot {
                    key: Some(key),
                    request_id: ask.request_id.to_owned(),
                }));
            }
            Attempt::BucketFull => return Ok(Err(ask.rate_limited(gates))),
            Attempt::SlotTaken => {}
        }
    }
    Ok(Err(ToolError::new(
        ErrorKind::RateLimited,
        "Other calls of this connection are still running",
        "Wait for them to finish before calling again; nothing was done",
    )
    .detail("retry_after_seconds", 1)
    .detail("retryable", true)
    .detail("concurrency", true)))
}

/// Calls per second one bucket item takes before the tenant's bucket is split into shards:
/// well under the 1,000 writes per second DynamoDB allows one item (one partition).
pub(crate) const WRITES_PER_SHARD_PER_SECOND: u32 = 250;
/// Most shards one tenant bucket is split into.
const MAX_SHARDS: u32 = 64;

/// The tenant bucket item a call counts in, and that item's limit. Every call of a tenant
/// updates its tenant bucket, so a limit above [`WRITES_PER_SHARD_PER_SECOND`] is split over
/// shards (`tenant~0`, `tenant~1`, ...) chosen by the request id, each with its share of the
/// limit. The price: a sharded limit is approximate (a call can be refused by a full shard
/// while another has room). Limits under the threshold (the defaults) use one exact item.
pub(crate) fn tenant_shard(limit: u32, window_seconds: i64, request_id: &str) -> (String, u32) {
    let window = u32::try_from(window_seconds.max(1)).unwrap_or(u32::MAX);
    let per_second = limit.div_ceil(window);
    let shards = per_second
        .div_ceil(WRITES_PER_SHARD_PER_SECOND)
        .clamp(1, MAX_SHARDS);
    if shards == 1 {
        return ("tenant".into(), limit);
    }
    // FNV-1a: stable across processes, spreads random request ids evenly.
    let hash = request_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (
        store::concat_int(&["tenant~"], i64::from(shard_number(hash, shards))),
        limit.div_ceil(shards),
    )
}

/// The shard `hash` falls in, of `shards` (at most [`MAX_SHARDS`]).
fn shard_number(hash: u64, shards: u32) -> u32 {
    u32::try_from(hash % u64::from(shards)).unwrap_or(0)
}

/// The bucket's name in its key: the class's name as `Debug` writes it (what earlier versions
/// stored), spelled out so that building a key formats nothing.
fn bucket_name(class: EffectClass, expensive: bool) -> &'static str {
    match class {
        EffectClass::Read if expensive => "ExpensiveRead",
        EffectClass::Read => "Read",
        EffectClass::SilentWrite => "SilentWrite",
        EffectClass::Notify => "Notify",
        EffectClass::Wake => "Wake",
        EffectClass::Alerting => "Alerting",
        EffectClass::Delete => "Delete",
    }
}

/// Gives a slot back (only if this call still holds it).
pub(crate) async fn release(store: Arc<dyn Store>, slot: Slot) {
    let Some(op) = slot.release_op() else { return };
    if let Err(e) = store.delete(op).await {
        tracing::debug!(error = %e, "concurrency slot already gone");
    }
}

impl Slot {
    /// The slot's item (`None` when concurrency is not limited).
    pub(crate) fn key(&self) -> Option<&Key> {
        self.key.as_ref()
    }

    /// A slot `request_id` holds at `key`.
    #[cfg(test)]
    pub(crate) fn held(key: Key, request_id: &str) -> Slot {
        Slot {
            key: Some(key),
            request_id: request_id.to_owned(),
        }
    }

    /// The delete that gives the slot back, only while it still names this call.
    pub(crate) fn release_op(&self) -> Option<store::Delete> {
        let key = self.key.clone()?;
        Some(store::Delete::new(key).when(Condition::eq("request", SV::s(&self.request_id))))
    }
}

/// The concurrency slot a call holds: admission puts it here the moment it is granted, while
/// the body may still be running beside it, and it stays until its release has answered, so
/// that a call dropped half-way (even with its release on the way) gives it back (ADR 26).
#[derive(Default)]
pub(crate) struct HeldSlot(std::sync::Mutex<Option<Slot>>);

impl HeldSlot {
    pub(crate) fn put(&self, slot: Slot) {
        *self.lock() = Some(slot);
    }

    pub(crate) fn take(&self) -> Option<Slot> {
        self.lock().take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Slot>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Runs `work` and gives the slot `held` holds back at the same time: the release does not
/// depend on the work, so the caller waits for one round trip, not two. The slot leaves
/// `held` once its release has answered: dropped before that, the call gives it back again
/// (a conditional delete, harmless); after, not at all.
pub(crate) async fn beside_release<T>(
    gates: &Gates,
    held: &HeldSlot,
    work: impl std::future::Future<Output = T>,
) -> T {
    let Some(slot) = held.lock().clone() else {
        return work.await;
    };
    let releasing = async {
        release(Arc::clone(&gates.store), slot).await;
        held.take();
    };
    let (out, ()) = futures_util::future::join(work, releasing).await;
    out
}

/// Bucket operations for a notification, to commit with it: at most `per_object_notify`
/// messages per recipient and window (ADR 45), each recipient's messages in this call counted
/// at once; for a tool that names no recipient, per record it touches.
pub(crate) fn object_buckets(
    gates: &Gates,
    tenant: &TenantId,
    ids: &[String],
    recipients: &[String],
    now: i64,
) -> Vec<crate::PlannedWrite> {
    let window = gates.limits.object_window_seconds.max(1);
    let start = now - now.rem_euclid(window);
    let retry = start + window - now;
    let limit = i64::from(gates.limits.per_object_notify);
    let counted: Vec<(String, String, i64)> = if recipients.is_empty() {
        ids.iter().map(|id| (id.clone(), id.clone(), 1)).collect()
    } else {
        let mut sorted: Vec<&String> = recipients.iter().collect();
        sorted.sort();
        sorted
            .chunk_by(|a, b| a == b)
            .map(|same| {
                let digest = crate::sha256_hex(same[0].as_bytes());
                let bucket = format!("to_{}", &digest[..24]);
                (bucket, same[0].clone(), same.len() as i64)
            })
            .collect()
    };
    counted
        .into_iter()
        .map(|(bucket, shown, messages)| {
            let key = crate::keys::object_rate(tenant, &bucket, start);
            let under = Condition::NotExists("count".into()).or(Condition::Cmp(
                "count".into(),
                store::CmpOp::Le,
                SV::n(limit - messages),
            ));
            let op = Update::new(
                key,
                vec![
                    UpdateAction::Add("count".into(), Number::from(messages)),
                    UpdateAction::Set(store::TTL_ATTRIBUTE.into(), SV::n(start + window + 60)),
                ],
            )
            .when(under);
            crate::PlannedWrite {
                op: op.into(),
                on_conflict: Some(Box::new(move |_| {
                    ToolError::new(
                        ErrorKind::RateLimited,
                        format!(
                            "{shown} was already sent {limit} messages recently; nothing was sent"
                        ),
                        format!(
                            "Do not message them again now; wait {retry} seconds or ask the user"
                        ),
                    )
                    .detail("retry_after_seconds", retry)
                    .detail("object", shown.clone())
                })),
            }
        })
        .collect()
}

/// The error for a full bucket.
pub(crate) fn rate_limited(class: EffectClass, retry_after: i64) -> ToolError {
    ToolError::new(
        ErrorKind::RateLimited,
        format!(
            "Too many {} calls on this connection or workspace right now",
            class_name(class)
        ),
        format!("Wait {retry_after} seconds before calling again; nothing was done"),
    )
    .detail("retry_after_seconds", retry_after)
}

fn class_name(class: EffectClass) -> &'static str {
    match class {
        EffectClass::Read => "read",
        EffectClass::SilentWrite => "write",
        EffectClass::Notify => "notify",
        EffectClass::Wake => "wake",
        EffectClass::Alerting => "alerting",
        EffectClass::Delete => "delete",
    }
}

/// The loop brake's answer.
pub(crate) fn brake_error(tool: &str) -> ToolError {
    ToolError::new(
        ErrorKind::Rejected,
        format!("This exact {tool} call has failed {BRAKE_AFTER_FAILURES} times in a row"),
        "Stop and ask the user how to proceed instead of repeating it; a changed call is not braked",
    )
    .handover("The same call keeps failing: ask the user how to proceed")
    .detail("loop_brake", true)
}

/// What committing a call's writes ended in.
pub(crate) enum Committed {
    /// Committed.
    Done,
    /// An identical call committed first: serve its result.
    Replayed(ToolResult),
    /// Refused; nothing was written.
    Refused(ToolError),
}

/// The replay record a silent write commits with its writes.
pub(crate) struct ReplayRecord<'a> {
    pub(crate) key: Key,
    pub(crate) result: &'a Value,
    pub(crate) digest: &'a str,
    pub(crate) args: &'a Map<String, Value>,
    pub(crate) idempotency_key: Option<&'a str>,
}

impl ReplayRecord<'_> {
    fn put(&self, expires: i64) -> TransactOp {
        let mut item = Item::new();
        item.insert("result".into(), SV::s(crate::to_text(self.result)));
        item.insert("digest".into(), SV::s(self.digest));
        item.insert("args".into(), SV::s(crate::object_text(self.args)));
        item.insert(store::TTL_ATTRIBUTE.into(), SV::n(expires));
        Put::new(self.key.clone(), item)
            .when(Condition::item_not_exists())
            .into()
    }

    /// The answer when another call committed this record first: its result if it had the
    /// same arguments, else the error that the key was used for other arguments. Never
    /// another call's result for different arguments.
    async fn answer_second(&self, store: &dyn Store) -> Committed {
        match store.get(&self.key).await {
            Ok(Some(item)) => match read_replay(&item) {
                Some(first) if first.digest == self.digest => {
                    Committed::Replayed(replayed_result(first.structured))
                }
                Some(first) => Committed::Refused(key_reused(
                    self.idempotency_key.unwrap_or_default(),
                    &first.args,
                    self.args,
                )),
                None => Committed::Refused(in_progress()),
            },
            Ok(None) => Committed::Refused(in_progress()),
            Err(e) => Committed::Refused(unavailable(&e)),
        }
    }
}

/// Commits the planned writes with the replay record and the hooks' operations.
///
/// The slot `held` holds, if any, is released beside the commit.
pub(crate) async fn commit(
    gates: &Gates,
    call: &CommitContext<'_>,
    writes: crate::WriteSet,
    replay: Option<ReplayRecord<'_>>,
    now: i64,
    held: &HeldSlot,
) -> Committed {
    let hooks: Vec<(TransactOp, ToolError)> = gates
        .hooks
        .as_ref()
        .map(|h| h.ops(call))
        .unwrap_or_default();
    let hook_count = hooks.len();
    let tool_count = writes.ops.len();
    let mut ops: Vec<TransactOp> = Vec::with_capacity(hook_count + tool_count + 1);
    let mut explain_hook = Vec::with_capacity(hook_count);
    for (op, error) in hooks {
        ops.push(op);
        explain_hook.push(error);
    }
    let mut explain_tool = Vec::with_capacity(tool_count);
    for planned in writes.ops {
        ops.push(planned.op);
        explain_tool.push(planned.on_conflict);
    }
    if let Some(replay) = &replay {
        ops.push(replay.put(now + gates.replay_window_seconds));
    }
    if ops.is_empty() {
        beside_release(gates, held, async {}).await;
        return Committed::Done;
    }
    match beside_release(gates, held, gates.store.transact_write(ops)).await {
        Ok(()) => Committed::Done,
        Err(StoreError::TransactionCancelled { reasons }) => {
            let failed =
                |i: usize| matches!(reasons.get(i), Some(CancelReason::ConditionFailed { .. }));
            // Another call with this fingerprint committed first.
            if let Some(replay) = replay.filter(|_| failed(hook_count + tool_count)) {
                return replay.answer_second(gates.store.as_ref()).await;
            }
            match CancelReason::first_failed(&reasons) {
                Some((i, _)) if i < hook_count => {
                    return Committed::Refused(explain_hook.swap_remove(i));
                }
                Some((i, old)) if i < hook_count + tool_count => {
                    return Committed::Refused(match explain_tool.swap_remove(i - hook_count) {
                        Some(explain) => explain(old),
                        None => changed_meanwhile(),
                    });
                }
                _ => {}
            }
            if reasons.iter().any(|r| matches!(r, CancelReason::Conflict)) {
                return Committed::Refused(in_progress());
            }
            Committed::Refused(unavailable(&StoreError::TransactionCancelled { reasons }))
        }
        Err(e) => Committed::Refused(unavailable(&e)),
    }
}

fn in_progress() -> ToolError {
    ToolError::new(
        ErrorKind::Conflict,
        "An identical call is being processed right now",
        "Wait a second and send the same call again; it will return that call's result",
    )
    .detail("retry_after_seconds", 1)
    .detail("retryable", true)
}

fn changed_meanwhile() -> ToolError {
    ToolError::new(
        ErrorKind::Conflict,
        "The data changed while this call was running; nothing was written",
        "Read the object again and repeat the change with its current version",
    )
}

/// The structured `arguments` without the gate's own fields.
pub(crate) fn strip_idempotency_key(
    args: &mut Map<String, Value>,
) -> Result<Option<String>, ToolError> {
    match args.remove(IDEMPOTENCY_KEY) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(k)) if !k.is_empty() && k.len() <= 128 => Ok(Some(k)),
        Some(_) => Err(ToolError::validation(
            "`idempotency_key` must be text of 1 to 128 characters",
            "Send a short unique text, or leave it out",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_buckets_split_only_past_the_hot_key_threshold() {
        // The default read limit, 600 a minute, is 10 a second: one exact item.
        assert_eq!(tenant_shard(600, 60, "req_1"), ("tenant".into(), 600));
        // 60,000 a minute is 1,000 a second: four shards of 15,000 each.
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..200 {
            let (who, limit) = tenant_shard(60_000, 60, &format!("req_{i:016x}"));
            assert_eq!(limit, 15_000);
            seen.insert(who);
        }
        let all: std::collections::BTreeSet<String> =
            (0..4).map(|s| format!("tenant~{s}")).collect();
        assert_eq!(seen, all, "every shard is used");
        // Never more than the cap.
        let (who, _) = tenant_shard(u32::MAX, 1, "req_x");
        let shard: u32 = who.trim_start_matches("tenant~").parse().unwrap();
        assert!(shard < MAX_SHARDS);
    }

    #[test]
    fn bucket_names_are_the_names_earlier_versions_stored() {
        use EffectClass::*;
        for class in [Read, SilentWrite, Notify, Wake, Alerting, Delete] {
            assert_eq!(bucket_name(class, false), format!("{class:?}"));
        }
        assert_eq!(bucket_name(Read, true), "ExpensiveRead");
        assert_eq!(bucket_name(SilentWrite, true), "SilentWrite");
    }
}
