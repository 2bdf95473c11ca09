//! A small fake product, "notes", with one tool per kind of write the safety gates guard,
//! served by the real app on a real store: the fixture of the gate tests (`crate::gates`).
//!
//! `acme`'s dispatcher `dan` holds one connection (reads, writes, notifies) with the full
//! toolset. The store can lose the answer of a committed transaction ([`LostAnswer`]), and
//! `create_note` can have the kill switch flipped while it is in flight ([`IncidentMidFlight`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::future::BoxFuture;
use identity::{Actor, Channel};
use mcp_pipeline::{
    CallError, ErrorKind, ExecutionContext, Handle, HandleKind, Interceptor, Limits, Next,
    Prepared, Registry, Success, Tool, ToolContext, ToolError, ToolResult, ToolSpec, Toolset,
};
use mcp_test_client::TestClient;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use store::{Condition, Item, Key, Put, Query, Store, StoreError, Value as SV};

use crate::support::store::{Backend, fresh};
use crate::support::{connect, rights};

// ===== a store that loses the answer of a committed transaction =====

/// Commits, then reports a lost connection once when armed: a crash after commit, before the
/// response.
#[derive(Debug)]
pub(crate) struct LostAnswer {
    inner: Arc<dyn Store>,
    /// Set to lose the answer of the next committed transaction (after `skip`).
    pub(crate) armed: AtomicBool,
    /// Transactions to let through first (the rate-limit admission is one).
    pub(crate) skip: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl Store for LostAnswer {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.inner.get(key).await
    }
    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        self.inner.batch_get(keys).await
    }
    async fn put(&self, put: Put) -> Result<(), StoreError> {
        self.inner.put(put).await
    }
    async fn update(&self, update: store::Update) -> Result<Item, StoreError> {
        self.inner.update(update).await
    }
    async fn delete(&self, delete: store::Delete) -> Result<Option<Item>, StoreError> {
        self.inner.delete(delete).await
    }
    async fn query(&self, query: Query) -> Result<store::Page, StoreError> {
        self.inner.query(query).await
    }
    async fn transact_write(&self, ops: Vec<store::TransactOp>) -> Result<(), StoreError> {
        let result = self.inner.transact_write(ops).await;
        if result.is_ok() && self.armed.load(Ordering::SeqCst) {
            if self.skip.load(Ordering::SeqCst) > 0 {
                self.skip.fetch_sub(1, Ordering::SeqCst);
            } else {
                self.armed.store(false, Ordering::SeqCst);
                return Err(StoreError::Unavailable(
                    "connection lost after commit".into(),
                ));
            }
        }
        result
    }
}

// ===== the notes domain =====

pub(crate) struct NoteKind;
impl HandleKind for NoteKind {
    const PREFIX: &'static str = "not";
    const NOUN: &'static str = "note";
}

fn note_key(tenant: &str, id: &str) -> Key {
    Key::new(format!("{tenant}#note"), id)
}

pub(crate) fn title_key(tenant: &str, title: &str) -> Key {
    Key::new(format!("{tenant}#unique#note"), title.trim().to_lowercase())
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct NoteView {
    /// The note's handle.
    pub(crate) note: String,
    /// Content hash to send back with changes.
    pub(crate) version: String,
    pub(crate) title: String,
    pub(crate) body: String,
    pub(crate) archived: bool,
}

fn version_of(title: &str, body: &str, archived: bool) -> String {
    mcp_pipeline::digest(&json!({"title": title, "body": body, "archived": archived}))[..12]
        .to_owned()
}

fn view(id: &str, item: &Item) -> NoteView {
    let s = |k: &str| {
        item.get(k)
            .and_then(SV::as_s)
            .unwrap_or_default()
            .to_owned()
    };
    NoteView {
        note: format!("not_{id}"),
        version: s("version"),
        title: s("title"),
        body: s("body"),
        archived: matches!(item.get("archived"), Some(SV::Bool(true))),
    }
}

fn note_item(title: &str, body: &str, archived: bool) -> Item {
    let mut item = Item::new();
    item.insert("title".into(), SV::s(title));
    item.insert("body".into(), SV::s(body));
    item.insert("archived".into(), SV::Bool(archived));
    item.insert("version".into(), SV::s(version_of(title, body, archived)));
    item
}

/// The tenant's note, or `not_found` with `next` as the hint.
async fn load_note(
    store: &dyn Store,
    tenant: &str,
    note: &Handle<NoteKind>,
    next: &str,
) -> Result<Item, CallError> {
    store
        .get(&note_key(tenant, note.id()))
        .await
        .map_err(|e| CallError::Other(Box::new(e)))?
        .ok_or_else(|| {
            ToolError::new(ErrorKind::NotFound, format!("No note {note}"), next)
                .handover("Ask the user which note they mean")
                .into()
        })
}

fn tenant_of<E: mcp_pipeline::Effect>(ctx: &ToolContext<E>) -> Result<String, CallError> {
    ctx.exec
        .caller
        .as_ref()
        .map(|c| c.tenant.as_str().to_owned())
        .ok_or_else(|| {
            ToolError::new(ErrorKind::Forbidden, "No connection", "Authenticate")
                .handover("The client is not connected to a workspace")
                .into()
        })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CreateNoteInput {
    title: String,
    body: String,
    /// Create even though a note with this title exists.
    separate: Option<bool>,
    /// Why a separate note is needed (required with `separate`).
    reason: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct NoteOutput {
    note: NoteView,
}

struct CreateNote;

impl Tool for CreateNote {
    type Input = CreateNoteInput;
    type Output = NoteOutput;
    const NAME: &'static str = "create_note";
    const TITLE: &'static str = "Create a note";
    const DESCRIPTION: &'static str = "Creates a note.";
    type Effect = mcp_pipeline::effects::SilentWrite;

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: CreateNoteInput,
    ) -> Result<Success<NoteOutput>, CallError> {
        let tenant = tenant_of(&ctx)?;
        let separate = input.separate.unwrap_or(false);
        if separate && input.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
            return Err(ToolError::validation(
                "`separate` needs a `reason`",
                "Say why a second note with this title is needed",
            )
            .handover("Ask the user why a second note with this title is needed")
            .into());
        }
        let id = Handle::<NoteKind>::generate_with(&mcp_pipeline::SystemRandomness);
        let handle = id.to_string();
        ctx.writes.push(
            Put::new(
                note_key(&tenant, id.id()),
                note_item(&input.title, &input.body, false),
            )
            .when(Condition::item_not_exists()),
        );
        if !separate {
            let title = input.title.clone();
            ctx.writes
                .claim(title_key(&tenant, &input.title), &handle, move |holder| {
                    ToolError::new(
                        ErrorKind::Conflict,
                        format!("A note titled {title:?} exists already: {holder}"),
                        "Change that note instead, or create a separate one with a reason",
                    )
                    .next_call(format!("get_note {{\"note\": \"{holder}\"}}"))
                    .detail("existing", holder)
                });
        }
        ctx.writes.touch(handle.clone());
        let note = NoteView {
            note: handle.clone(),
            version: version_of(&input.title, &input.body, false),
            title: input.title,
            body: input.body,
            archived: false,
        };
        Ok(Success::new(
            format!("Created note {handle}."),
            NoteOutput { note },
        ))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdateNoteInput {
    note: Handle<NoteKind>,
    /// The version you read.
    version: String,
    body: String,
}

struct UpdateNote {
    store: Arc<dyn Store>,
}

impl Tool for UpdateNote {
    type Input = UpdateNoteInput;
    type Output = NoteOutput;
    const NAME: &'static str = "update_note";
    const TITLE: &'static str = "Update a note";
    const DESCRIPTION: &'static str = "Changes a note's body.";
    type Effect = mcp_pipeline::effects::SilentWrite;

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: UpdateNoteInput,
    ) -> Result<Success<NoteOutput>, CallError> {
        let tenant = tenant_of(&ctx)?;
        let key = note_key(&tenant, input.note.id());
        let Some(item) = self
            .store
            .get(&key)
            .await
            .map_err(|e| CallError::Other(Box::new(e)))?
        else {
            return Err(ToolError::new(
                ErrorKind::NotFound,
                format!("No note {}", input.note),
                "Find the note first",
            )
            .handover("Ask the user which note they mean")
            .into());
        };
        let current = view(input.note.id(), &item);
        if current.version != input.version {
            return Err(ToolError::new(
                ErrorKind::Conflict,
                "The note changed since you read it",
                "Read the current state below and apply your change to it",
            )
            .next_call(format!(
                "get_note {}",
                json!({"note": input.note.to_string()})
            ))
            .detail("current", serde_json::to_value(&current).unwrap())
            .into());
        }
        let new = note_item(&current.title, &input.body, current.archived);
        ctx.writes
            .push(Put::new(key, new.clone()).when(Condition::eq("version", SV::s(&input.version))));
        ctx.writes.touch(input.note.to_string());
        Ok(Success::new(
            "Updated the note.",
            NoteOutput {
                note: view(input.note.id(), &new),
            },
        ))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetNoteInput {
    note: Handle<NoteKind>,
}

struct GetNote {
    store: Arc<dyn Store>,
}

impl Tool for GetNote {
    type Input = GetNoteInput;
    type Output = NoteOutput;
    const NAME: &'static str = "get_note";
    const TITLE: &'static str = "Get a note";
    const DESCRIPTION: &'static str = "Reads one note.";
    type Effect = mcp_pipeline::effects::Read;

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: GetNoteInput,
    ) -> Result<Success<NoteOutput>, CallError> {
        let tenant = tenant_of(&ctx)?;
        let item = load_note(
            self.store.as_ref(),
            &tenant,
            &input.note,
            "List the notes to find the right handle",
        )
        .await?;
        Ok(Success::new(
            "The note.",
            NoteOutput {
                note: view(input.note.id(), &item),
            },
        ))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ArchiveInput {
    /// Notes whose title starts with this.
    title_prefix: String,
    /// How many notes you expect to match.
    expected_count: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
struct ArchiveOutput {
    archived: Vec<String>,
}

struct ArchiveNotes {
    store: Arc<dyn Store>,
}

impl Tool for ArchiveNotes {
    type Input = ArchiveInput;
    type Output = ArchiveOutput;
    const NAME: &'static str = "archive_notes";
    const TITLE: &'static str = "Archive notes";
    const DESCRIPTION: &'static str = "Archives the notes matching a filter.";
    type Effect = mcp_pipeline::effects::SilentWrite;

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: ArchiveInput,
    ) -> Result<Success<ArchiveOutput>, CallError> {
        let tenant = tenant_of(&ctx)?;
        let page = self
            .store
            .query(Query::partition(format!("{tenant}#note")))
            .await
            .map_err(|e| CallError::Other(Box::new(e)))?;
        let matches: Vec<(Key, Item)> = page
            .items
            .into_iter()
            .filter(|(_, i)| {
                i.get("title")
                    .and_then(SV::as_s)
                    .is_some_and(|t| t.starts_with(&input.title_prefix))
            })
            .filter(|(_, i)| !matches!(i.get("archived"), Some(SV::Bool(true))))
            .collect();
        let handles: Vec<String> = matches
            .iter()
            .map(|(k, _)| format!("not_{}", k.sk))
            .collect();
        if matches.len() != input.expected_count as usize {
            return Err(ToolError::new(
                ErrorKind::Rejected,
                format!("The filter matches {} notes, not {}; nothing was archived", matches.len(), input.expected_count),
                "Check the matches listed below, then send the right expected_count or a narrower filter",
            )
            .handover("Show the user the matches and ask whether they mean all of them")
            .detail("matches", handles)
            .into());
        }
        for (key, item) in &matches {
            let title = item.get("title").and_then(SV::as_s).unwrap_or_default();
            let body = item.get("body").and_then(SV::as_s).unwrap_or_default();
            let version = item.get("version").cloned().unwrap_or(SV::Null);
            ctx.writes.push(
                Put::new(key.clone(), note_item(title, body, true))
                    .when(Condition::eq("version", version)),
            );
            ctx.writes.touch(format!("not_{}", key.sk));
        }
        Ok(Success::new(
            format!("Archived {} notes.", handles.len()),
            ArchiveOutput { archived: handles },
        ))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SendNoteInput {
    note: Handle<NoteKind>,
    /// The customer's address.
    to: String,
}

#[derive(Debug, Serialize, JsonSchema)]
struct SendNoteOutput {
    message: serde_json::Value,
}

/// Sends a note to a customer: a notify tool, so it only prepares until confirmed.
struct SendNote {
    store: Arc<dyn Store>,
}

impl Tool for SendNote {
    type Input = SendNoteInput;
    type Output = SendNoteOutput;
    const NAME: &'static str = "send_note";
    const TITLE: &'static str = "Send a note to a customer";
    const DESCRIPTION: &'static str = "Prepares sending a note; confirm_action sends it.";
    type Effect = mcp_pipeline::effects::Notify;

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: SendNoteInput,
    ) -> Result<Prepared<SendNoteOutput>, CallError> {
        let tenant = tenant_of(&ctx)?;
        let item = load_note(
            self.store.as_ref(),
            &tenant,
            &input.note,
            "Find the note first",
        )
        .await?;
        let note = view(input.note.id(), &item);
        let content = json!({"to": input.to, "body": note.body, "note": note.note});
        let message_id = Handle::<NoteKind>::generate_with(&mcp_pipeline::SystemRandomness);
        let mut outbox = Item::new();
        outbox.insert("to".into(), SV::s(&input.to));
        outbox.insert("body".into(), SV::s(&note.body));
        ctx.writes.push(
            Put::new(
                Key::new(format!("{tenant}#outbox"), message_id.id()),
                outbox,
            )
            .when(Condition::item_not_exists()),
        );
        ctx.writes.touch(note.note.clone());
        let preview = ctx.writes.preview(
            format!("Send note {} to {}: \"{}\"", note.note, input.to, note.body),
            content.clone(),
        );
        Ok(preview.answer(Success::new(
            format!("Message to {}.", input.to),
            SendNoteOutput { message: content },
        )))
    }
}

/// Deletes a note: a delete tool, so it only prepares until confirmed.
struct DeleteNote {
    store: Arc<dyn Store>,
}

impl Tool for DeleteNote {
    type Input = GetNoteInput;
    type Output = NoteOutput;
    const NAME: &'static str = "delete_note";
    const TITLE: &'static str = "Delete a note";
    const DESCRIPTION: &'static str = "Prepares deleting a note; confirm_action deletes it.";
    type Effect = mcp_pipeline::effects::Delete;

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: GetNoteInput,
    ) -> Result<Prepared<NoteOutput>, CallError> {
        let tenant = tenant_of(&ctx)?;
        let key = note_key(&tenant, input.note.id());
        let Some(item) = self
            .store
            .get(&key)
            .await
            .map_err(|e| CallError::Other(Box::new(e)))?
        else {
            return Err(ToolError::new(
                ErrorKind::NotFound,
                format!("No note {}", input.note),
                "Find the note first",
            )
            .handover("Ask the user which note they mean")
            .into());
        };
        let note = view(input.note.id(), &item);
        ctx.writes
            .push(store::Delete::new(key).when(Condition::eq("version", SV::s(&note.version))));
        ctx.writes
            .push(store::Delete::new(title_key(&tenant, &note.title)));
        ctx.writes.touch(note.note.clone());
        let preview = ctx.writes.preview(
            format!("Delete note {} ({:?})", note.note, note.title),
            serde_json::to_value(&note).unwrap(),
        );
        Ok(preview.answer(Success::new(
            format!("Deleted note {}.", note.note),
            NoteOutput { note },
        )))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SlowInput {
    /// How long to take.
    millis: u64,
    /// A tag so that concurrent calls differ.
    tag: String,
}

#[derive(Debug, Serialize, JsonSchema)]
struct SlowOutput {
    tag: String,
}

/// A read that takes its time.
struct SlowRead;

impl Tool for SlowRead {
    type Input = SlowInput;
    type Output = SlowOutput;
    const NAME: &'static str = "get_slowly";
    const TITLE: &'static str = "Slow read";
    const DESCRIPTION: &'static str = "Waits, then answers.";
    type Effect = mcp_pipeline::effects::Read;

    async fn call(
        &self,
        _ctx: ToolContext<Self::Effect>,
        input: SlowInput,
    ) -> Result<Success<SlowOutput>, CallError> {
        tokio::time::sleep(std::time::Duration::from_millis(input.millis)).await;
        Ok(Success::new("Done.", SlowOutput { tag: input.tag }))
    }
}

/// A write that plans a note, then takes its time.
struct SlowWrite;

impl Tool for SlowWrite {
    type Input = SlowInput;
    type Output = SlowOutput;
    const NAME: &'static str = "set_slowly";
    const TITLE: &'static str = "Slow write";
    const DESCRIPTION: &'static str = "Plans a note, waits, then answers.";
    type Effect = mcp_pipeline::effects::SilentWrite;

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: SlowInput,
    ) -> Result<Success<SlowOutput>, CallError> {
        let tenant = tenant_of(&ctx)?;
        ctx.writes.push(Put::new(
            note_key(&tenant, &format!("slow{}", input.tag)),
            note_item(&input.tag, "slow", false),
        ));
        tokio::time::sleep(std::time::Duration::from_millis(input.millis)).await;
        Ok(Success::new("Done.", SlowOutput { tag: input.tag }))
    }
}

/// Charges a customer for a note: moves money, so it is approved only in the product.
struct ChargeNote {
    store: Arc<dyn Store>,
}

impl Tool for ChargeNote {
    type Input = GetNoteInput;
    type Output = NoteOutput;
    const NAME: &'static str = "charge_note";
    const TITLE: &'static str = "Charge for a note";
    const DESCRIPTION: &'static str =
        "Prepares charging the customer; approved in the product only.";
    type Effect = mcp_pipeline::effects::Notify;

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: GetNoteInput,
    ) -> Result<Prepared<NoteOutput>, CallError> {
        let tenant = tenant_of(&ctx)?;
        let item = load_note(
            self.store.as_ref(),
            &tenant,
            &input.note,
            "Find the note first",
        )
        .await?;
        let note = view(input.note.id(), &item);
        let mut charge = Item::new();
        charge.insert("amount".into(), SV::s("49.00"));
        ctx.writes.push(Put::new(
            Key::new(format!("{tenant}#outbox"), "charge"),
            charge,
        ));
        ctx.writes.touch(note.note.clone());
        let preview = ctx.writes.preview(
            format!("Charge 49.00 EUR for note {}", note.note),
            json!({"amount": "49.00", "note": note.note}),
        );
        Ok(preview.answer(Success::new("Charged.", NoteOutput { note })))
    }
}

/// Flips the kill switch after the body ran and before the pipeline commits, when armed.
struct IncidentMidFlight {
    switches: identity::SwitchService,
    armed: Arc<AtomicBool>,
}

impl Interceptor for IncidentMidFlight {
    fn intercept<'a>(
        &'a self,
        _ctx: &'a ExecutionContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let result = next.run().await;
            if self.armed.swap(false, Ordering::SeqCst) {
                let oncall = Actor {
                    tenant: store::TenantId::new("system"),
                    member: store::MemberId::new("oncall"),
                    channel: Channel::Cli,
                };
                self.switches
                    .set_global(&oncall, true, "incident during a write")
                    .await
                    .unwrap();
            }
            result
        })
    }
}

/// What `create_note`'s traps do when set: the ways a call's decorators can misbehave.
#[derive(Debug, Default)]
pub(crate) struct Traps {
    /// Calls of `create_note` wait here (after their body) until this many have arrived.
    pub(crate) rendezvous: std::sync::Mutex<Option<Arc<tokio::sync::Barrier>>>,
    /// How many calls have reached the rendezvous so far.
    pub(crate) arrived: std::sync::atomic::AtomicUsize,
    /// An interceptor answers without calling the tool.
    pub(crate) answer_without_tool: AtomicBool,
    /// The guard panics.
    pub(crate) guard_panics: AtomicBool,
    /// The interceptor panics.
    pub(crate) interceptor_panics: AtomicBool,
    /// `charge_note`'s body takes this many seconds of the server's clock.
    pub(crate) charge_takes_seconds: std::sync::atomic::AtomicI64,
}

impl Traps {
    /// The next `n` calls of `create_note` wait for each other after their bodies ran, so
    /// that they all pass the replay lookup before any commits.
    pub(crate) fn meet(&self, n: usize) {
        *self.rendezvous.lock().unwrap() = Some(Arc::new(tokio::sync::Barrier::new(n)));
    }
}

struct TrapInterceptor(Arc<Traps>);

impl Interceptor for TrapInterceptor {
    fn intercept<'a>(
        &'a self,
        _ctx: &'a ExecutionContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            assert!(
                !self.0.interceptor_panics.load(Ordering::SeqCst),
                "the interceptor trap"
            );
            if self.0.answer_without_tool.load(Ordering::SeqCst) {
                return ToolResult::success(json!({
                    "summary": "Answered by an interceptor.",
                    "warnings": [],
                    "next_steps": [],
                }));
            }
            let result = next.run().await;
            let barrier = self.0.rendezvous.lock().unwrap().clone();
            if let Some(barrier) = barrier {
                self.0.arrived.fetch_add(1, Ordering::SeqCst);
                barrier.wait().await;
            }
            result
        })
    }
}

struct TrapGuard(Arc<Traps>);

#[async_trait::async_trait]
impl mcp_pipeline::Guard for TrapGuard {
    async fn check(&self, _ctx: &ExecutionContext) -> Result<(), mcp_pipeline::Refusal> {
        assert!(
            !self.0.guard_panics.load(Ordering::SeqCst),
            "the guard trap"
        );
        Ok(())
    }
}

/// Moves the server's clock on while `charge_note`'s body runs, as a slow body would.
struct SlowCharge {
    traps: Arc<Traps>,
    clock: Arc<mcp_pipeline::FixedClock>,
}

impl Interceptor for SlowCharge {
    fn intercept<'a>(
        &'a self,
        _ctx: &'a ExecutionContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            self.clock
                .advance(self.traps.charge_takes_seconds.load(Ordering::SeqCst));
            next.run().await
        })
    }
}

// ===== the fixture =====

/// The notes product's tools, registered on `store`.
fn registry(
    store: &Arc<dyn Store>,
    incident: &Arc<AtomicBool>,
    traps: &Arc<Traps>,
    clock: &Arc<mcp_pipeline::FixedClock>,
) -> Registry {
    let mut registry = Registry::new();
    registry
        .register(
            ToolSpec::new(CreateNote)
                .requires(booking::rights::BOOKINGS_WRITE)
                .guard(TrapGuard(traps.clone()))
                .interceptor(IncidentMidFlight {
                    switches: identity::SwitchService::new(
                        store.clone(),
                        Arc::new(identity::StoreDirectory::new(
                            store.clone(),
                            booking::rights::for_role,
                            Arc::new(outside::SystemRandomness),
                        )),
                        outside::ClockAndRandomness::system(),
                    ),
                    armed: incident.clone(),
                })
                .interceptor(TrapInterceptor(traps.clone())),
        )
        .unwrap();
    registry
        .register(
            ToolSpec::new(UpdateNote {
                store: store.clone(),
            })
            .requires(booking::rights::BOOKINGS_WRITE),
        )
        .unwrap();
    registry
        .register(
            ToolSpec::new(GetNote {
                store: store.clone(),
            })
            .requires(booking::rights::BOOKINGS_READ),
        )
        .unwrap();
    registry
        .register(
            ToolSpec::new(ArchiveNotes {
                store: store.clone(),
            })
            .requires(booking::rights::BOOKINGS_WRITE),
        )
        .unwrap();
    registry
        .register(
            ToolSpec::new(SendNote {
                store: store.clone(),
            })
            .requires(booking::rights::CUSTOMERS_NOTIFY),
        )
        .unwrap();
    registry
        .register(
            ToolSpec::new(DeleteNote {
                store: store.clone(),
            })
            .requires(booking::rights::BOOKINGS_WRITE),
        )
        .unwrap();
    registry
        .register(
            ToolSpec::new(ChargeNote {
                store: store.clone(),
            })
            .requires(booking::rights::CUSTOMERS_NOTIFY)
            .approval_in_product()
            .interceptor(SlowCharge {
                traps: traps.clone(),
                clock: clock.clone(),
            }),
        )
        .unwrap();
    registry
        .register(
            ToolSpec::new(SlowRead)
                .requires(booking::rights::BOOKINGS_READ)
                .expensive(),
        )
        .unwrap();
    registry
        .register(
            ToolSpec::new(SlowWrite)
                .requires(booking::rights::BOOKINGS_WRITE)
                .deadline(std::time::Duration::from_secs(3)),
        )
        .unwrap();
    registry
}

/// Work a deployment runs after the answer (a read's slot release), held while
/// `hold` is set, so that a test decides when, or whether, it runs.
#[derive(Default)]
pub(crate) struct HeldReleases {
    pub(crate) hold: AtomicBool,
    work: std::sync::Mutex<Vec<BoxFuture<'static, ()>>>,
}

impl HeldReleases {
    fn defer(self: &Arc<Self>) -> mcp_pipeline::Defer {
        let held = Arc::clone(self);
        mcp_pipeline::Defer(Arc::new(move |work| {
            if held.hold.load(Ordering::SeqCst) {
                held.work.lock().unwrap().push(work);
            } else {
                tokio::spawn(work);
            }
        }))
    }

    /// Runs every held release now.
    pub(crate) async fn release_all(&self) {
        let work: Vec<_> = std::mem::take(&mut *self.work.lock().unwrap());
        futures_util::future::join_all(work).await;
    }
}

/// The notes tools on the real app over a fresh store, and `dan`'s connection to them.
pub(crate) struct Notes {
    pub(crate) app: app::App,
    /// Loses the answer of a committed transaction when armed.
    pub(crate) lost_answer: Arc<LostAnswer>,
    /// Set to flip the kill switch while the next `create_note` is in flight.
    pub(crate) incident: Arc<AtomicBool>,
    /// Misbehaving decorators of `create_note`, off until set.
    pub(crate) traps: Arc<Traps>,
    /// Slot releases after the answer, held while set.
    pub(crate) held: Arc<HeldReleases>,
    /// The server's clock, standing where the test puts it (it starts at the system's time,
    /// which the store's own expiry of items follows).
    pub(crate) clock: Arc<mcp_pipeline::FixedClock>,
    settings: app::Settings,
    store: Arc<dyn Store>,
    token: String,
    /// The id of `dan`'s connection, the one [`Notes::client`] uses.
    pub(crate) connection: String,
    _dir: Option<tempfile::TempDir>,
}

impl Notes {
    pub(crate) async fn on(backend: Backend, limits: Limits) -> Option<Notes> {
        Self::with_state_ttl(backend, limits, 600).await
    }

    pub(crate) async fn with_state_ttl(
        backend: Backend,
        limits: Limits,
        state_ttl_seconds: i64,
    ) -> Option<Notes> {
        let (inner, dir) = fresh(backend).await?;
        let lost_answer = Arc::new(LostAnswer {
            inner,
            armed: AtomicBool::new(false),
            skip: 0.into(),
        });
        let store: Arc<dyn Store> = lost_answer.clone();
        let incident = Arc::new(AtomicBool::new(false));
        let traps = Arc::new(Traps::default());
        let clock = Arc::new(mcp_pipeline::FixedClock::starting_now());
        let registry = registry(&store, &incident, &traps, &clock);
        let held = Arc::new(HeldReleases::default());
        let settings = app::Settings {
            clock: clock.clone(),
            backend: format!("{backend:?}"),
            limits,
            state_ttl_seconds,
            defer: Some(held.defer()),
            ..app::Settings::default()
        };
        let app = app::build_with(
            &settings,
            Arc::clone(&store),
            booking_product::Booking::shared(),
            registry,
        )
        .unwrap();
        app.directory
            .put_member(
                &store::TenantId::new("acme"),
                &store::MemberId::new("dan"),
                "dispatcher",
                true,
            )
            .await
            .unwrap();
        let (connection, token) = connect(
            &app,
            "acme",
            "dan",
            rights(&[
                booking::rights::BOOKINGS_READ,
                booking::rights::BOOKINGS_WRITE,
                booking::rights::CUSTOMERS_NOTIFY,
            ]),
            Toolset::Full,
            "gates",
        )
        .await;
        Some(Notes {
            app,
            lost_answer,
            incident,
            traps,
            held,
            clock,
            settings,
            store,
            token,
            connection,
            _dir: dir,
        })
    }

    /// A client of the same connection on a second instance of the server (its own process
    /// state, the same store), as Lambda may route a client's next call.
    pub(crate) fn second_instance(&self) -> TestClient {
        let registry = registry(&self.store, &self.incident, &self.traps, &self.clock);
        let settings = app::Settings {
            defer: None,
            ..self.settings.clone()
        };
        let app = app::build_with(
            &settings,
            Arc::clone(&self.store),
            booking_product::Booking::shared(),
            registry,
        )
        .unwrap();
        TestClient::in_process(app.http.clone())
            .with_header("authorization", &format!("Bearer {}", self.token))
    }

    /// The limits this world runs with.
    pub(crate) fn limits(&self) -> Limits {
        self.settings.limits
    }

    pub(crate) fn client(&self) -> TestClient {
        TestClient::in_process(self.app.http.clone())
            .with_header("authorization", &format!("Bearer {}", self.token))
    }

    pub(crate) async fn notes(&self) -> Vec<NoteView> {
        let page = self
            .app
            .store
            .query(Query::partition("acme#note"))
            .await
            .unwrap();
        page.items.iter().map(|(k, i)| view(&k.sk, i)).collect()
    }

    pub(crate) async fn outbox(&self) -> Vec<store::Item> {
        let page = self
            .app
            .store
            .query(Query::partition("acme#outbox"))
            .await
            .unwrap();
        page.items.into_iter().map(|(_, item)| item).collect()
    }

    pub(crate) async fn second_connection(&self) -> TestClient {
        let (_, token) = connect(
            &self.app,
            "acme",
            "dan",
            rights(&[
                booking::rights::BOOKINGS_READ,
                booking::rights::CUSTOMERS_NOTIFY,
            ]),
            Toolset::Full,
            "other",
        )
        .await;
        TestClient::in_process(self.app.http.clone())
            .with_header("authorization", &format!("Bearer {token}"))
    }

    /// The connection's audit rows, newest first: the action for an executed write,
    /// `action:outcome` for anything else (`send_note:prepared`, `send_note:rejected`).
    pub(crate) async fn audit_actions(&self) -> Vec<String> {
        crate::support::audit_rows(
            self.app.store.as_ref(),
            "acme",
            Some(self.connection.as_str()),
            100,
        )
        .await
        .into_iter()
        .inspect(|e| assert_eq!(e.channel.name(), "mcp"))
        .map(|e| match e.outcome.as_str() {
            "ok" => e.action,
            other => format!("{}:{other}", e.action),
        })
        .collect()
    }

    /// How each executed `action` of this connection was approved, newest first.
    pub(crate) async fn approvals_of(&self, action: &str) -> Vec<Option<String>> {
        crate::support::audit_rows(
            self.app.store.as_ref(),
            "acme",
            Some(self.connection.as_str()),
            100,
        )
        .await
        .into_iter()
        .filter(|e| e.action == action && e.outcome == "ok")
        .map(|e| e.approval)
        .collect()
    }

    /// The executed writes among [`Notes::audit_actions`].
    pub(crate) async fn executed(&self) -> Vec<String> {
        let rows = self.audit_actions().await;
        rows.into_iter().filter(|a| !a.contains(':')).collect()
    }
}
