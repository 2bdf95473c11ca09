//! The Durable Object that holds the store: every store message of the deployment is one
//! request to it. Its SQLite database is strongly consistent and the object runs one request
//! at a time while the request does not await; [`store::remote::serve`] never awaits, so each
//! operation (a transaction included) reads, checks and writes alone, and its writes commit
//! together or, inside `transactionSync`, not at all (ADR 20).

use std::cell::RefCell;
use std::rc::Rc;

use mcp_pipeline::Clock as _;
use store::StoreError;
use store::remote::{StoreAnswer, StoreRequest};
use wasm_bindgen::JsCast as _;
use wasm_bindgen::prelude::{Closure, JsValue};
use worker::{DurableObject, Env, Request, Response, Result, State, durable_object};

use crate::sql_rows::{self, SqlRows};

/// How often the object deletes expired items (they are absent to every read before that).
const SWEEP_EVERY_MS: i64 = 60 * 60 * 1000;

/// The store's Durable Object (class `StoreObject`, binding `STORE`).
#[durable_object]
pub struct StoreObject {
    state: State,
    /// Whether this instance has seen the sweep alarm set: asked once per instance, not on
    /// every write (an object runs one request at a time, so a `Cell` is enough).
    sweep_scheduled: std::cell::Cell<bool>,
}

impl std::fmt::Debug for StoreObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreObject")
    }
}

type Outcome = std::result::Result<StoreAnswer, StoreError>;

impl StoreObject {
    /// Runs one request inside `storage.transactionSync`: any failure while writing throws, and
    /// the runtime rolls every write of the request back.
    fn serve(&self, request: StoreRequest) -> Outcome {
        let sql = self.state.storage().sql();
        let now = outside_now();
        let outcome: Rc<RefCell<Option<Outcome>>> = Rc::default();
        let slot = Rc::clone(&outcome);
        let work = Closure::once_into_js(move || -> std::result::Result<JsValue, JsValue> {
            let result = store::remote::serve(&mut SqlRows { sql: &sql }, request, now);
            let failed_writing = matches!(&result, Err(StoreError::Unavailable(_)));
            let message = format!("{result:?}");
            *slot.borrow_mut() = Some(result);
            if failed_writing {
                // Throwing rolls back what this request wrote before the failure.
                return Err(JsValue::from_str(&message));
            }
            Ok(JsValue::UNDEFINED)
        });
        let handle = self.state.storage();
        let storage: &JsValue = handle.as_raw().as_ref();
        let run = js_sys::Reflect::get(storage, &JsValue::from_str("transactionSync"))
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
        let Some(run) = run else {
            return Err(StoreError::Unavailable(
                "storage.transactionSync is missing".into(),
            ));
        };
        let thrown = run.call1(storage, &work).err();
        let result = outcome.borrow_mut().take();
        match (result, thrown) {
            (Some(result), _) => result,
            (None, thrown) => Err(StoreError::Unavailable(format!(
                "the store transaction failed: {thrown:?}"
            ))),
        }
    }
}

/// The host's time in seconds (`Date.now()`).
fn outside_now() -> i64 {
    mcp_pipeline::SystemClock.now()
}

impl DurableObject for StoreObject {
    fn new(state: State, _env: Env) -> Self {
        if let Err(e) = sql_rows::create(&state.storage().sql()) {
            worker::console_error!("store object: could not create its table: {e}");
        }
        StoreObject {
            state,
            sweep_scheduled: std::cell::Cell::new(false),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let text = req.text().await?;
        let outcome = match serde_json::from_str::<StoreRequest>(&text) {
            Ok(request) => {
                let writes = !matches!(
                    request,
                    StoreRequest::Get(_) | StoreRequest::BatchGet(_) | StoreRequest::Query(_)
                );
                let outcome = self.serve(request);
                if writes {
                    self.schedule_sweep().await;
                }
                outcome
            }
            Err(e) => Err(StoreError::Unavailable(format!(
                "unreadable store message: {e}"
            ))),
        };
        Response::ok(store::remote::encode_outcome(&outcome))
    }

    async fn alarm(&self) -> Result<Response> {
        // The alarm fired and is gone: the next write sets the next one.
        self.sweep_scheduled.set(false);
        let deleted = sql_rows::delete_expired(&self.state.storage().sql(), outside_now())?;
        worker::console_log!("store object: deleted {deleted} expired items");
        Response::ok("swept")
    }
}

impl StoreObject {
    /// Sets the sweep alarm when none is set (one alarm at a time per object); once this
    /// instance knows one is set, writes no longer ask.
    async fn schedule_sweep(&self) {
        if self.sweep_scheduled.get() {
            return;
        }
        let storage = self.state.storage();
        let set = match storage.get_alarm().await {
            Ok(Some(_)) => true,
            Ok(None) => {
                let at = worker::Date::now().as_millis() as i64 + SWEEP_EVERY_MS;
                storage.set_alarm(at).await.is_ok()
            }
            Err(_) => false,
        };
        self.sweep_scheduled.set(set);
    }
}
