//! `POST /admin/store` (ADR 48): a store message handed to the store object as it came, for
//! the CLI's `--edge-url` with the deployment's admin token (a secret of at least 32
//! characters; without one the route does not exist). Every call is logged (the operation's
//! kind and its outcome, never the message), and so is every refused bearer. An address whose
//! bearers were refused [`REFUSALS_ALLOWED`] times waits out the window, and the authenticated
//! calls of the whole deployment meet a ceiling per minute (`GATEHOUSE_ADMIN_CALLS_PER_MINUTE`,
//! [`DEFAULT_CALLS_PER_MINUTE`] by default) that administration, however large a workspace,
//! stays under. The counts live in the store object, so every isolate sees them.
//!
//! The test build (feature `test-routes`, turned on only by `tests/edge.sh`) opens the route
//! to every request and lets a request pick its store object; a release build has neither.

// The test build leaves the guard unused; the release build has no test route at all.
#![cfg_attr(feature = "test-routes", allow(dead_code, unused_imports))]

use sha2::{Digest as _, Sha256};
use store::{CmpOp, Condition, Key, Store as _, Update, UpdateAction, Value};
use worker::{Env, Method, Request, Response, Result};

use crate::assembly::{self, ADMIN_TOKEN, MIN_ADMIN_TOKEN_CHARS};
use crate::faults::Faults;
use crate::names::Names;
use crate::objects::{EXPORT_PATH, STATUS_PATH, STORE_BINDING, post_to_object};

/// Refused bearers from one address in one window before it waits the window out.
pub(crate) const REFUSALS_ALLOWED: i64 = 10;
/// The window of refused bearers.
const REFUSAL_WINDOW_SECONDS: i64 = 600;
/// Authenticated store messages per minute, over the whole deployment, by default.
pub(crate) const DEFAULT_CALLS_PER_MINUTE: i64 = 6000;
/// The variable that changes the ceiling.
const CALLS_PER_MINUTE: &str = "GATEHOUSE_ADMIN_CALLS_PER_MINUTE";

/// What an admin request asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    /// `POST /admin/store`: run a store message.
    Store,
    /// `POST /admin/switch`: how far the global switch's last flip has reached.
    SwitchStatus,
    /// `POST /admin/export`: a page of one object's items (a backup, or a move).
    Export,
    /// `POST /admin/import`: items, each written into its object where none is at its key.
    Import,
}

/// The route's answer to a request.
pub(crate) async fn handle(req: Request, env: &Env, ask: Ask) -> Result<Response> {
    if req.method() != Method::Post {
        return Response::error("not found", 404);
    }
    route(req, env, ask).await
}

/// The route of the test build: open to every request, its objects named after the request's
/// prefix (or the one object it pins).
#[cfg(feature = "test-routes")]
async fn route(mut req: Request, env: &Env, ask: Ask) -> Result<Response> {
    let names = assembly::names_of(&req);
    let faults = Faults::of(&req);
    let pinned = req
        .headers()
        .get(TEST_OBJECT_HEADER)
        .ok()
        .flatten()
        .filter(|name| assembly::is_plain_name(name));
    let message = req.text().await?;
    match (ask, pinned) {
        (Ask::Store, Some(object)) => forward_to_object(env, &object, message, &faults).await,
        (ask, _) => answer(env, ask, names, faults, message).await,
    }
}

/// The route of a release build: the admin token's, guarded and logged.
#[cfg(not(feature = "test-routes"))]
async fn route(mut req: Request, env: &Env, ask: Ask) -> Result<Response> {
    let Some(token) =
        crate::env::setting(env, ADMIN_TOKEN).filter(|t| t.len() >= MIN_ADMIN_TOKEN_CHARS)
    else {
        return Response::error("not found", 404);
    };
    let address = req
        .headers()
        .get("cf-connecting-ip")
        .ok()
        .flatten()
        .unwrap_or_else(|| "unknown".to_owned());
    let guard = Guard::new(env)?;
    if guard.refusals_exhausted(&address).await {
        tracing::warn!(%address, "admin route: refused, too many wrong bearers from this address");
        return Response::error("too many requests", 429);
    }
    if !bearer_matches(&req, &token) {
        guard.count_refusal(&address).await;
        tracing::warn!(%address, "admin route: a wrong or missing bearer was refused");
        return Response::error("not found", 404);
    }
    let message = req.text().await?;
    let kind = match ask {
        Ask::Store => operation(&message),
        Ask::SwitchStatus => "switch_status".to_owned(),
        Ask::Export => "export".to_owned(),
        Ask::Import => "import".to_owned(),
    };
    if !guard.count_call(calls_per_minute(env)).await {
        tracing::warn!(%address, operation = %kind, "admin route: refused, the ceiling of calls per minute is reached");
        return Response::error("too many requests", 429);
    }
    let answer = answer(env, ask, Names::default(), Faults::default(), message).await;
    let outcome = match &answer {
        Ok(r) if r.status_code() == 200 => "answered",
        Ok(_) => "refused",
        Err(_) => "failed",
    };
    tracing::info!(%address, operation = %kind, outcome, "admin route call");
    answer
}

/// The answer to an admin request on the objects `names` names.
async fn answer(
    env: &Env,
    ask: Ask,
    names: Names,
    faults: Faults,
    message: String,
) -> Result<Response> {
    match ask {
        Ask::Store => forward(env, names, faults, message).await,
        Ask::SwitchStatus => switch_status(env, &names).await,
        Ask::Export => export(env, &names, &message).await,
        Ask::Import => import(env, &names, &message).await,
    }
}

/// A page of one object's items.
async fn export(env: &Env, names: &Names, message: &str) -> Result<Response> {
    let from: store::remote::ExportFrom = match serde_json::from_str(message) {
        Ok(from) => from,
        Err(e) => return Response::error(format!("unreadable export request: {e}"), 400),
    };
    let Some(object) = names.named(&from.object) else {
        return Response::error(
            format!(
                "no object {:?}: name global, t:<workspace>, or store (a deployment's one object \
                 before ADR 51)",
                from.object
            ),
            400,
        );
    };
    let namespace = env.durable_object(STORE_BINDING)?;
    let ask =
        serde_json::to_string(&from.ask).map_err(|e| worker::Error::RustError(e.to_string()))?;
    let text = post_to_object(&namespace, &object, EXPORT_PATH, ask, &Faults::default()).await?;
    json_response(text)
}

/// Writes each item into its object where none is at its key.
async fn import(env: &Env, names: &Names, message: &str) -> Result<Response> {
    let rows: store::remote::ImportRows = match serde_json::from_str(message) {
        Ok(rows) => rows,
        Err(e) => return Response::error(format!("unreadable import request: {e}"), 400),
    };
    if rows.rows.len() > store::remote::MOST_IMPORTED {
        return Response::error(
            format!(
                "{} items in one import; send at most {} per request",
                rows.rows.len(),
                store::remote::MOST_IMPORTED
            ),
            400,
        );
    }
    let store = assembly::routed_store(env, names.clone(), Faults::default())?;
    match store::remote::import(&store, rows.rows).await {
        Ok(imported) => Response::from_json(&imported),
        Err(e) => Response::error(e.to_string(), 500),
    }
}

fn json_response(text: String) -> Result<Response> {
    let mut answer = Response::ok(text)?;
    answer
        .headers_mut()
        .set("content-type", "application/json")?;
    Ok(answer)
}

/// The global object's report of how far the switch's last flip has reached.
async fn switch_status(env: &Env, names: &Names) -> Result<Response> {
    let namespace = env.durable_object(STORE_BINDING)?;
    let text = post_to_object(
        &namespace,
        &names.global(),
        STATUS_PATH,
        String::new(),
        &Faults::default(),
    )
    .await?;
    let mut answer = Response::ok(text)?;
    answer
        .headers_mut()
        .set("content-type", "application/json")?;
    Ok(answer)
}

/// In the test build, a request may hand its message to exactly one object, unrouted (the
/// store conformance suite runs on a workspace object and on the global object so).
#[cfg(feature = "test-routes")]
const TEST_OBJECT_HEADER: &str = "x-gatehouse-test-object";

/// Runs `message` on the objects `names` names, each key in its own ([`store::routed`]).
async fn forward(env: &Env, names: Names, faults: Faults, message: String) -> Result<Response> {
    let outcome = match serde_json::from_str::<store::remote::StoreRequest>(&message) {
        Ok(request) => {
            let store = assembly::routed_store(env, names, faults)?;
            store::remote::apply(&store, request).await
        }
        Err(e) => Err(store::StoreError::Unavailable(format!(
            "unreadable store message: {e}"
        ))),
    };
    Response::ok(store::remote::encode_outcome(&outcome))
}

/// Hands `message` to the object named `object` as it came.
#[cfg(feature = "test-routes")]
async fn forward_to_object(
    env: &Env,
    object: &str,
    message: String,
    faults: &Faults,
) -> Result<Response> {
    let namespace = env.durable_object(STORE_BINDING)?;
    let answer =
        post_to_object(&namespace, object, crate::objects::OP_PATH, message, faults).await?;
    Response::ok(answer)
}

/// Whether the request's bearer is the admin token (compared as SHA-256 digests, so that the
/// comparison's time says nothing of the token).
fn bearer_matches(req: &Request, token: &str) -> bool {
    let given = req
        .headers()
        .get("authorization")
        .ok()
        .flatten()
        .unwrap_or_default();
    given
        .strip_prefix("Bearer ")
        .is_some_and(|given| Sha256::digest(given.as_bytes()) == Sha256::digest(token.as_bytes()))
}

/// The operation a store message names (`get`, `transact_write`, ...), for the log; the rest
/// of the message is never read here.
fn operation(message: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Op {
        op: String,
    }
    serde_json::from_str::<Op>(message)
        .map(|o| o.op)
        .ok()
        .filter(|o| o.len() <= 32 && o.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        .unwrap_or_else(|| "unreadable".to_owned())
}

/// The ceiling of authenticated calls per minute.
fn calls_per_minute(env: &Env) -> i64 {
    crate::env::setting(env, CALLS_PER_MINUTE)
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_CALLS_PER_MINUTE)
}

/// The route's counts, in the deployment's global object.
struct Guard {
    store: store::routed::RoutedStore,
    now: i64,
}

impl Guard {
    fn new(env: &Env) -> Result<Guard> {
        let now = outside::Clock::now(&outside::SystemClock);
        Ok(Guard {
            store: assembly::routed_store(env, Names::default(), Faults::default())?,
            now,
        })
    }

    fn refusal_key(&self, address: &str) -> Key {
        identity::keys::admin_refusals(address, self.now / REFUSAL_WINDOW_SECONDS)
    }

    async fn refusals_exhausted(&self, address: &str) -> bool {
        let item = self
            .store
            .get(&self.refusal_key(address))
            .await
            .ok()
            .flatten();
        item.and_then(|i| {
            i.get("count")
                .and_then(Value::as_n)
                .map(|n| n.as_str().to_owned())
        })
        .and_then(|n| n.parse::<i64>().ok())
        .is_some_and(|n| n >= REFUSALS_ALLOWED)
    }

    async fn count_refusal(&self, address: &str) {
        let add = Update::new(
            self.refusal_key(address),
            counting(self.now + REFUSAL_WINDOW_SECONDS),
        );
        if let Err(e) = self.store.update(add).await {
            tracing::error!(error = %e, "admin route: could not count a refused bearer");
        }
    }

    /// Counts an authenticated call, unless the minute's ceiling is reached (then `false`).
    async fn count_call(&self, ceiling: i64) -> bool {
        let under = Condition::NotExists("count".into()).or(Condition::Cmp(
            "count".into(),
            CmpOp::Lt,
            Value::n(ceiling),
        ));
        let add = Update::new(
            identity::keys::admin_calls(self.now / 60),
            counting(self.now + 120),
        )
        .when(under);
        match self.store.update(add).await {
            Ok(_) => true,
            Err(store::StoreError::ConditionFailed { .. }) => false,
            // The count could not be kept: the call is not refused for it.
            Err(e) => {
                tracing::error!(error = %e, "admin route: could not count a call");
                true
            }
        }
    }
}

/// One more, remembered until `expires`.
fn counting(expires: i64) -> Vec<UpdateAction> {
    vec![
        UpdateAction::Add("count".into(), store::Number::from(1_i64)),
        UpdateAction::Set(store::TTL_ATTRIBUTE.into(), Value::n(expires)),
    ]
}
