//! The Durable Object that holds a part of the store: one per workspace and one global object
//! (ADR 51, names in [`crate::names`]); every store message is one request to one of them. Its
//! SQLite database is strongly consistent and the object runs one request at a time while the
//! request does not await; [`store::remote::serve`] never awaits, so each operation (a
//! transaction included) reads, checks and writes alone, and its writes commit together or,
//! inside `transactionSync`, not at all (ADR 20). The copy of the global switch a workspace
//! object keeps, and the global object's fan-out of it, are [`crate::mirror`]'s.

use std::collections::BTreeMap;

use mcp_pipeline::Clock as _;
use store::StoreError;
use store::remote::{StoreAnswer, StoreRequest};
use worker::{DurableObject, Env, Request, Response, Result, State, durable_object};

use crate::faults::{self, Faults};
use crate::mirror::{self, News};
use crate::names::{Names, Role};
use crate::objects::{
    COPY_PATH, EXPORT_PATH, NEWS_PATH, OBJECT_HEADER, STATUS_PATH, STORE_BINDING, post_to_object,
};
use crate::sql_rows::{self, SqlRows};

/// How often the object deletes expired items (they are absent to every read before that).
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60 * 60);
/// The store's Durable Object (class `StoreObject`, binding `STORE`).
#[durable_object]
pub struct StoreObject {
    state: State,
    env: Env,
    /// Whether this instance has seen the alarm set: asked once per instance, not on every
    /// write (an object runs one request at a time, so a `Cell` is enough).
    alarm_set: std::cell::Cell<bool>,
    /// When this workspace object last heard from the global object, as kept in its records
    /// (read once per instance; every change goes through this instance).
    heard_at: std::cell::Cell<Option<i64>>,
    /// Whether the object's tables exist: made by its first write, so that an object only ever
    /// read (one a forged token's locator names) stores nothing.
    tables: std::cell::Cell<bool>,
}

impl std::fmt::Debug for StoreObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreObject")
    }
}

type Outcome = std::result::Result<StoreAnswer, StoreError>;

/// How the object serves one store message.
struct Serving {
    /// A workspace object that could not confirm the global switch reads it as on.
    switch_unconfirmed: bool,
    /// The global object numbers a write of the switch in the same transaction.
    numbers_switch_write: bool,
}

impl StoreObject {
    /// Runs `work` inside `storage.transactionSync` ([`crate::transaction`]).
    fn in_transaction<T: 'static>(
        &self,
        work: impl FnOnce(&worker::SqlStorage) -> std::result::Result<T, StoreError> + 'static,
    ) -> std::result::Result<T, StoreError> {
        crate::transaction::run(&self.state.storage(), work)
    }

    /// Makes the object's tables if this is its first write.
    fn ensure_tables(&self) -> std::result::Result<(), StoreError> {
        if !self.tables.get() {
            sql_rows::create(&self.state.storage().sql())
                .map_err(|e| StoreError::Unavailable(format!("the object's tables: {e}")))?;
            self.tables.set(true);
        }
        Ok(())
    }

    /// Runs one store message.
    fn serve(&self, request: StoreRequest, serving: Serving) -> Outcome {
        let writes_switch = serving.numbers_switch_write
            && store::remote::writes_key(&request, &mirror::switch_key());
        let switch_override = serving.switch_unconfirmed.then(mirror::unconfirmed);
        crate::transaction::serve(
            &self.state.storage(),
            request,
            switch_override,
            move |sql| {
                if writes_switch {
                    mirror::written(sql)?;
                }
                Ok(())
            },
        )
    }

    /// A store message to this object, named `name`.
    async fn store_message(&self, req: &Request, name: &str, text: &str) -> Outcome {
        let request = crate::transaction::parse(text)?;
        let writes = store::remote::writes(&request);
        if !writes && !self.tables.get() {
            // Never written: nothing to read, and nothing to ask the global object (objects a
            // forged token's locator names stay like this: unnoted, storing nothing).
            return store::remote::serve(&mut BTreeMap::new(), request, outside_now());
        }
        self.ensure_tables()?;
        let touches_switch = store::remote::keys(&request)
            .into_iter()
            .any(|k| *k == mirror::switch_key());
        let mut serving = Serving {
            switch_unconfirmed: false,
            numbers_switch_write: false,
        };
        let role = Role::of(name);
        match &role {
            Role::Workspace(names) if touches_switch => {
                serving.switch_unconfirmed = !self.switch_confirmed(req, name, names).await;
            }
            Role::Workspace(_) => {}
            Role::Global => serving.numbers_switch_write = true,
        }
        let queues = crate::deliveries::queues(&request);
        let outcome = self.serve(request, serving);
        let sweep_now = faults::number(req, faults::SWEEP_NOW).is_some();
        if writes && (sweep_now || (queues && outcome.is_ok())) {
            // A message was queued: the alarm delivers it now.
            self.set_alarm_in(0).await;
        } else if writes {
            self.keep_alarm_set(role == Role::Global).await;
        }
        outcome
    }

    /// Whether a workspace object's copy of the switch is confirmed: heard from the global
    /// object within the bound, or asked now.
    async fn switch_confirmed(&self, req: &Request, name: &str, names: &Names) -> bool {
        let now = outside_now();
        let bound = faults::number(req, faults::BOUND_SECONDS).unwrap_or(mirror::BOUND_SECONDS);
        let heard_at = match self.heard_at.get() {
            Some(at) => Some(at),
            None => mirror::heard_at(&self.state.storage().sql()).unwrap_or(None),
        };
        self.heard_at.set(heard_at);
        if heard_at.is_some_and(|at| now < at + bound) {
            return true;
        }
        if faults::number(req, faults::GLOBAL_UNREACHABLE).is_some() {
            return false;
        }
        match self.ask_global(name, names).await {
            Ok(news) => self.take(&news).is_ok(),
            Err(e) => {
                tracing::warn!(error = %e, "a workspace object could not reach the global object");
                false
            }
        }
    }

    /// Asks the global object for the switch; it notes that this object (`name`) keeps a copy.
    async fn ask_global(&self, name: &str, names: &Names) -> Result<News> {
        let namespace = self.env.durable_object(STORE_BINDING)?;
        let text = post_to_object(
            &namespace,
            &names.global(),
            NEWS_PATH,
            name.to_owned(),
            &Faults::default(),
        )
        .await?;
        serde_json::from_str(&text).map_err(|e| worker::Error::RustError(e.to_string()))
    }

    fn take(&self, news: &News) -> std::result::Result<(), StoreError> {
        self.ensure_tables()?;
        let news = news.clone();
        let now = outside_now();
        self.in_transaction(move |sql| {
            let mut rows = SqlRows {
                sql,
                switch_override: None,
            };
            mirror::take(&mut rows, &news, now)
        })?;
        self.heard_at.set(Some(now));
        Ok(())
    }

    /// Sets the alarm when none is set (one alarm at a time per object): it sweeps expired
    /// items and, in the global object, runs the switch's fan-out (then at once). Once this
    /// instance knows one is set, writes no longer ask.
    async fn keep_alarm_set(&self, global: bool) {
        // Only the global object fans the switch out.
        let fan_out_due = global
            && mirror::fan_out(&self.state.storage().sql())
                .ok()
                .flatten()
                .and_then(|f| f.next_run_in())
                .is_some();
        if fan_out_due {
            self.set_alarm_in(0).await;
            return;
        }
        if self.alarm_set.get() {
            return;
        }
        let storage = self.state.storage();
        let set = match storage.get_alarm().await {
            Ok(Some(_)) => true,
            Ok(None) => storage.set_alarm(SWEEP_EVERY).await.is_ok(),
            Err(_) => false,
        };
        self.alarm_set.set(set);
    }

    async fn set_alarm_in(&self, seconds: i64) {
        // An offset from now (`worker` reads a bare number as one, not as a time).
        let offset = std::time::Duration::from_secs(seconds.max(0).unsigned_abs());
        let set = self.state.storage().set_alarm(offset).await.is_ok();
        self.alarm_set.set(set);
    }

    /// One run of the global object's fan-out; seconds until the next, if there is more.
    async fn fan_out_step(&self) -> std::result::Result<Option<i64>, StoreError> {
        let sql = self.state.storage().sql();
        let Some(mut fan_out) = mirror::fan_out(&sql)? else {
            return Ok(None);
        };
        if fan_out.done() {
            return Ok(None);
        }
        let listed = !fan_out.listed_all;
        let names = if listed {
            mirror::copies_after(&sql, fan_out.cursor.as_deref())?
        } else {
            fan_out
                .stragglers
                .iter()
                .take(mirror::BATCH)
                .cloned()
                .collect()
        };
        let news = mirror::news(&SqlRows {
            sql: &sql,
            switch_override: None,
        })?;
        let told =
            futures_util::future::join_all(names.iter().map(|name| self.tell(name, &news))).await;
        // A later write of the switch started its own fan-out meanwhile: this one is over.
        if mirror::fan_out(&sql)?.is_none_or(|now| now.version != fan_out.version) {
            return Ok(Some(0));
        }
        let told: Vec<(String, bool)> = names.into_iter().zip(told).collect();
        fan_out.record(&told, listed);
        mirror::save(&sql, &fan_out)?;
        Ok(fan_out.next_run_in())
    }

    /// Tells the workspace object `name` the switch; whether it took it.
    async fn tell(&self, name: &str, news: &News) -> bool {
        let Ok(message) = serde_json::to_string(news) else {
            return false;
        };
        let Ok(namespace) = self.env.durable_object(STORE_BINDING) else {
            return false;
        };
        let answer = post_to_object(&namespace, name, COPY_PATH, message, &Faults::default()).await;
        matches!(answer.as_deref(), Ok("taken"))
    }

    /// The global object's news of the switch for the object `asker`, noted as keeping a copy.
    fn news_for(&self, asker: &str) -> std::result::Result<News, StoreError> {
        self.ensure_tables()?;
        let asker = asker.to_owned();
        self.in_transaction(move |sql| {
            if !asker.is_empty() {
                mirror::note_copy(sql, &asker)?;
            }
            mirror::news(&SqlRows {
                sql,
                switch_override: None,
            })
        })
    }

    /// The global object's report of its fan-out.
    fn status(&self) -> std::result::Result<mirror::Status, StoreError> {
        let sql = self.state.storage().sql();
        let fan_out = mirror::fan_out(&sql)?.unwrap_or_default();
        Ok(mirror::Status::of(fan_out, mirror::copies(&sql)?))
    }

    /// Holds the object's input for the milliseconds a test asks (test build only).
    async fn hold_if_asked(&self, req: &Request) {
        let Some(ms) = faults::number(req, faults::HOLD_MS).filter(|ms| *ms > 0) else {
            return;
        };
        let hold = async move {
            worker::Delay::from(std::time::Duration::from_millis(ms as u64)).await;
            Ok(())
        };
        if let Err(e) = self.state.block_concurrency_while(hold).await {
            tracing::warn!(error = %e, "the test's hold of a store object failed");
        }
    }
}

/// The host's time in seconds (`Date.now()`).
fn outside_now() -> i64 {
    mcp_pipeline::SystemClock.now()
}

fn answer_json<T: serde::Serialize>(value: std::result::Result<T, StoreError>) -> Result<Response> {
    match value {
        Ok(value) => Response::from_json(&value),
        Err(e) => Response::error(e.to_string(), 500),
    }
}

impl DurableObject for StoreObject {
    fn new(state: State, env: Env) -> Self {
        let tables = sql_rows::exist(&state.storage().sql()).unwrap_or_else(|e| {
            worker::console_error!("store object: could not read its schema: {e}");
            false
        });
        StoreObject {
            state,
            env,
            alarm_set: std::cell::Cell::new(false),
            heard_at: std::cell::Cell::new(None),
            tables: std::cell::Cell::new(tables),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let name = req
            .headers()
            .get(OBJECT_HEADER)
            .ok()
            .flatten()
            .unwrap_or_default();
        self.hold_if_asked(&req).await;
        let text = req.text().await?;
        match req.path().as_str() {
            NEWS_PATH => answer_json(self.news_for(&text)),
            COPY_PATH => match serde_json::from_str::<News>(&text) {
                Ok(news) => match self.take(&news) {
                    Ok(()) => Response::ok("taken"),
                    Err(e) => Response::error(e.to_string(), 500),
                },
                Err(e) => Response::error(format!("unreadable news: {e}"), 400),
            },
            STATUS_PATH if !self.tables.get() => {
                answer_json(Ok(mirror::Status::of(mirror::FanOut::default(), 0)))
            }
            STATUS_PATH => answer_json(self.status()),
            EXPORT_PATH if !self.tables.get() => {
                answer_json(Ok(store::remote::ExportPage::default()))
            }
            EXPORT_PATH => match serde_json::from_str::<store::remote::ExportAsk>(&text) {
                Ok(ask) => answer_json(sql_rows::export(&self.state.storage().sql(), &ask)),
                Err(e) => Response::error(format!("unreadable export ask: {e}"), 400),
            },
            _ => {
                let outcome = self.store_message(&req, &name, &text).await;
                Response::ok(store::remote::encode_outcome(&outcome))
            }
        }
    }

    async fn alarm(&self) -> Result<Response> {
        crate::logs::install();
        // The alarm fired and is gone.
        self.alarm_set.set(false);
        let deleted = sql_rows::delete_expired(&self.state.storage().sql(), outside_now())?;
        if deleted > 0 {
            worker::console_log!("store object: deleted {deleted} expired items");
        }
        let fan_out = self.fan_out_step().await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "the switch's fan-out failed; retried in a minute");
            Some(mirror::BOUND_SECONDS)
        });
        let deliveries = if self.tables.get() {
            crate::deliveries::sweep(self.state.storage(), &self.env).await
        } else {
            None
        };
        if let Some(seconds) = fan_out.into_iter().chain(deliveries).min() {
            self.set_alarm_in(seconds).await;
        }
        Response::ok("done")
    }
}
