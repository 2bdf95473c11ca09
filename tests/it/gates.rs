//! The safety gates on example write tools (a small "notes" domain) through the real handler,
//! on SQLite and on the local DynamoDB server: replay, idempotency keys, duplicate guard,
//! versions, batches, the kill switch during a write, audit, rate buckets and the loop brake.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::future::BoxFuture;
use identity::{Actor, Channel};
use mcp_pipeline::{
    CallError, ClassLimits, EffectClass, ErrorKind, ExecutionContext, Handle, HandleKind,
    Interceptor, Limits, Next, Registry, Success, Tool, ToolContext, ToolError, ToolResult,
    ToolSpec, Toolset,
};
use mcp_test_client::TestClient;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use store::{Condition, Item, Key, Put, Query, Store, StoreError, Value as SV};

use crate::world::{Backend, fresh_store};

// ===== a store that loses the answer of a committed transaction =====

/// Commits, then reports a lost connection once when armed: a crash after commit, before the
/// response.
#[derive(Debug)]
struct LostAnswer {
    inner: Arc<dyn Store>,
    armed: AtomicBool,
    /// Transactions to let through first (the rate-limit admission is one).
    skip: std::sync::atomic::AtomicUsize,
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

struct NoteKind;
impl HandleKind for NoteKind {
    const PREFIX: &'static str = "not";
    const NOUN: &'static str = "note";
}

fn note_key(tenant: &str, id: &str) -> Key {
    Key::new(format!("{tenant}#note"), id)
}

fn title_key(tenant: &str, title: &str) -> Key {
    Key::new(format!("{tenant}#unique#note"), title.trim().to_lowercase())
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
struct NoteView {
    /// The note's handle.
    note: String,
    /// Content hash to send back with changes.
    version: String,
    title: String,
    body: String,
    archived: bool,
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
        .ok_or_else(|| ToolError::new(ErrorKind::NotFound, format!("No note {note}"), next).into())
}

fn tenant_of(ctx: &ToolContext) -> Result<String, CallError> {
    ctx.exec
        .caller
        .as_ref()
        .map(|c| c.tenant.clone())
        .ok_or_else(|| ToolError::new(ErrorKind::Forbidden, "No connection", "Authenticate").into())
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
    const EFFECT: EffectClass = EffectClass::SilentWrite;

    async fn call(
        &self,
        ctx: ToolContext,
        input: CreateNoteInput,
    ) -> Result<Success<NoteOutput>, CallError> {
        let tenant = tenant_of(&ctx)?;
        let separate = input.separate.unwrap_or(false);
        if separate && input.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
            return Err(ToolError::validation(
                "`separate` needs a `reason`",
                "Say why a second note with this title is needed",
            )
            .into());
        }
        let id = Handle::<NoteKind>::generate();
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
            ctx.writes.claim(title_key(&tenant, &input.title), &handle, move |holder| {
                ToolError::new(ErrorKind::Conflict, format!("A note titled {title:?} exists already: {holder}"), "Change that note instead, or create a separate one with a reason")
                    .next_call(format!("update_note {{\"note\": \"{holder}\", \"version\": \"...\", \"body\": \"...\"}}"))
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
    const EFFECT: EffectClass = EffectClass::SilentWrite;

    async fn call(
        &self,
        ctx: ToolContext,
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
            .into());
        };
        let current = view(input.note.id(), &item);
        if current.version != input.version {
            return Err(ToolError::new(
                ErrorKind::Conflict,
                "The note changed since you read it",
                "Read the current state below and apply your change to it",
            )
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
    const EFFECT: EffectClass = EffectClass::Read;

    async fn call(
        &self,
        ctx: ToolContext,
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
    const EFFECT: EffectClass = EffectClass::SilentWrite;

    async fn call(
        &self,
        ctx: ToolContext,
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
    const EFFECT: EffectClass = EffectClass::Notify;

    async fn call(
        &self,
        ctx: ToolContext,
        input: SendNoteInput,
    ) -> Result<Success<SendNoteOutput>, CallError> {
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
        let message_id = Handle::<NoteKind>::generate();
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
        ctx.writes.preview(
            format!("Send note {} to {}: \"{}\"", note.note, input.to, note.body),
            content.clone(),
        );
        Ok(Success::new(
            format!("Message to {}.", input.to),
            SendNoteOutput { message: content },
        ))
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
    const EFFECT: EffectClass = EffectClass::Delete;

    async fn call(
        &self,
        ctx: ToolContext,
        input: GetNoteInput,
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
            .into());
        };
        let note = view(input.note.id(), &item);
        ctx.writes
            .push(store::Delete::new(key).when(Condition::eq("version", SV::s(&note.version))));
        ctx.writes
            .push(store::Delete::new(title_key(&tenant, &note.title)));
        ctx.writes.touch(note.note.clone());
        ctx.writes.preview(
            format!("Delete note {} ({:?})", note.note, note.title),
            serde_json::to_value(&note).unwrap(),
        );
        Ok(Success::new(
            format!("Deleted note {}.", note.note),
            NoteOutput { note },
        ))
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
    const EFFECT: EffectClass = EffectClass::Read;

    async fn call(
        &self,
        _ctx: ToolContext,
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
    const EFFECT: EffectClass = EffectClass::SilentWrite;

    async fn call(
        &self,
        ctx: ToolContext,
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
    const EFFECT: EffectClass = EffectClass::Notify;

    async fn call(
        &self,
        ctx: ToolContext,
        input: GetNoteInput,
    ) -> Result<Success<NoteOutput>, CallError> {
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
        ctx.writes.preview(
            format!("Charge 49.00 EUR for note {}", note.note),
            json!({"amount": "49.00", "note": note.note}),
        );
        Ok(Success::new("Charged.", NoteOutput { note }))
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
                    tenant: "system".into(),
                    member: "oncall".into(),
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

struct Notes {
    app: app::App,
    lost_answer: Arc<LostAnswer>,
    incident: Arc<AtomicBool>,
    token: String,
    connection: String,
    _dir: Option<tempfile::TempDir>,
}

impl Notes {
    async fn on(backend: Backend, limits: Limits) -> Option<Notes> {
        Self::with_state_ttl(backend, limits, 600).await
    }

    async fn with_state_ttl(
        backend: Backend,
        limits: Limits,
        state_ttl_seconds: i64,
    ) -> Option<Notes> {
        let (inner, dir) = fresh_store(backend).await?;
        let lost_answer = Arc::new(LostAnswer {
            inner,
            armed: AtomicBool::new(false),
            skip: 0.into(),
        });
        let store: Arc<dyn Store> = lost_answer.clone();
        let incident = Arc::new(AtomicBool::new(false));
        let mut registry = Registry::new();
        registry
            .register(
                ToolSpec::new(CreateNote)
                    .requires(app::rights::BOOKINGS_WRITE)
                    .interceptor(IncidentMidFlight {
                        switches: identity::SwitchService::new(store.clone()),
                        armed: incident.clone(),
                    }),
            )
            .unwrap();
        registry
            .register(
                ToolSpec::new(UpdateNote {
                    store: store.clone(),
                })
                .requires(app::rights::BOOKINGS_WRITE),
            )
            .unwrap();
        registry
            .register(
                ToolSpec::new(GetNote {
                    store: store.clone(),
                })
                .requires(app::rights::BOOKINGS_READ),
            )
            .unwrap();
        registry
            .register(
                ToolSpec::new(ArchiveNotes {
                    store: store.clone(),
                })
                .requires(app::rights::BOOKINGS_WRITE),
            )
            .unwrap();
        registry
            .register(
                ToolSpec::new(SendNote {
                    store: store.clone(),
                })
                .requires(app::rights::CUSTOMERS_NOTIFY),
            )
            .unwrap();
        registry
            .register(
                ToolSpec::new(DeleteNote {
                    store: store.clone(),
                })
                .requires(app::rights::BOOKINGS_WRITE),
            )
            .unwrap();
        registry
            .register(
                ToolSpec::new(ChargeNote {
                    store: store.clone(),
                })
                .requires(app::rights::CUSTOMERS_NOTIFY)
                .approval_in_product(),
            )
            .unwrap();
        registry
            .register(
                ToolSpec::new(SlowRead)
                    .requires(app::rights::BOOKINGS_READ)
                    .expensive(),
            )
            .unwrap();
        registry
            .register(
                ToolSpec::new(SlowWrite)
                    .requires(app::rights::BOOKINGS_WRITE)
                    .deadline(std::time::Duration::from_secs(1)),
            )
            .unwrap();
        let settings = app::Settings {
            backend: format!("{backend:?}"),
            limits,
            state_ttl_seconds,
            ..app::Settings::default()
        };
        let app = app::build_with(&settings, store, registry).unwrap();
        app.directory
            .put_member("acme", "dan", "dispatcher", true)
            .await
            .unwrap();
        let actor = Actor {
            tenant: "acme".into(),
            member: "dan".into(),
            channel: Channel::Cli,
        };
        let rights = [
            app::rights::BOOKINGS_READ.to_owned(),
            app::rights::BOOKINGS_WRITE.to_owned(),
            app::rights::CUSTOMERS_NOTIFY.to_owned(),
        ]
        .into();
        let (connection, token) = app
            .connections
            .create_token(
                &actor,
                identity::NewConnection {
                    rights,
                    toolset: Toolset::Full,
                    client_name: "gates".into(),
                },
            )
            .await
            .unwrap();
        Some(Notes {
            app,
            lost_answer,
            incident,
            token,
            connection: connection.id,
            _dir: dir,
        })
    }

    fn client(&self) -> TestClient {
        TestClient::in_process(self.app.http.clone())
            .with_header("authorization", &format!("Bearer {}", self.token))
    }

    async fn notes(&self) -> Vec<NoteView> {
        let page = self
            .app
            .store
            .query(Query::partition("acme#note"))
            .await
            .unwrap();
        page.items.iter().map(|(k, i)| view(&k.sk, i)).collect()
    }

    async fn outbox(&self) -> Vec<store::Item> {
        let page = self
            .app
            .store
            .query(Query::partition("acme#outbox"))
            .await
            .unwrap();
        page.items.into_iter().map(|(_, item)| item).collect()
    }

    async fn second_connection(&self) -> TestClient {
        let actor = Actor {
            tenant: "acme".into(),
            member: "dan".into(),
            channel: Channel::Cli,
        };
        let rights = [
            app::rights::BOOKINGS_READ.to_owned(),
            app::rights::CUSTOMERS_NOTIFY.to_owned(),
        ]
        .into();
        let (_, token) = self
            .app
            .connections
            .create_token(
                &actor,
                identity::NewConnection {
                    rights,
                    toolset: Toolset::Full,
                    client_name: "other".into(),
                },
            )
            .await
            .unwrap();
        TestClient::in_process(self.app.http.clone())
            .with_header("authorization", &format!("Bearer {token}"))
    }

    async fn audit_actions(&self) -> Vec<String> {
        identity::audit::recent(self.app.store.as_ref(), "acme", Some(&self.connection), 100)
            .await
            .unwrap()
            .into_iter()
            .inspect(|e| assert_eq!(e.channel.name(), "mcp"))
            .map(|e| e.action)
            .collect()
    }
}

macro_rules! on_both {
    ($name:ident, $body:ident) => {
        on_both!($name, $body, Limits::default());
    };
    ($name:ident, $body:ident, $limits:expr) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                super::$body(Notes::on(Backend::Sqlite, $limits).await.unwrap()).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn dynamodb() {
                if let Some(notes) = Notes::on(Backend::Dynamodb, $limits).await {
                    super::$body(notes).await;
                }
            }
        }
    };
}

// ===== replay =====

async fn the_same_write_twice_runs_once(n: Notes) {
    let c = n.client();
    let args = json!({"title": "Gate code", "body": "4711"});
    let first = c.call_tool("create_note", args.clone()).await;
    assert!(!first.is_error(), "{}", first.text());
    assert!(first.structured().get("replayed").is_none());
    let second = c
        .call_tool("create_note", json!({"body": "4711", "title": "Gate code"}))
        .await;
    assert!(!second.is_error(), "{}", second.text());
    assert_eq!(second.structured()["replayed"], true);
    assert_eq!(
        second.structured()["note"],
        first.structured()["note"],
        "the first result, not a new note"
    );
    assert_eq!(n.notes().await.len(), 1);
    assert_eq!(
        n.audit_actions().await,
        ["create_note"],
        "exactly one audit row, channel mcp"
    );
}
on_both!(replay, the_same_write_twice_runs_once);

async fn twenty_identical_calls_in_parallel_write_once(n: Notes) {
    let client = Arc::new(n.client());
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            client
                .call_tool("create_note", json!({"title": "Race", "body": "same"}))
                .await
        }));
    }
    let mut notes_seen = std::collections::BTreeSet::new();
    for task in tasks {
        let call = task.await.unwrap();
        if call.is_error() {
            // While the first is still committing, a clear retryable answer is allowed.
            assert_eq!(call.structured()["retryable"], true, "{}", call.text());
        } else {
            notes_seen.insert(
                call.structured()["note"]["note"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
    }
    assert_eq!(
        notes_seen.len(),
        1,
        "every success names the same note: {notes_seen:?}"
    );
    assert_eq!(n.notes().await.len(), 1, "one execution");
    assert_eq!(n.audit_actions().await.len(), 1);
}
on_both!(
    parallel_replay,
    twenty_identical_calls_in_parallel_write_once,
    Limits::default()
);

async fn a_crash_after_commit_is_answered_by_the_replay(n: Notes) {
    let c = n.client();
    // The first transaction of the call is its rate-limit admission; the second is the write.
    n.lost_answer.skip.store(1, Ordering::SeqCst);
    n.lost_answer.armed.store(true, Ordering::SeqCst);
    let lost = c
        .call_tool("create_note", json!({"title": "Lost", "body": "answer"}))
        .await;
    assert!(lost.is_error(), "the caller saw a failure");
    let retry = c
        .call_tool("create_note", json!({"title": "Lost", "body": "answer"}))
        .await;
    assert!(!retry.is_error(), "{}", retry.text());
    assert_eq!(retry.structured()["replayed"], true);
    assert_eq!(n.notes().await.len(), 1, "one row");
    assert_eq!(n.audit_actions().await.len(), 1, "one audit row");
}
on_both!(
    crash_after_commit,
    a_crash_after_commit_is_answered_by_the_replay
);

async fn an_idempotency_key_is_bound_to_its_arguments(n: Notes) {
    let c = n.client();
    let first = c
        .call_tool(
            "create_note",
            json!({"title": "Keyed", "body": "v1", "idempotency_key": "k-1"}),
        )
        .await;
    assert!(!first.is_error(), "{}", first.text());
    let again = c
        .call_tool(
            "create_note",
            json!({"title": "Keyed", "body": "v1", "idempotency_key": "k-1"}),
        )
        .await;
    assert_eq!(again.structured()["replayed"], true);
    let other = c
        .call_tool(
            "create_note",
            json!({"title": "Keyed", "body": "v2", "idempotency_key": "k-1"}),
        )
        .await;
    assert!(other.is_error());
    assert_eq!(other.structured()["code"], "conflict");
    assert_eq!(other.structured()["differs_in"], json!(["body"]));
    assert!(other.text().contains("`body`"), "{}", other.text());
    assert_eq!(n.notes().await.len(), 1);
}
on_both!(
    idempotency_key,
    an_idempotency_key_is_bound_to_its_arguments
);

async fn a_replay_is_not_served_without_the_right(n: Notes) {
    let c = n.client();
    let args = json!({"title": "Rights", "body": "b"});
    assert!(!c.call_tool("create_note", args.clone()).await.is_error());
    n.app
        .directory
        .put_member("acme", "dan", "viewer", true)
        .await
        .unwrap();
    let call = c.call_tool("create_note", args).await;
    assert!(call.is_error());
    assert_eq!(call.structured()["hidden_by"], "rights");
    assert!(call.structured().get("replayed").is_none());
}
on_both!(replay_and_rights, a_replay_is_not_served_without_the_right);

// ===== duplicates, versions, batches =====

async fn a_second_create_with_the_same_key_names_the_first(n: Notes) {
    let c = n.client();
    let first = c
        .call_tool("create_note", json!({"title": "Door code", "body": "1234"}))
        .await;
    let handle = first.structured()["note"]["note"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = c
        .call_tool(
            "create_note",
            json!({"title": "  door CODE ", "body": "9999"}),
        )
        .await;
    assert!(second.is_error());
    assert_eq!(second.structured()["code"], "conflict");
    assert_eq!(second.structured()["existing"], handle.as_str());
    assert!(
        second.structured()["next_call"]
            .as_str()
            .unwrap()
            .starts_with(&format!("update_note {{\"note\": \"{handle}\""))
    );
    assert_eq!(n.notes().await.len(), 1, "one row");
    let no_reason = c
        .call_tool(
            "create_note",
            json!({"title": "Door code", "body": "9999", "separate": true}),
        )
        .await;
    assert_eq!(no_reason.structured()["code"], "validation");
    let separate = c
        .call_tool(
            "create_note",
            json!({"title": "Door code", "body": "9999", "separate": true, "reason": "back door"}),
        )
        .await;
    assert!(!separate.is_error(), "{}", separate.text());
    assert_eq!(n.notes().await.len(), 2);
}
on_both!(
    duplicates,
    a_second_create_with_the_same_key_names_the_first
);

async fn a_stale_version_is_a_conflict_and_changes_nothing(n: Notes) {
    let c = n.client();
    let created = c
        .call_tool("create_note", json!({"title": "Versioned", "body": "one"}))
        .await;
    let note = created.structured()["note"].clone();
    let (handle, v1) = (
        note["note"].as_str().unwrap(),
        note["version"].as_str().unwrap(),
    );
    // Someone else changes it.
    let other = c
        .call_tool(
            "update_note",
            json!({"note": handle, "version": v1, "body": "two"}),
        )
        .await;
    assert!(!other.is_error(), "{}", other.text());
    let stale = c
        .call_tool(
            "update_note",
            json!({"note": handle, "version": v1, "body": "three"}),
        )
        .await;
    assert!(stale.is_error());
    assert_eq!(stale.structured()["code"], "conflict");
    assert_eq!(
        stale.structured()["current"]["body"],
        "two",
        "the current state comes with the conflict"
    );
    let stored = n.notes().await;
    assert_eq!(stored[0].body, "two", "row unchanged by the stale update");
}
on_both!(versions, a_stale_version_is_a_conflict_and_changes_nothing);

async fn a_filter_wider_than_expected_executes_nothing(n: Notes) {
    let c = n.client();
    for i in 0..12 {
        let r = c
            .call_tool(
                "create_note",
                json!({"title": format!("Visit {i:02}"), "body": "x"}),
            )
            .await;
        assert!(!r.is_error(), "{}", r.text());
    }
    let call = c
        .call_tool(
            "archive_notes",
            json!({"title_prefix": "Visit", "expected_count": 3}),
        )
        .await;
    assert!(call.is_error());
    assert_eq!(
        call.structured()["matches"].as_array().unwrap().len(),
        12,
        "the matches are listed"
    );
    assert!(
        n.notes().await.iter().all(|note| !note.archived),
        "nothing changed"
    );
    let call = c
        .call_tool(
            "archive_notes",
            json!({"title_prefix": "Visit", "expected_count": 12}),
        )
        .await;
    assert!(!call.is_error(), "{}", call.text());
    assert!(n.notes().await.iter().all(|note| note.archived));
    let audit = identity::audit::recent(n.app.store.as_ref(), "acme", Some(&n.connection), 100)
        .await
        .unwrap();
    assert_eq!(audit[0].action, "archive_notes");
    assert_eq!(
        audit[0].ids.len(),
        12,
        "the audit row names every archived note"
    );
}
on_both!(batches, a_filter_wider_than_expected_executes_nothing);

// ===== switches, audit =====

async fn a_write_in_flight_when_the_switch_flips_does_not_commit(n: Notes) {
    let c = n.client();
    n.incident.store(true, Ordering::SeqCst);
    let call = c
        .call_tool(
            "create_note",
            json!({"title": "During incident", "body": "x"}),
        )
        .await;
    assert!(call.is_error());
    assert_eq!(call.structured()["switched_off"], true, "{}", call.text());
    assert!(n.notes().await.is_empty(), "no row");
    assert!(
        n.audit_actions().await.is_empty(),
        "no audit row for the tool"
    );
    let title_claim = n
        .app
        .store
        .get(&title_key("acme", "During incident"))
        .await
        .unwrap();
    assert!(title_claim.is_none(), "no uniqueness claim either");
    let r = c
        .request(
            "tools/call",
            json!({"name": "create_note", "arguments": {"title": "After", "body": "x"}}),
        )
        .await;
    assert_eq!(r.status, 503, "the next call is stopped at the door");
}
on_both!(
    switch_mid_flight,
    a_write_in_flight_when_the_switch_flips_does_not_commit
);

// ===== limits =====

const SMALL: ClassLimits = ClassLimits {
    read: 4,
    expensive_read: 4,
    write: 4,
    notify: 1,
    wake: 1,
};

async fn a_bucket_of_size_c_admits_exactly_c(n: Notes) {
    let client = Arc::new(n.client());
    let mut tasks = Vec::new();
    for i in 0..20 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            client
                .call_tool(
                    "create_note",
                    json!({"title": format!("Burst {i}"), "body": "x"}),
                )
                .await
        }));
    }
    let mut admitted = 0;
    let mut limited = 0;
    for task in tasks {
        let call = task.await.unwrap();
        if call.is_error() {
            assert_eq!(call.structured()["code"], "rate_limited", "{}", call.text());
            assert!(call.structured()["retry_after_seconds"].as_i64().unwrap() > 0);
            limited += 1;
        } else {
            admitted += 1;
        }
    }
    // The window may roll over during the burst; then a second window admits up to 4 more.
    assert!(admitted == 4 || admitted == 8, "admitted {admitted}");
    assert_eq!(admitted + limited, 20);
    assert_eq!(
        n.notes().await.len(),
        admitted,
        "limited calls changed nothing"
    );
}
on_both!(
    rate_limits,
    a_bucket_of_size_c_admits_exactly_c,
    Limits {
        window_seconds: 3600,
        per_connection: SMALL,
        per_tenant: SMALL,
        concurrency: false,
        ..Limits::default()
    }
);

async fn the_third_identical_failing_call_is_braked(n: Notes) {
    let c = n.client();
    let missing = json!({"note": "not_DoesNotExist0000000"});
    for _ in 0..2 {
        let call = c.call_tool("get_note", missing.clone()).await;
        assert_eq!(call.structured()["code"], "not_found");
    }
    let third = c.call_tool("get_note", missing).await;
    assert_eq!(third.structured()["loop_brake"], true, "{}", third.text());
    assert!(third.text().contains("ask the user"));
    let different = c
        .call_tool("get_note", json!({"note": "not_SomethingElse00000"}))
        .await;
    assert_eq!(
        different.structured()["code"],
        "not_found",
        "a changed call is not braked"
    );
}
on_both!(loop_brake, the_third_identical_failing_call_is_braked);

// ===== two steps =====

async fn new_note(c: &TestClient, title: &str, body: &str) -> String {
    let call = c
        .call_tool("create_note", json!({"title": title, "body": body}))
        .await;
    assert!(!call.is_error(), "{}", call.text());
    call.structured()["note"]["note"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn confirm_args(preview: &mcp_test_client::ToolCall) -> serde_json::Value {
    json!({
        "confirm_token": preview.structured()["confirm_token"],
        "confirm_summary": preview.structured()["confirm_summary"],
    })
}

async fn a_preview_alone_sends_nothing_and_confirmation_sends_once(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Arrival", "The technician arrives at 9:00.").await;
    let list = c.list_tools().await;
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"confirm_action") && names.contains(&"reject_action"),
        "{names:?}"
    );
    let preview = c
        .call_tool("send_note", json!({"note": note, "to": "ada@example.com"}))
        .await;
    assert!(!preview.is_error(), "{}", preview.text());
    let s = preview.structured();
    assert_eq!(s["status"], "PREVIEW");
    assert!(s["confirm_token"].as_str().unwrap().starts_with("cfm_"));
    assert_eq!(
        s["confirm_summary"],
        format!("Send note {note} to ada@example.com: \"The technician arrives at 9:00.\"")
    );
    assert!(
        s["next_steps"][0]
            .as_str()
            .unwrap()
            .contains("confirm_action")
    );
    assert!(n.outbox().await.is_empty(), "a preview sends nothing");
    assert_eq!(
        n.audit_actions().await,
        ["create_note"],
        "a preview changes nothing"
    );
    // A second identical call prepares afresh (never served from a replay cache).
    let again = c
        .call_tool("send_note", json!({"note": note, "to": "ada@example.com"}))
        .await;
    assert_ne!(again.structured()["confirm_token"], s["confirm_token"]);
    let done = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert!(!done.is_error(), "{}", done.text());
    assert_eq!(done.structured()["status"], "DONE");
    assert_eq!(n.outbox().await.len(), 1);
    assert_eq!(n.audit_actions().await, ["send_note", "create_note"]);
    let reused = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert!(reused.is_error());
    assert_eq!(reused.structured()["status"], "used");
    assert_eq!(n.outbox().await.len(), 1, "a reused token sends nothing");
}
on_both!(
    two_step,
    a_preview_alone_sends_nothing_and_confirmation_sends_once
);

async fn twenty_racing_confirmations_execute_once(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Race", "x").await;
    let preview = c
        .call_tool("send_note", json!({"note": note, "to": "ada@example.com"}))
        .await;
    let client = Arc::new(c);
    let args = confirm_args(&preview);
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (client, args) = (client.clone(), args.clone());
        tasks.push(tokio::spawn(async move {
            client.call_tool("confirm_action", args).await
        }));
    }
    let mut done = 0;
    for task in tasks {
        if !task.await.unwrap().is_error() {
            done += 1;
        }
    }
    assert_eq!(done, 1, "exactly one confirmation executes");
    assert_eq!(n.outbox().await.len(), 1);
}
on_both!(
    confirm_race,
    twenty_racing_confirmations_execute_once,
    Limits::default()
);

async fn bad_tokens_and_summaries_fail(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Tokens", "x").await;
    let preview = c
        .call_tool("send_note", json!({"note": note, "to": "ada@example.com"}))
        .await;
    let token = preview.structured()["confirm_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let wrong = c
        .call_tool(
            "confirm_action",
            json!({"confirm_token": token, "confirm_summary": "Send something else"}),
        )
        .await;
    assert_eq!(wrong.structured()["code"], "validation");
    assert_eq!(
        wrong.structured()["expected_summary"],
        preview.structured()["confirm_summary"]
    );
    let foreign = n
        .second_connection()
        .await
        .call_tool("confirm_action", confirm_args(&preview))
        .await;
    assert_eq!(
        foreign.structured()["code"],
        "not_found",
        "another connection's token names nothing"
    );
    let unknown = c
        .call_tool(
            "confirm_action",
            json!({"confirm_token": "cfm_nope", "confirm_summary": "x"}),
        )
        .await;
    assert_eq!(unknown.structured()["code"], "not_found");
    let extra = c
        .call_tool(
            "confirm_action",
            json!({"confirm_token": token, "confirm_summary": "x", "force": true}),
        )
        .await;
    assert_eq!(
        extra.structured()["allowed"],
        json!(["confirm_token", "confirm_summary"])
    );
    // Expired: the pending action's expiry passes.
    let key = Key::new("acme#pending", token.as_str());
    let past = store::Update::new(
        key,
        vec![store::UpdateAction::Set(
            store::TTL_ATTRIBUTE.into(),
            SV::n(store::engine::now_epoch_seconds() - 1),
        )],
    );
    n.app.store.update(past).await.unwrap();
    let expired = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert_eq!(expired.structured()["code"], "not_found");
    assert!(
        n.outbox().await.is_empty(),
        "nothing was sent by any failed confirmation"
    );
}
on_both!(bad_tokens, bad_tokens_and_summaries_fail);

async fn an_edit_between_preview_and_confirm_yields_a_new_preview(n: Notes) {
    let c = n.client();
    let created = c
        .call_tool(
            "create_note",
            json!({"title": "Edited", "body": "old text"}),
        )
        .await;
    let note = created.structured()["note"].clone();
    let handle = note["note"].as_str().unwrap();
    let preview = c
        .call_tool(
            "send_note",
            json!({"note": handle, "to": "ada@example.com"}),
        )
        .await;
    let edit = c
        .call_tool(
            "update_note",
            json!({"note": handle, "version": note["version"], "body": "new text"}),
        )
        .await;
    assert!(!edit.is_error(), "{}", edit.text());
    let changed = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert!(changed.is_error());
    assert_eq!(
        changed.structured()["changed_since_preview"],
        true,
        "{}",
        changed.text()
    );
    assert_eq!(changed.structured()["preview"]["body"], "new text");
    assert!(n.outbox().await.is_empty(), "nothing sent");
    let old = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert!(old.is_error(), "the old token is dead");
    let fresh = json!({"confirm_token": changed.structured()["confirm_token"], "confirm_summary": changed.structured()["confirm_summary"]});
    let done = c.call_tool("confirm_action", fresh).await;
    assert!(!done.is_error(), "{}", done.text());
    let outbox = n.outbox().await;
    assert_eq!(outbox.len(), 1);
    assert_eq!(
        outbox[0]["body"],
        SV::s("new text"),
        "what was approved is what went out"
    );
}
on_both!(
    changed_since_preview,
    an_edit_between_preview_and_confirm_yields_a_new_preview
);

async fn rejecting_kills_the_action_and_delete_waits_for_confirmation(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Doomed", "x").await;
    let preview = c
        .call_tool("send_note", json!({"note": note, "to": "ada@example.com"}))
        .await;
    let rejected = c
        .call_tool(
            "reject_action",
            json!({"confirm_token": preview.structured()["confirm_token"]}),
        )
        .await;
    assert_eq!(rejected.structured()["status"], "REJECTED");
    let late = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert_eq!(late.structured()["status"], "rejected");
    assert!(n.outbox().await.is_empty());
    let delete = c.call_tool("delete_note", json!({"note": note})).await;
    assert_eq!(delete.structured()["status"], "PREVIEW");
    assert_eq!(n.notes().await.len(), 1, "a delete preview deletes nothing");
    let done = c.call_tool("confirm_action", confirm_args(&delete)).await;
    assert!(!done.is_error(), "{}", done.text());
    assert!(n.notes().await.is_empty());
    assert_eq!(n.audit_actions().await[0], "delete_note");
}
on_both!(
    reject_and_delete,
    rejecting_kills_the_action_and_delete_waits_for_confirmation
);

// ===== approval in the client (elicitation) =====

fn with_elicitation(name: &str, arguments: serde_json::Value) -> serde_json::Value {
    json!({
        "name": name,
        "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}},
    })
}

fn approval_retry(arguments: serde_json::Value, state: &str, approve: bool) -> serde_json::Value {
    let mut params = with_elicitation("send_note", arguments);
    params["requestState"] = json!(state);
    params["inputResponses"] =
        json!({"approval": {"action": "accept", "content": {"approve": approve}}});
    params
}

async fn a_client_that_can_ask_gets_an_approval_request(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Approve me", "See you at 10.").await;
    let args = json!({"note": note, "to": "ada@example.com"});
    let asked = c
        .call_tool_with("send_note", with_elicitation("send_note", args.clone()))
        .await;
    assert_eq!(asked.result["resultType"], "input_required");
    let request = &asked.result["inputRequests"]["approval"];
    assert_eq!(request["method"], "elicitation/create");
    assert!(
        request["params"]["message"]
            .as_str()
            .unwrap()
            .contains("ada@example.com")
    );
    let state = asked.result["requestState"].as_str().unwrap().to_owned();
    assert!(n.outbox().await.is_empty(), "asking sends nothing");
    // Another connection cannot use the state; an altered state is refused.
    let other = n.second_connection().await;
    let r = other
        .request("tools/call", approval_retry(args.clone(), &state, true))
        .await;
    assert_eq!(r.error_code(), Some(-32602));
    let mut tampered = state.clone();
    tampered.insert(5, 'x');
    let r = c
        .request("tools/call", approval_retry(args.clone(), &tampered, true))
        .await;
    assert_eq!(r.error_code(), Some(-32602));
    assert!(n.outbox().await.is_empty());
    let done = c
        .call_tool_with("send_note", approval_retry(args.clone(), &state, true))
        .await;
    assert!(!done.is_error(), "{}", done.text());
    assert_eq!(done.structured()["status"], "DONE");
    assert_eq!(n.outbox().await.len(), 1);
    // The same approval replayed is refused: it was consumed in the store.
    let replayed = c
        .call_tool_with("send_note", approval_retry(args, &state, true))
        .await;
    assert!(replayed.is_error());
    assert_eq!(replayed.structured()["status"], "used");
    assert_eq!(n.outbox().await.len(), 1, "executed once");
}
on_both!(
    approval_in_client,
    a_client_that_can_ask_gets_an_approval_request
);

async fn a_declined_approval_does_nothing(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Decline me", "x").await;
    let args = json!({"note": note, "to": "ada@example.com"});
    let asked = c
        .call_tool_with("send_note", with_elicitation("send_note", args.clone()))
        .await;
    let state = asked.result["requestState"].as_str().unwrap().to_owned();
    let declined = c
        .call_tool_with("send_note", approval_retry(args.clone(), &state, false))
        .await;
    assert_eq!(declined.structured()["status"], "DECLINED");
    let late = c
        .call_tool_with("send_note", approval_retry(args, &state, true))
        .await;
    assert!(late.is_error());
    assert!(n.outbox().await.is_empty());
    // Steps that move money never use the client's elicitation nor confirm_action: only a
    // person in the product's page approves them.
    let charge = c
        .call_tool_with(
            "charge_note",
            with_elicitation("charge_note", json!({"note": note})),
        )
        .await;
    assert_eq!(
        charge.structured()["status"],
        "PREVIEW",
        "{}",
        charge.text()
    );
    let url = charge.structured()["approval_url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(url.ends_with(charge.structured()["confirm_token"].as_str().unwrap()));
    assert!(
        charge.structured()["next_steps"][0]
            .as_str()
            .unwrap()
            .contains(&url)
    );
    let confirm = json!({"confirm_token": charge.structured()["confirm_token"], "confirm_summary": charge.structured()["confirm_summary"]});
    let refused = c.call_tool("confirm_action", confirm).await;
    assert_eq!(
        refused.structured()["code"],
        "forbidden",
        "{}",
        refused.text()
    );
    assert_eq!(refused.structured()["approval_url"], url.as_str());
    assert!(n.outbox().await.is_empty(), "nothing was charged");
}
on_both!(approval_declined, a_declined_approval_does_nothing);

// ===== concurrency and deadlines =====

async fn two_slots_per_connection_one_kept_for_writes(n: Notes) {
    let client = Arc::new(n.client());
    let slow = |name: &'static str, tag: &str, millis: u64| {
        let client = client.clone();
        let args = json!({"millis": millis, "tag": tag});
        tokio::spawn(async move { client.call_tool(name, args).await })
    };
    // Wait until a slot is taken (not a fixed sleep: under load a call can take a while to
    // reach admission).
    let taken = |slot: &'static str| {
        let key = Key::new(format!("acme#slot#{}", n.connection), slot);
        let store = Arc::clone(&n.app.store);
        async move {
            for _ in 0..500 {
                if store.get(&key).await.unwrap().is_some() {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            panic!("slot {slot} was never taken");
        }
    };
    let first_read = slow("get_slowly", "r1", 1500);
    taken("0").await;
    // A second read finds the read slot taken.
    let second_read = client
        .call_tool("get_slowly", json!({"millis": 0, "tag": "r2"}))
        .await;
    assert_eq!(
        second_read.structured()["concurrency"],
        true,
        "{}",
        second_read.text()
    );
    // A write still gets the slot kept for writes...
    let write = slow("set_slowly", "w1", 800);
    taken("1").await;
    // ...and a third call finds both taken.
    let third = client
        .call_tool("set_slowly", json!({"millis": 0, "tag": "w2"}))
        .await;
    assert_eq!(third.structured()["concurrency"], true, "{}", third.text());
    assert!(!first_read.await.unwrap().is_error());
    assert!(!write.await.unwrap().is_error());
    // Admission runs beside the body: the refused write's body ran and planned its note, and
    // nothing of it committed.
    let notes: Vec<String> = n.notes().await.into_iter().map(|v| v.note).collect();
    assert_eq!(notes, ["not_sloww1"], "only the admitted write committed");
    // Both slots are given back when the calls end.
    let after = client
        .call_tool("get_slowly", json!({"millis": 0, "tag": "r3"}))
        .await;
    assert!(!after.is_error(), "{}", after.text());
}
on_both!(concurrency, two_slots_per_connection_one_kept_for_writes);

async fn a_body_past_its_deadline_commits_nothing(n: Notes) {
    let c = n.client();
    let call = c
        .call_tool("set_slowly", json!({"millis": 3000, "tag": "late"}))
        .await;
    assert!(call.is_error());
    assert_eq!(call.structured()["deadline_seconds"], 1, "{}", call.text());
    assert!(
        n.notes().await.is_empty(),
        "the planned write did not commit"
    );
    assert!(n.audit_actions().await.is_empty());
    let quick = c
        .call_tool("set_slowly", json!({"millis": 0, "tag": "quick"}))
        .await;
    assert!(
        !quick.is_error(),
        "the slot was given back: {}",
        quick.text()
    );
}
on_both!(deadline, a_body_past_its_deadline_commits_nothing);

async fn an_expired_approval_state_is_refused(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Expiring", "x").await;
    let args = json!({"note": note, "to": "ada@example.com"});
    let asked = c
        .call_tool_with("send_note", with_elicitation("send_note", args.clone()))
        .await;
    let state = asked.result["requestState"].as_str().unwrap().to_owned();
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let r = c
        .request("tools/call", approval_retry(args, &state, true))
        .await;
    assert_eq!(r.error_code(), Some(-32602), "{:?}", r.json());
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{:?}",
        r.json()
    );
    assert!(n.outbox().await.is_empty());
}

mod expired_state {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::an_expired_approval_state_is_refused(
            Notes::with_state_ttl(Backend::Sqlite, Limits::default(), 1)
                .await
                .unwrap(),
        )
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dynamodb() {
        if let Some(n) = Notes::with_state_ttl(Backend::Dynamodb, Limits::default(), 1).await {
            super::an_expired_approval_state_is_refused(n).await;
        }
    }
}

async fn one_object_is_notified_at_most_n_times_per_window(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Popular", "x").await;
    for round in 0..4 {
        let preview = c
            .call_tool(
                "send_note",
                json!({"note": note, "to": format!("c{round}@example.com")}),
            )
            .await;
        let done = c.call_tool("confirm_action", confirm_args(&preview)).await;
        if round < 3 {
            assert!(!done.is_error(), "{round}: {}", done.text());
        } else {
            assert_eq!(done.structured()["code"], "rate_limited", "{}", done.text());
            assert_eq!(done.structured()["object"], note.as_str());
        }
    }
    assert_eq!(n.outbox().await.len(), 3, "the fourth message was not sent");
}
on_both!(
    notify_per_object,
    one_object_is_notified_at_most_n_times_per_window
);

async fn expensive_reads_have_their_own_smaller_bucket(n: Notes) {
    let c = n.client();
    for i in 0..2 {
        let r = c
            .call_tool("get_slowly", json!({"millis": 0, "tag": format!("e{i}")}))
            .await;
        assert!(!r.is_error(), "{}", r.text());
    }
    let third = c
        .call_tool("get_slowly", json!({"millis": 0, "tag": "e2"}))
        .await;
    assert_eq!(
        third.structured()["code"],
        "rate_limited",
        "{}",
        third.text()
    );
    // Cheap reads still have room.
    let cheap = c
        .call_tool("get_note", json!({"note": "not_Nope000000000000000"}))
        .await;
    assert_eq!(cheap.structured()["code"], "not_found");
}
on_both!(
    expensive_reads,
    expensive_reads_have_their_own_smaller_bucket,
    Limits {
        window_seconds: 3600,
        per_connection: ClassLimits {
            read: 10,
            expensive_read: 2,
            write: 10,
            notify: 1,
            wake: 1
        },
        per_tenant: ClassLimits {
            read: 10,
            expensive_read: 2,
            write: 10,
            notify: 1,
            wake: 1
        },
        ..Limits::default()
    }
);

/// A tenant limit past what one item takes (DynamoDB: about 1,000 writes a second per item)
/// is counted over shards, each call in one of them, none lost.
async fn a_hot_tenant_bucket_is_sharded(n: Notes) {
    let c = n.client();
    // 16 reads: under the connection's own limit; all in one of four shards by chance once
    // in about a billion runs.
    for i in 0..16 {
        let call = c
            .call_tool("get_slowly", json!({"millis": 0, "tag": format!("s{i}")}))
            .await;
        assert!(!call.is_error(), "{}", call.text());
    }
    // Each shard is its own partition (`<tenant>#rate#tenant~<n>`), as is the unsharded
    // bucket (`<tenant>#rate#tenant`).
    let mut shards = std::collections::BTreeMap::new();
    let partitions =
        std::iter::once("tenant".to_owned()).chain((0..4).map(|s| format!("tenant~{s}")));
    for who in partitions {
        let page = n
            .app
            .store
            .query(Query::partition(format!("acme#rate#{who}")))
            .await
            .unwrap();
        for (_, item) in &page.items {
            let count = match item.get("count") {
                Some(SV::N(n)) => n.to_string().parse::<u64>().unwrap(),
                other => panic!("a count: {other:?}"),
            };
            *shards.entry(who.clone()).or_insert(0) += count;
        }
    }
    assert!(
        shards.keys().all(|who| who.starts_with("tenant~")),
        "no unsharded tenant bucket: {shards:?}"
    );
    assert!(shards.len() >= 2, "calls spread over shards: {shards:?}");
    assert_eq!(shards.values().sum::<u64>(), 16, "every call counted once");
}
on_both!(
    hot_tenant,
    a_hot_tenant_bucket_is_sharded,
    Limits {
        per_tenant: ClassLimits {
            read: 60_000,
            expensive_read: 60_000,
            ..Limits::default().per_tenant
        },
        ..Limits::default()
    }
);
